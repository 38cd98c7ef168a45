//! The engine against an external target: gantry's scenarios on an admin and a gateway that
//! someone else runs (a real ShenYu, another ShenYu-compatible gateway, or gantry's own started by hand).
//!
//! The engine starts only the echo upstreams, on `--upstream-bind`, and tells the admin to
//! route to them at `--upstream-advertise`. Every selector it creates is named with the run's
//! prefix ([`ExternalTarget::prefix`], `gantry-<8 hex digits>-`), and after every case, at
//! the end of the run and on Ctrl-C it deletes the selectors (with their rules) whose names
//! start with that prefix, and nothing else ([`sweep`]). Cases that would change shared
//! config (plugins, registrations) or need what only a backend of gantry's own can do
//! (faults, several admins or gateways, Redis) are skipped with the reason ([`skip_reason`]).
//!
//! Before the first case, [`probe`] checks that the target's own selectors leave unrouted
//! paths alone (no catch-all) and finds out what it offers ([`Capabilities`]) with a route of
//! its own: whether admin and gateway serve gantry's config digest, whether the
//! gateway names the matched selector and rule in headers, and whether it answers its error
//! bodies with HTTP 200 (ShenYu) or a real status (gantry). The runner judges with what is
//! there: convergence from probes when there is no digest, the upstream's name from the echo
//! body when no header carries it, a ShenYu error answer read with the status gantry would
//! have given it ([`crate::probe::ProbeResponse::in_gantry_terms`]). Before each case makes
//! anything, its precheck sends every request of the case once: each must find no selector
//! (`finds_no_selector`), or a selector of the target's own would answer it or shadow the
//! case's routes, and that case fails naming the request.

use model::lock::MutexExt;
use std::time::Duration;

use model::GatewayError;

use std::collections::BTreeSet;

use crate::backend::{Capabilities, ExternalBackend, ExternalTarget};
use crate::client::{AdminClient, GatewayClient};
use crate::conformance::{Area, Feature, catalog, unsupported_reason};
use crate::error::{BackendError, ClientError};
use crate::probe::{Names, Owners, ProbeResponse, RULE_ID_HEADER, SELECTOR_ID_HEADER};
use crate::scenario::Scenario;
use crate::scenario::ast::{AdminChange, Change};
use crate::upstream::{UPSTREAM_HEADER, Upstream};
use crate::wait::{WaitPolicy, await_convergence};

/// Logs in to `target`, removes what an earlier run with the same prefix left, and probes it.
pub(crate) async fn connect(target: ExternalTarget) -> Result<ExternalBackend, BackendError> {
    let admin = target
        .login()
        .await
        .map_err(|e| refused("logging in to the admin", &e))?;
    sweep(&admin, &target.prefix)
        .await
        .map_err(|e| refused("removing an earlier run's selectors", &e))?;
    let capabilities = probe(&target, &admin).await;
    // The probe's own route goes whether it worked or not.
    let swept = sweep(&admin, &target.prefix)
        .await
        .map_err(|e| refused("removing the capability probe's route", &e));
    let capabilities = capabilities?;
    swept?;
    tracing::info!(target = ?target, "external target: {}", capabilities.describe());
    Ok(ExternalBackend {
        target,
        capabilities,
    })
}

fn external(what: &str, e: impl std::fmt::Display) -> BackendError {
    BackendError::External {
        what: what.to_owned(),
        detail: e.to_string(),
    }
}

/// [`external`] for an admin call that failed, naming its causes (`connection refused`).
fn refused(what: &str, e: &ClientError) -> BackendError {
    let mut detail = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !detail.contains(&text) {
            detail = format!("{detail}: {text}");
        }
        cause = c.source();
    }
    external(what, detail)
}

/// How long the probe waits for its route to work on the gateway.
const PROBE_DEADLINE: Duration = Duration::from_secs(30);

