//! The typed check of `gantry k8s` output: every document parsed into the k8s-openapi object
//! its `kind` names (an unknown kind, a wrong `apiVersion` or a field of the wrong type fails,
//! naming the document and the field's path; a misspelt field name is ignored, as
//! k8s-openapi ignores unknown fields), then the shape ShenYu #3900 needs checked on them:
//! every gateway names every admin pod, behind a headless Service.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, Service};
use model::SyncMode;
use serde::Deserialize as _;
use serde::de::DeserializeOwned;

use super::render;

/// One document of the output, typed.
#[derive(Debug)]
enum Object {
    StatefulSet(Box<StatefulSet>),
    Deployment(Box<Deployment>),
    Service(Box<Service>),
    Job(Box<Job>),
}

/// `value` as a `T`, or where and why not.
fn typed<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| e.to_string())
}

/// Every document of `text`, typed by its `kind`, or the first that is not valid.
fn check(text: &str) -> Result<Vec<Object>, String> {
    let mut objects = Vec::new();
    for (i, document) in serde_norway::Deserializer::from_str(text).enumerate() {
        let value = serde_json::Value::deserialize(document)
            .map_err(|e| format!("document {i}: not YAML: {e}"))?;
        let kind = value["kind"].as_str().unwrap_or_default().to_owned();
        let object = match kind.as_str() {
            "StatefulSet" => typed(value).map(|o| Object::StatefulSet(Box::new(o))),
            "Deployment" => typed(value).map(|o| Object::Deployment(Box::new(o))),
            "Service" => typed(value).map(|o| Object::Service(Box::new(o))),
            "Job" => typed(value).map(|o| Object::Job(Box::new(o))),
            other => Err(format!("unknown kind `{other}`")),
        };
        objects.push(object.map_err(|e| format!("document {i} ({kind}): {e}"))?);
    }
    Ok(objects)
}

/// The value after `flag` in `container`'s arguments.
fn flag<'a>(container: &'a Container, flag: &str) -> Option<&'a str> {
    let args = container.args.as_deref().unwrap_or_default();
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).map(String::as_str)
}

/// Checks the #3900 shape on `objects`: there are gateways (Deployments whose container
/// takes `--admin-url`), and each one's admin list is `http://<set>-<i>.<service>:<port>`
/// for every pod of the StatefulSet `<set>` named by `<service>`, in order, where
/// `<service>` is a headless Service publishing pods before they are ready, selecting that
/// StatefulSet's pods on `<port>`.
fn admins_are_named_pods(objects: &[Object]) -> Result<(), String> {
    let gateways: Vec<&Container> = objects
        .iter()
        .filter_map(|o| match o {
            Object::Deployment(d) => d.spec.template.spec.as_ref(),
            _ => None,
        })
        .flat_map(|pod| &pod.containers)
        .filter(|c| flag(c, "--admin-url").is_some())
        .collect();
    if gateways.is_empty() {
        return Err("no gateway (a container taking --admin-url)".into());
    }
    for gateway in gateways {
        let list = flag(gateway, "--admin-url").unwrap_or_default();
        let first = list.split(',').next().unwrap_or_default();
        let host = first
            .trim_start_matches("http://")
            .split(':')
            .next()
            .unwrap_or_default();
        let service_name = host.split_once('.').map(|(_, s)| s).unwrap_or_default();
        let service = objects
            .iter()
            .find_map(|o| match o {
                Object::Service(s) if s.metadata.name.as_deref() == Some(service_name) => {
                    s.spec.as_ref()
                }
                _ => None,
            })
            .ok_or_else(|| format!("{first}: no Service `{service_name}`"))?;
        if service.cluster_ip.as_deref() != Some("None")
            || service.publish_not_ready_addresses != Some(true)
        {
            return Err(format!(
                "Service `{service_name}` is not headless with publishNotReadyAddresses"
            ));
        }
        let port = service
            .ports
            .as_ref()
            .and_then(|p| p.first())
            .map(|p| p.port);
        let set = objects
            .iter()
            .find_map(|o| match o {
                Object::StatefulSet(s) if s.spec.service_name.as_deref() == Some(service_name) => {
                    Some((s.metadata.name.clone().unwrap_or_default(), &s.spec))
                }
                _ => None,
            })
            .ok_or_else(|| format!("no StatefulSet named by Service `{service_name}`"))?;
        let (set_name, spec) = set;
        if spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.as_ref())
            != service.selector.as_ref()
        {
            return Err(format!(
                "Service `{service_name}` does not select StatefulSet `{set_name}`'s pods"
            ));
        }
        let expected: Vec<String> = (0..spec.replicas.unwrap_or(1))
            .map(|i| format!("http://{set_name}-{i}.{service_name}:{}", port.unwrap_or(0)))
            .collect();
        if list != expected.join(",") {
            return Err(format!(
                "a gateway's admin list `{list}` is not every admin pod: `{}`",
                expected.join(",")
            ));
        }
    }
    Ok(())
}

