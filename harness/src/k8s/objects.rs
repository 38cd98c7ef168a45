//! The shapes every manifest is made of, as JSON values (serialised to YAML by `render`):
//! Services, StatefulSets, Deployments, containers and their readiness probes. Every object is
//! labelled `app: <name>`, and its pods are selected by that label.

use serde_json::{Value, json};

use crate::backend::docker::{self, ContainerSpec};

/// The labels of the object (and the pods) named `name`.
fn labels(name: &str) -> Value {
    json!({ "app": name })
}

/// `metadata` of the object named `name`.
fn metadata(name: &str) -> Value {
    json!({ "name": name, "labels": labels(name) })
}

/// A pod template labelled for `name`, running `container`.
fn pod(name: &str, container: &Value) -> Value {
    json!({
        "metadata": { "labels": labels(name) },
        "spec": { "containers": [container] },
    })
}

/// The environment every container gets ([`docker::ENV`]), as a container's `env` list.
pub(super) fn env() -> Vec<Value> {
    docker::ENV
        .iter()
        .map(|(name, value)| json!({ "name": name, "value": value }))
        .collect()
}

/// Ready when `GET <path>` on `port` answers 2xx.
pub(super) fn http_probe(path: &str, port: u16) -> Value {
    json!({ "httpGet": { "path": path, "port": port }, "periodSeconds": 2 })
}

/// Ready when `port` accepts a TCP connection.
pub(super) fn tcp_probe(port: u16) -> Value {
    json!({ "tcpSocket": { "port": port }, "periodSeconds": 2 })
}

/// The container running `spec` (its role as name, its image, arguments, environment and
/// port), ready when `probe` says so. The image is never pulled when present: `kind load
/// docker-image` puts the `gantry/*:dev` images there.
pub(super) fn container(spec: &ContainerSpec, probe: &Value) -> Value {
    let mut container = json!({
        "name": spec.role,
        "image": spec.image,
        "imagePullPolicy": "IfNotPresent",
        "env": env(),
        "ports": [{ "containerPort": spec.port }],
        "readinessProbe": probe,
    });
    if !spec.cmd.is_empty() {
        container["args"] = json!(spec.cmd);
    }
    container
}

/// The Service `name` in front of the pods labelled `app: <pod_label>` on `port`. A headless
/// one (`clusterIP: None`) gives each pod of a StatefulSet its DNS name
/// (`<pod>.<service>`), published before the pod is ready so that peers can find it early.
pub(super) fn service(name: &str, pod_label: &str, port: u16, headless: bool) -> Value {
    let mut service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(name),
        "spec": {
            "selector": labels(pod_label),
            "ports": [{ "name": "main", "port": port, "targetPort": port }],
        },
    });
    if headless {
        service["spec"]["clusterIP"] = json!("None");
        service["spec"]["publishNotReadyAddresses"] = json!(true);
    }
    service
}

/// The StatefulSet `name` of `replicas` pods running `container`, named by the Service
/// `service` (`<name>-0.<service>`, ...), all started at once rather than one by one.
pub(super) fn stateful_set(name: &str, service: &str, replicas: u32, container: &Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata(name),
        "spec": {
            "serviceName": service,
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "selector": { "matchLabels": labels(name) },
            "template": pod(name, container),
        },
    })
}

/// The Deployment `name` of `replicas` pods running `container`.
pub(super) fn deployment(name: &str, replicas: u32, container: &Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(name),
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": labels(name) },
            "template": pod(name, container),
        },
    })
}

/// The Indexed Job `name`: `shards` pods at once, each running `container` once with its
/// index in `JOB_COMPLETION_INDEX` (0 to `shards` − 1). A failed shard is not retried (a
/// failing case is a verdict, not a fault of the pod) and does not stop the others
/// (`backoffLimitPerIndex`, Kubernetes 1.29 on). Its pods get `volumes`.
pub(super) fn indexed_job(name: &str, shards: u32, container: &Value, volumes: &Value) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(name),
        "spec": {
            "completionMode": "Indexed",
            "completions": shards,
            "parallelism": shards,
            "backoffLimitPerIndex": 0,
            "template": {
                "metadata": { "labels": labels(name) },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    })
}