/// Finds out what the target offers: asks both for the config digest; asks the gateway for a
/// path nothing of the run routes, which must find no selector (-107; an error naming the
/// answer otherwise: the target's own selectors would answer the scenarios' requests) and
/// shows how the gateway answers an error; then routes a path of the run's own
/// (`/<prefix>capabilities/...`) to an upstream on `--upstream-bind`, waits until the gateway
/// answers from it (which also proves the gateway reaches the upstreams at
/// `--upstream-advertise`) and reads the headers of that answer. The caller removes the route
/// ([`sweep`]).
pub(crate) async fn probe(
    target: &ExternalTarget,
    admin: &AdminClient,
) -> Result<Capabilities, BackendError> {
    let gateway = GatewayClient::new(&target.gateway_url);
    let digest = admin.digest().await.is_ok() && gateway.digest().await.is_ok();
    // Raw answers: the client's `send` reads them in gantry's terms, which is what is probed.
    let http = crate::client::http();
    let get = |path: String| {
        let http = http.clone();
        let url = format!("{}{path}", target.gateway_url);
        async move {
            let resp = http
                .get(&url)
                .send()
                .await
                .map_err(|e| format!("GET {url}: {e}"))?;
            let status = resp.status().as_u16();
            let headers = (resp.headers().iter())
                .map(|(k, v)| {
                    (
                        k.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect();
            let body = resp.text().await.map_err(|e| format!("GET {url}: {e}"))?;
            Ok::<_, String>(ProbeResponse {
                status,
                headers,
                body,
            })
        }
    };
    // The scenarios' paths must be free: a path no selector of the run matches has to find no
    // selector at all (-107), or the target's own selectors would answer the scenarios'
    // requests (a catch-all) or shadow their routes.
    let unrouted_path = format!("/{}unrouted/probe", target.prefix);
    let unrouted = get(unrouted_path.clone())
        .await
        .map_err(|e| external("asking the gateway for a path nothing routes", e))?;
    if !finds_no_selector(&unrouted) {
        return Err(external(
            "checking that the gateway routes nothing of its own where the scenarios send",
            format!(
                "GET {unrouted_path} answered {}, not the -107 of a path no selector matches: \
                 a selector of the target's own matches every path (a catch-all?) and would \
                 answer the scenarios' requests or shadow their routes",
                unrouted.summary()
            ),
        ));
    }
    let upstream = Upstream::start_at("capabilities", &[], target.upstream_bind).await?;
    let name = target.selector_name("capabilities");
    let path = format!("/{name}");
    let address = format!("{}:{}", target.upstream_advertise, upstream.addr().port());
    let spec = super::route::prefix_route(&name, &path, "capabilities");
    let addrs = crate::lower::Addresses::from([("capabilities".to_owned(), address.clone())]);
    let plugin_id = admin
        .plugin_id("divide")
        .await
        .map_err(|e| refused("looking up the divide plugin", &e))?
        .ok_or_else(|| external("looking up the divide plugin", "the admin has none"))?;
    let selector_id = admin
        .create_selector(&crate::lower::selector_dto(&spec, &plugin_id, &addrs))
        .await
        .map_err(|e| refused("creating the capability probe's selector", &e))?;
    for rule in &spec.rules {
        admin
            .create_rule(&crate::lower::rule_dto(rule, &selector_id))
            .await
            .map_err(|e| refused("creating the capability probe's rule", &e))?;
    }
    let routed = format!("{path}/probe");
    let policy = WaitPolicy {
        consecutive: 1,
        interval: Duration::from_millis(100),
        timeout: PROBE_DEADLINE,
    };
    let answer = std::sync::Mutex::new(None);
    await_convergence(policy, || async {
        let resp = get(routed.clone()).await?;
        let from_upstream = resp.header(UPSTREAM_HEADER).is_some()
            || serde_json::from_str::<crate::upstream::Echo>(&resp.body).is_ok();
        if !from_upstream {
            return Err(resp.summary());
        }
        *answer.locked() = Some(resp);
        Ok(())
    })
    .await
    .map_err(|e| {
        external(
            &format!(
                "routing {path}/** to an upstream at {address} (is the gateway synced with the \
                 admin, and does it reach --upstream-advertise {}?)",
                target.upstream_advertise
            ),
            e,
        )
    })?;
    let answer = answer
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .expect("a converged wait saw the answer");
    Ok(Capabilities {
        digest,
        route_headers: answer.header(SELECTOR_ID_HEADER) == Some(selector_id.as_str())
            && answer.header(RULE_ID_HEADER).is_some(),
        upstream_header: answer.header(UPSTREAM_HEADER).is_some(),
        errors_with_200: unrouted.status == 200,
    })
}

/// Whether `answer` is a gateway's "no selector matched" (-107), with any HTTP status.
pub(crate) fn finds_no_selector(answer: &ProbeResponse) -> bool {
    serde_json::from_str::<GatewayError>(&answer.body)
        .is_ok_and(|e| e.code == GatewayError::SELECTOR_NOT_FOUND)
}

/// Deletes every selector (with its rules) whose name starts with `prefix`, of every plugin;
/// returns how many. Nothing else is touched.
pub(crate) async fn sweep(admin: &AdminClient, prefix: &str) -> Result<usize, ClientError> {
    let mut ids = Vec::new();
    for plugin in admin.plugins().await? {
        ids.extend(
            admin
                .all_selectors(&plugin.id)
                .await?
                .into_iter()
                .filter(|s| s.name.starts_with(prefix))
                .map(|s| s.id),
        );
    }
    if !ids.is_empty() {
        admin.delete_selectors(&ids).await?;
    }
    Ok(ids.len())
}

/// Whether no external target offers `feature`, whatever its capabilities: it needs a
/// process, a store or a topology of gantry's own (faults but misbehaving upstreams, which
/// gantry starts; several admins or gateways; Redis), or changes config the run did not create
/// (plugins, registrations).
pub(crate) fn never_offered(feature: &Feature) -> bool {
    match feature.area {
        Area::Faults => feature.name != "faults.upstream",
        Area::Registration | Area::RateLimiting => true,
        _ => [
            "adminApi.pluginToggle",
            "adminApi.pluginConfig",
            "sync.severalAdmins",
            "sync.severalGateways",
            "sync.lateJoin",
        ]
        .contains(&feature.name.as_str()),
    }
}

/// The features no external target offers ([`never_offered`]), sorted.
pub(crate) fn never_offered_features() -> BTreeSet<String> {
    (catalog().features.iter())
        .filter(|f| never_offered(f))
        .map(|f| f.name.clone())
        .collect()
}

/// The features a target offering `caps` lacks: `routing.routeHeaders` without the route
/// headers, `routing.upstreamHeader` without the upstream header.
pub(crate) fn missing_with(caps: &Capabilities) -> Vec<&'static str> {
    [
        (!caps.route_headers).then_some("routing.routeHeaders"),
        (!caps.upstream_header).then_some("routing.upstreamHeader"),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The features of [`missing_with`] whose naming in `features:` skips a case whole: not
/// `routing.routeHeaders`, which only the `selector:`/`rule:` keys need (judged per key,
/// [`crate::probe::Names::unjudged`]; a case is skipped whole for them only where
/// [`structural_capability_reason`] says so).
fn missing_whole_with(caps: &Capabilities) -> Vec<&'static str> {
    (missing_with(caps).into_iter())
        .filter(|f| *f != "routing.routeHeaders")
        .collect()
}

/// Why `scenario` cannot run against an external target whatever it offers, naming the
/// features it needs that no external target offers ([`never_offered`]) and what in the case
/// needs them ([`structural_skip_reason`]). `None` when it can.
pub(crate) fn skip_reason(scenario: &Scenario) -> Option<String> {
    let catalog = catalog();
    let missing: Vec<&str> = (scenario.features.iter())
        .filter(|f| catalog.get(f).is_some_and(never_offered))
        .map(String::as_str)
        .collect();
    match (structural_skip_reason(scenario), missing.is_empty()) {
        (None, true) => None,
        (Some(why), true) => Some(why),
        (why, false) => Some(unsupported_reason(
            &missing,
            &why.unwrap_or_else(|| "an external target does not offer them".into()),
        )),
    }
}

/// What in `scenario` no external target can do: it would change config the run did not
/// create, or it needs a process, a store or a topology of gantry's own. `None` when it can.
pub(crate) fn structural_skip_reason(scenario: &Scenario) -> Option<String> {
    if !scenario.topology.is_default() {
        return Some(
            "it needs a topology of its own (several admins or gateways, late \
                     gateways or PostgreSQL); an external target is one admin and one gateway"
                .into(),
        );
    }
    if let Some(c) = scenario.components.first() {
        return Some(format!(
            "it needs {c} started by gantry; an external run starts only upstreams"
        ));
    }
    if !scenario.resources.is_empty() {
        return Some(
            "it limits its containers' memory (`resources`), which needs containers of \
             gantry's own"
                .into(),
        );
    }
    if !scenario.setup.plugins.is_empty() {
        return Some(
            "it changes a plugin (`setup.plugins`), which is config the run did not create".into(),
        );
    }
    if !scenario.setup.registrations.is_empty() {
        return Some(
            "it registers a client, which makes selectors named by their context \
                     path (they cannot carry the run's prefix)"
                .into(),
        );
    }
    let changes = scenario.steps.iter().flat_map(|s| &s.changes);
    for change in changes {
        let why = match change {
            Change::Admin(AdminChange::EnablePlugin(_) | AdminChange::UpdatePlugin(_)) => {
                "it changes a plugin, which is config the run did not create"
            }
            Change::Admin(AdminChange::Register(_)) => {
                "it registers a client, which makes selectors named by their context path"
            }
            Change::Admin(
                AdminChange::CreateSelector(_)
                | AdminChange::CreateRule(_)
                | AdminChange::UpdateSelector(_)
                | AdminChange::UpdateRule(_)
                | AdminChange::DeleteSelector(_)
                | AdminChange::DeleteRule(_),
            ) => continue,
            Change::Fault(_) => {
                "it injects faults (stops, partitions, sync faults), which need processes of \
                  gantry's own"
            }
        };
        return Some(format!("{why} (step change `{}`)", change.name()));
    }
    None
}

/// Why `scenario` cannot run against a target that offers `caps`: it expects what only a
/// missing capability shows; the reason names the feature ([`missing_with`]). `None` when it
/// can.
pub(crate) fn capability_skip_reason(scenario: &Scenario, caps: &Capabilities) -> Option<String> {
    let missing = missing_whole_with(caps);
    let named: Vec<&str> = (missing.iter().copied())
        .filter(|m| scenario.features.iter().any(|f| f == m))
        .collect();
    match structural_capability_reason(scenario, caps) {
        Some((feature, why)) => Some(unsupported_reason(&[feature], &why)),
        None if !named.is_empty() => Some(unsupported_reason(
            &named,
            "the target does not offer them (its capability probe)",
        )),
        None => None,
    }
}

/// What in `scenario` a target offering `caps` cannot show, with the feature it stands for.
fn structural_capability_reason(
    scenario: &Scenario,
    caps: &Capabilities,
) -> Option<(&'static str, String)> {
    if !caps.route_headers
        && let Some(why) = route_names_skip_reason(scenario)
    {
        return Some(("routing.routeHeaders", why));
    }
    let behaves = scenario.upstreams.iter().any(|u| !u.behave.is_empty());
    (!caps.upstream_header && behaves).then(|| {
        (
            "routing.upstreamHeader",
            "its upstreams answer some requests with bodies of their own (`behave`), which only \
             the x-gantry-upstream header names; the target does not pass that header on"
                .into(),
        )
    })
}

/// Why `scenario` cannot run on a gateway that does not name the matched selector and rule,
/// whose `selector:` and `rule:` keys are judged per key ([`Names::unjudged`]): a wait,
/// `during`, `traffic` or teardown probe that expects a key not judged (a wait judged without it could
/// pass before the change is live, and the checks after it would be judged too early), or
/// checks none of which has anything left to judge. `None` when it can run.
fn route_names_skip_reason(scenario: &Scenario) -> Option<String> {
    let names = Names {
        headerless: Some(Owners::of(scenario)),
        ..Names::default()
    };
    let waits = std::iter::once(("wait".to_owned(), &scenario.wait))
        .chain(
            (scenario.steps.iter().enumerate()).map(|(i, s)| (format!("steps[{i}].wait"), &s.wait)),
        )
        .flat_map(|(at, w)| {
            (w.probes.iter().enumerate())
                .map(move |(i, p)| (format!("{at}.{}", w.probe_path(i)), p))
        });
    let during = (scenario.steps.iter().enumerate())
        .filter_map(|(i, s)| Some((format!("steps[{i}].during"), &s.during.as_ref()?.load.probe)))
        .chain(
            (scenario.traffic.iter().enumerate())
                .map(|(i, t)| (format!("traffic[{i}]"), &t.load.probe)),
        );
    let teardown = (scenario.teardown.probes.iter().enumerate())
        .map(|(i, p)| (format!("teardown.probes[{i}]"), p));
    for (at, probe) in waits.chain(during).chain(teardown) {
        let keys = names.unjudged(&probe.expect);
        if !keys.is_empty() {
            let keys: Vec<String> = keys.iter().map(|k| format!("`{k}:`")).collect();
            return Some(format!(
                "its probe `{at}` expects {}, which only the gateway's x-gantry-selector-id / \
                 x-gantry-rule-id headers show and the target does not send: a probe judged \
                 without it could pass before the change is live",
                keys.join(" and ")
            ));
        }
    }
    let checks = (scenario.checks.iter()).chain(scenario.steps.iter().flat_map(|s| &s.checks));
    let mut judged = (checks.clone()).map(|c| {
        c.kind
            .expect()
            .is_none_or(|e| !names.judged_part(e).is_empty())
    });
    (checks.count() > 0 && !judged.any(|j| j)).then(|| {
        "every check expects only `selector:` or `rule:`, which only the gateway's \
         x-gantry-selector-id / x-gantry-rule-id headers show and the target does not send: \
         nothing in the case can be judged"
            .into()
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::scenario::parse_str;

    const BASE: &str = "name: s\nmodes: [websocket]\nupstreams: [alpha]\nsetup:\n  selectors:\n    - name: s\n      plugin: divide\n      upstreams: [{ upstream: alpha }]\n      rules: [{ name: r }]\nwait:\n  probe: { request: { path: /x }, expect: { upstream: alpha } }\nchecks:\n  - { name: c, request: { path: /x }, expect: { status: 200 } }\n";

    fn scenario(extra: &str) -> Scenario {
        parse_str(Path::new("s.yaml"), &format!("{BASE}{extra}")).unwrap()
    }

    #[test]
    fn every_request_of_a_case_is_listed_for_the_shadow_check() {
        let s = scenario(
            "steps:\n  - name: k\n    changes: [{ updateSelector: { name: s, enabled: true } }]\n    wait: { probe: { request: { path: /w }, expect: { upstream: alpha } } }\n    during: { request: { path: /d }, expect: { status: 200 } }\n    checks: [{ name: c, request: { method: POST, path: /c }, expect: { status: 200 } }]\nteardown:\n  probes: [{ request: { path: /t }, expect: { route: absent } }]\n",
        );
        let sent: Vec<String> = s
            .requests()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        assert_eq!(
            sent,
            ["GET /x", "GET /w", "GET /d", "GET /t", "GET /x", "POST /c"]
        );
    }

    #[test]
    fn only_what_an_external_run_can_do_runs() {
        assert_eq!(skip_reason(&scenario("")), None);
        let faulty = scenario(
            "steps:\n  - name: k\n    changes: [{ restart: gateway }]\n    wait: { probe: { request: { path: /x }, expect: { upstream: alpha } } }\n",
        );
        assert!(skip_reason(&faulty).is_some_and(|r| r.contains("injects faults")));
        let plugin = scenario(
            "steps:\n  - name: p\n    changes: [{ enablePlugin: { name: divide, enabled: false } }]\n    wait: { probe: { request: { path: /x }, expect: { status: 404 } } }\n",
        );
        assert!(skip_reason(&plugin).is_some_and(|r| r.contains("changes a plugin")));
        let moved = scenario(
            "steps:\n  - name: u\n    changes: [{ updateSelector: { name: s, upstreams: [{ upstream: alpha, weight: 10 }] } }]\n    wait: { probe: { request: { path: /x }, expect: { upstream: alpha } } }\n",
        );
        assert_eq!(skip_reason(&moved), None);
    }

    #[test]
    fn missing_capabilities_skip_what_needs_them() {
        let named = parse_str(
            Path::new("s.yaml"),
            &BASE.replace("expect: { status: 200 }", "expect: { selector: s }"),
        )
        .unwrap();
        let bare = Capabilities::SHENYU;
        // `selector:` in a check beside `status` is judged per key: the case runs.
        assert_eq!(capability_skip_reason(&named, &bare), None);
        assert_eq!(capability_skip_reason(&named, &Capabilities::GANTRY), None);
        let plain = scenario("");
        assert_eq!(capability_skip_reason(&plain, &bare), None);
        let behaving = parse_str(
            Path::new("s.yaml"),
            &BASE.replace(
                "upstreams: [alpha]",
                "upstreams:\n  - name: alpha\n    behave: [{ path: /y, status: 503 }]",
            ),
        )
        .unwrap();
        assert!(capability_skip_reason(&behaving, &bare).is_some_and(|r| r.contains("behave")));
        assert_eq!(
            capability_skip_reason(&behaving, &Capabilities::GANTRY),
            None
        );
    }

    /// Without route headers a case is skipped whole only when a probe (which decides when
    /// the checks run) needs a key not judged, or when no check has anything left to judge.
    #[test]
    fn route_names_skip_a_case_only_when_a_probe_or_every_check_needs_them() {
        let bare = Capabilities::SHENYU;
        let with =
            |from: &str, to: &str| parse_str(Path::new("s.yaml"), &BASE.replace(from, to)).unwrap();
        // The only selector over alpha: judged by the upstream, even in the wait.
        let by_upstream = with("expect: { upstream: alpha } }", "expect: { selector: s } }");
        assert_eq!(capability_skip_reason(&by_upstream, &bare), None);
        let rule_wait = with(
            "expect: { upstream: alpha } }",
            "expect: { upstream: alpha, rule: r } }",
        );
        let why = capability_skip_reason(&rule_wait, &bare).unwrap();
        assert!(
            why.contains("its probe `wait.probe` expects `rule:`"),
            "{why}"
        );
        assert_eq!(
            crate::conformance::missing_features(&why),
            ["routing.routeHeaders"]
        );
        assert_eq!(
            capability_skip_reason(&rule_wait, &Capabilities::GANTRY),
            None
        );
        let rule_only = with("expect: { status: 200 }", "expect: { rule: r }");
        let why = capability_skip_reason(&rule_only, &bare).unwrap();
        assert!(why.contains("nothing in the case can be judged"), "{why}");
        let rule_and_status = with(
            "expect: { status: 200 }",
            "expect: { status: 200, rule: r }",
        );
        assert_eq!(capability_skip_reason(&rule_and_status, &bare), None);
    }

    /// The workspace's scenario files, parsed.
    fn workspace_scenarios() -> Vec<Scenario> {
        let dir = Path::new(crate::WORKSPACE_DIR).join("cases/scenarios");
        (crate::discover(&[dir]).unwrap().into_iter())
            .map(|f| f.scenario.unwrap())
            .collect()
    }

    /// The features a scenario names predict what an external run skips: a case skipped for
    /// what it does names a feature no external target offers, and a case naming one is
    /// skipped; the same for what a ShenYu's capabilities lack.
    #[test]
    fn the_scenarios_features_predict_the_external_skips() {
        let never = never_offered_features();
        let shenyu = missing_with(&Capabilities::SHENYU);
        for s in workspace_scenarios() {
            let names = |set: &dyn Fn(&str) -> bool| -> Vec<&str> {
                s.features
                    .iter()
                    .map(String::as_str)
                    .filter(|f| set(f))
                    .collect()
            };
            let never_named = names(&|f| never.contains(f));
            assert_eq!(
                structural_skip_reason(&s).is_some(),
                !never_named.is_empty(),
                "{}: skipped for {:?}, names {never_named:?}",
                s.name,
                structural_skip_reason(&s)
            );
            if let Some(why) = skip_reason(&s) {
                assert_eq!(
                    crate::conformance::missing_features(&why),
                    never_named,
                    "{why}"
                );
            }
            // A case naming `routing.upstreamHeader` is skipped whole on ShenYu, and only
            // such a case or one whose probes need `selector:`/`rule:` judged.
            let lacking = names(&|f| shenyu.contains(&f));
            let why = structural_capability_reason(&s, &Capabilities::SHENYU);
            assert_eq!(
                why.is_some(),
                lacking.contains(&"routing.upstreamHeader")
                    || route_names_skip_reason(&s).is_some(),
                "{}: names {lacking:?}, skipped for {why:?}",
                s.name
            );
            if why.is_some_and(|(f, _)| f == "routing.routeHeaders") {
                assert!(lacking.contains(&"routing.routeHeaders"), "{}", s.name);
            }
            assert_eq!(
                capability_skip_reason(&s, &Capabilities::GANTRY),
                None,
                "{}",
                s.name
            );
        }
    }

    #[test]
    fn a_feature_named_but_not_offered_skips_naming_it() {
        let tagged = scenario("features: [routing.uriStartsWith, sync.severalGateways]\n");
        let why = skip_reason(&tagged).unwrap();
        assert_eq!(
            crate::conformance::missing_features(&why),
            ["sync.severalGateways"]
        );
        let headers = scenario("features: [routing.upstreamHeader]\n");
        let why = capability_skip_reason(&headers, &Capabilities::SHENYU).unwrap();
        assert_eq!(
            crate::conformance::missing_features(&why),
            ["routing.upstreamHeader"]
        );
        assert_eq!(
            capability_skip_reason(&headers, &Capabilities::GANTRY),
            None
        );
        // `routing.routeHeaders` alone skips nothing whole: its keys are judged per key.
        let route = scenario("features: [routing.routeHeaders]\n");
        assert_eq!(capability_skip_reason(&route, &Capabilities::SHENYU), None);
    }

    #[test]
    fn only_a_missing_selector_shows_a_free_path() {
        let answer = |status: u16, body: &str| ProbeResponse {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
        };
        let no_selector = GatewayError::selector_not_found("divide");
        let json = |e: &GatewayError| serde_json::to_string(e).unwrap();
        // gantry's 404 and ShenYu's 200 (with its `data` field) both say "no selector".
        assert!(finds_no_selector(&answer(404, &json(&no_selector))));
        assert!(finds_no_selector(&answer(
            200,
            r#"{"code":-107,"message":"divide:Can not find selector","data":null}"#
        )));
        // A catch-all selector without rules, one routed to a dead upstream, one that answers.
        let no_rule = GatewayError::rule_not_found("divide");
        let dead = GatewayError::upstream_error("connection refused");
        assert!(!finds_no_selector(&answer(404, &json(&no_rule))));
        assert!(!finds_no_selector(&answer(502, &json(&dead))));
        assert!(!finds_no_selector(&answer(200, "<html>their app</html>")));
    }
}