/// The Service in front of the gateways keeps a client on one pod (`sessionAffinity:
/// ClientIP`): the scenario Job reads one gateway's digest, then sends it traffic.
fn gateway_service_is_sticky(objects: &[Object]) -> Result<(), String> {
    let service = objects
        .iter()
        .find_map(|o| match o {
            Object::Service(s) if s.metadata.name.as_deref() == Some("gateway") => s.spec.as_ref(),
            _ => None,
        })
        .ok_or("no Service `gateway`")?;
    match service.session_affinity.as_deref() {
        Some("ClientIP") => Ok(()),
        other => Err(format!(
            "Service `gateway` has session affinity {other:?}, not ClientIP"
        )),
    }
}

/// The typed output for `mode` with the CLI's defaults.
fn checked(mode: SyncMode) -> Vec<Object> {
    check(&render(mode, 2, 4)).unwrap_or_else(|e| panic!("{mode}: {e}"))
}

#[test]
fn k8s_output_parses_into_typed_objects() {
    for mode in SyncMode::ALL {
        let objects = checked(*mode);
        let count = |f: fn(&Object) -> bool| objects.iter().filter(|o| f(o)).count();
        let store = usize::from(matches!(mode, SyncMode::Zookeeper | SyncMode::Etcd));
        assert_eq!(
            count(|o| matches!(o, Object::StatefulSet(_))),
            2 + store,
            "{mode}"
        );
        // The gateway and the two upstreams.
        assert_eq!(count(|o| matches!(o, Object::Deployment(_))), 3, "{mode}");
        // PostgreSQL, admin (headless), admin-api, gateway, two upstreams, the store.
        assert_eq!(
            count(|o| matches!(o, Object::Service(_))),
            6 + store,
            "{mode}"
        );
        let job = objects.iter().find_map(|o| match o {
            Object::Job(j) => j.spec.as_ref(),
            _ => None,
        });
        let job = job.unwrap_or_else(|| panic!("{mode}: no Job"));
        assert_eq!(job.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!((job.completions, job.parallelism), (Some(4), Some(4)));
        let script = job.template.spec.as_ref().unwrap().containers[0]
            .command
            .as_ref()
            .unwrap()
            .join(" ");
        assert!(
            script.contains("--partition \"hash:$((JOB_COMPLETION_INDEX + 1))/4\""),
            "{script}"
        );
    }
}

#[test]
fn k8s_gateways_name_every_admin_pod_behind_a_headless_service() {
    for mode in SyncMode::ALL {
        assert_eq!(admins_are_named_pods(&checked(*mode)), Ok(()), "{mode}");
    }
    let more = check(&render(SyncMode::Http, 5, 2)).unwrap();
    assert_eq!(admins_are_named_pods(&more), Ok(()));
}

#[test]
fn k8s_check_refuses_a_wrong_manifest() {
    let wrong = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: gateway\n\
                 spec:\n  replicas: two\n  selector: {}\n  template: {}\n";
    let e = check(wrong).unwrap_err();
    assert!(
        e.starts_with("document 0 (Deployment): spec.replicas: invalid type"),
        "{e}"
    );
    let e = check("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n").unwrap_err();
    assert_eq!(e, "document 0 (Pod): unknown kind `Pod`");
    let e = check("apiVersion: v1\nkind: Job\nmetadata:\n  name: j\n").unwrap_err();
    assert!(e.starts_with("document 0 (Job): "), "{e}");
}

#[test]
fn k8s_shape_check_refuses_a_gateway_missing_an_admin_or_a_plain_service() {
    let text = render(SyncMode::Websocket, 2, 4);
    let missing = text.replace(",http://admin-2.admin:9095", "");
    assert_ne!(missing, text);
    let e = admins_are_named_pods(&check(&missing).unwrap()).unwrap_err();
    assert!(e.contains("is not every admin pod"), "{e}");
    let plain = text.replace("  clusterIP: None\n", "");
    assert_ne!(plain, text);
    let e = admins_are_named_pods(&check(&plain).unwrap()).unwrap_err();
    assert!(e.contains("is not headless"), "{e}");
}

#[test]
fn k8s_gateway_service_keeps_a_client_on_one_gateway() {
    for mode in SyncMode::ALL {
        assert_eq!(gateway_service_is_sticky(&checked(*mode)), Ok(()), "{mode}");
    }
    let text = render(SyncMode::Websocket, 2, 4);
    let loose = text.replace("  sessionAffinity: ClientIP\n", "");
    assert_ne!(loose, text);
    let e = gateway_service_is_sticky(&check(&loose).unwrap()).unwrap_err();
    assert!(e.contains("not ClientIP"), "{e}");
}
