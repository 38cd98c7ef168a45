//! Runs one scenario under one sync mode on a fresh topology:
//!
//! ```text
//! start ─▶ precheck ─▶ setup ─▶ wait ─▶ checks ─▶ teardown ─▶ stop
//!          digests      create   probe   all of    batch delete, GET → 404,
//!          equal; probe selectors converges them    probe route absent, teardown
//!          not passing  + rules  + digests          probes, digests equal
//! ```

use std::collections::HashMap;
use std::time::Duration;

use model::{DivideUpstream, RuleDto, SelectorDto, SyncMode};

use crate::RunOptions;
use crate::backend::Backend;
use crate::client::{AdminClient, GatewayClient};
use crate::error::{RunError, RunErrorKind, Step};
use crate::probe::judge;
use crate::report::Event;
use crate::scenario::Scenario;
use crate::scenario::ast::{Expect, Probe, RequestSpec, Route, SelectorSpec};
use crate::topology::Topology;
use crate::wait::{WaitPolicy, await_convergence};

/// The admin's built-in credentials.
const ADMIN_USER: &str = "admin";
const ADMIN_PASSWORD: &str = "123456";
/// Lines of each service log attached to a failure.
const LOG_LINES: usize = 40;

/// A passed case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseOutcome {
    /// Scenario name.
    pub case: String,
    /// Sync mode.
    pub mode: SyncMode,
    /// Time from the end of setup to the first pass of the final wait streak.
    pub converge_ms: u64,
}

type StepResult<T> = Result<T, (Step, RunErrorKind)>;

fn at<E: Into<RunErrorKind>>(step: Step) -> impl FnOnce(E) -> (Step, RunErrorKind) {
    move |e| (step, e.into())
}

/// Runs `scenario` under `mode`, reporting progress to `events`.
pub async fn run_case(
    scenario: &Scenario,
    mode: SyncMode,
    backend: &Backend,
    opts: &RunOptions,
    events: &(dyn Fn(Event) + Send + Sync),
) -> Result<CaseOutcome, RunError> {
    let id = format!("{}@{mode}", scenario.name);
    events(Event::CaseStarted { id: id.clone() });
    let fail = |step, kind, logs| RunError {
        case: scenario.name.clone(),
        mode,
        step,
        kind,
        logs,
    };
    events(Event::StepStarted {
        id: id.clone(),
        step: Step::Start,
    });
    let topo = Topology::start(backend, mode, &scenario.upstreams, opts.keep)
        .await
        .map_err(|e| fail(Step::Start, e.into(), String::new()))?;
    let case = Case {
        scenario,
        topo: &topo,
        gateway: GatewayClient::new(topo.gateway.url()),
        id,
        events,
    };
    match case.run().await {
        Ok(converge) => Ok(CaseOutcome {
            case: scenario.name.clone(),
            mode,
            converge_ms: u64::try_from(converge.as_millis()).unwrap_or(u64::MAX),
        }),
        Err((step, kind)) => Err(fail(step, kind, topo.log_tails(LOG_LINES))),
    }
}

struct Case<'a> {
    scenario: &'a Scenario,
    topo: &'a Topology,
    gateway: GatewayClient,
    id: String,
    events: &'a (dyn Fn(Event) + Send + Sync),
}

impl Case<'_> {
    fn step(&self, step: Step) {
        (self.events)(Event::StepStarted {
            id: self.id.clone(),
            step,
        });
    }

    async fn run(&self) -> StepResult<Duration> {
        self.step(Step::Precheck);
        let admin = AdminClient::login(self.topo.admin.url(), ADMIN_USER, ADMIN_PASSWORD)
            .await
            .map_err(at(Step::Precheck))?;
        self.precheck(&admin).await?;
        self.step(Step::Setup);
        let (selector_ids, rule_ids) = self.setup(&admin).await?;
        self.step(Step::Wait);
        let converge = self
            .wait_for(&self.scenario.wait.probe, "the wait probe")
            .await
            .map_err(at(Step::Wait))?;
        self.digests_converge(&admin, "digest equality after the wait")
            .await
            .map_err(at(Step::Wait))?;
        self.step(Step::Checks);
        self.checks().await?;
        self.step(Step::Teardown);
        self.teardown(&admin, &selector_ids, &rule_ids)
            .await
            .map_err(at(Step::Teardown))?;
        Ok(converge)
    }

    fn policy(&self) -> WaitPolicy {
        let w = &self.scenario.wait;
        WaitPolicy {
            consecutive: w.consecutive,
            interval: w.interval,
            timeout: w.timeout,
        }
    }

    /// The gateway holds the admin's initial config, and the wait probe does not pass yet.
    async fn precheck(&self, admin: &AdminClient) -> StepResult<()> {
        self.digests_converge(admin, "initial digest equality")
            .await
            .map_err(at(Step::Precheck))?;
        if self
            .probe_once(
                &self.scenario.wait.probe.request,
                &self.scenario.wait.probe.expect,
            )
            .await
            .is_ok()
        {
            return Err((Step::Precheck, RunErrorKind::ProbePassesBeforeSetup));
        }
        Ok(())
    }

    /// Creates every selector and rule; returns their ids.
    async fn setup(&self, admin: &AdminClient) -> StepResult<(Vec<String>, Vec<String>)> {
        let mut plugins: HashMap<&str, String> = HashMap::new();
        let (mut selector_ids, mut rule_ids) = (Vec::new(), Vec::new());
        for spec in &self.scenario.setup.selectors {
            let plugin_id = match plugins.get(spec.plugin.as_str()) {
                Some(id) => id.clone(),
                None => {
                    let id = admin
                        .plugin_id(&spec.plugin)
                        .await
                        .map_err(at(Step::Setup))?;
                    let id = id.ok_or_else(|| {
                        (
                            Step::Setup,
                            RunErrorKind::PluginNotFound(spec.plugin.clone()),
                        )
                    })?;
                    plugins.insert(&spec.plugin, id.clone());
                    id
                }
            };
            let selector_id = admin
                .create_selector(&self.selector_dto(spec, plugin_id))
                .await
                .map_err(at(Step::Setup))?;
            selector_ids.push(selector_id.clone());
            for rule in &spec.rules {
                let dto = RuleDto {
                    selector_id: Some(selector_id.clone()),
                    name: Some(rule.name.clone()),
                    match_mode: Some(model::MatchMode::from(rule.match_mode).code()),
                    sort: Some(rule.sort),
                    enabled: Some(rule.enabled),
                    loged: Some(true),
                    match_restful: Some(false),
                    handle: Some(
                        serde_json::to_string(&rule.handle.to_handle()).expect("handles serialise"),
                    ),
                    rule_conditions: Some(rule.conditions.iter().map(|c| c.to_dto()).collect()),
                    ..Default::default()
                };
                let id = admin
                    .create_rule(&dto)
                    .await
                    .map_err(at(Step::Setup))?
                    .ok_or_else(|| {
                        (
                            Step::Setup,
                            RunErrorKind::RuleNotFound {
                                rule: rule.name.clone(),
                                selector_id: selector_id.clone(),
                            },
                        )
                    })?;
                rule_ids.push(id);
            }
        }
        Ok((selector_ids, rule_ids))
    }

    fn selector_dto(&self, spec: &SelectorSpec, plugin_id: String) -> SelectorDto {
        let upstreams: Vec<DivideUpstream> = spec
            .upstreams
            .iter()
            .map(|u| DivideUpstream {
                protocol: "http://".to_owned(),
                upstream_url: self
                    .topo
                    .upstream(&u.upstream)
                    .expect("validated: upstreams are declared")
                    .host_port(),
                upstream_host: Some("localhost".to_owned()),
                weight: u.weight,
                warmup: 0,
                status: u.status,
                timestamp: 0,
                ..Default::default()
            })
            .collect();
        SelectorDto {
            plugin_id: Some(plugin_id),
            name: Some(spec.name.clone()),
            selector_type: Some(match spec.kind {
                crate::scenario::ast::SelectorKind::Custom => model::SelectorType::Custom.code(),
                crate::scenario::ast::SelectorKind::Full => model::SelectorType::FullFlow.code(),
            }),
            match_mode: Some(model::MatchMode::from(spec.match_mode).code()),
            sort: Some(spec.sort),
            enabled: Some(spec.enabled),
            loged: Some(true),
            continued: Some(spec.continued),
            match_restful: Some(false),
            handle: Some(serde_json::to_string(&upstreams).expect("upstreams serialise")),
            selector_conditions: Some(spec.conditions.iter().map(|c| c.to_dto()).collect()),
            ..Default::default()
        }
    }

    async fn probe_once(&self, request: &RequestSpec, expect: &Expect) -> Result<(), String> {
        let resp = self
            .gateway
            .send(request)
            .await
            .map_err(|e| e.to_string())?;
        judge(expect, &resp)
    }

    async fn wait_for(&self, probe: &Probe, what: &str) -> Result<Duration, RunErrorKind> {
        await_convergence(self.policy(), || {
            self.probe_once(&probe.request, &probe.expect)
        })
        .await
        .map(|c| c.first_pass)
        .map_err(|source| RunErrorKind::Timeout {
            what: what.to_owned(),
            source,
        })
    }

    /// Waits (within the scenario's wait timeout) until the gateway's config digest equals the
    /// admin's. Sync is eventually consistent: after the wait probe passes, other parts of the
    /// same change may still be on their way (ZooKeeper and etcd deliver per node), so this is
    /// a bounded wait, not a single comparison; a timeout reports both digests last seen.
    async fn digests_converge(&self, admin: &AdminClient, what: &str) -> Result<(), RunErrorKind> {
        let policy = WaitPolicy {
            consecutive: 1,
            ..self.policy()
        };
        await_convergence(policy, || async {
            let (a, g) = (
                admin.digest().await.map_err(|e| e.to_string())?,
                self.gateway.digest().await.map_err(|e| e.to_string())?,
            );
            if a.digest == g.digest {
                Ok(())
            } else {
                Err(format!("admin {a:?}, gateway {g:?}"))
            }
        })
        .await
        .map(|_| ())
        .map_err(|source| RunErrorKind::Timeout {
            what: what.to_owned(),
            source,
        })
    }

    /// Runs every check and reports all failures together.
    async fn checks(&self) -> StepResult<()> {
        let mut failures = Vec::new();
        for c in &self.scenario.checks {
            if let Err(miss) = self.probe_once(&c.request, &c.expect).await {
                failures.push(format!("  check `{}`: {miss}", c.name));
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err((Step::Checks, RunErrorKind::ChecksFailed(failures)))
        }
    }

    async fn teardown(
        &self,
        admin: &AdminClient,
        selector_ids: &[String],
        rule_ids: &[String],
    ) -> Result<(), RunErrorKind> {
        if !selector_ids.is_empty() {
            let deleted = admin.delete_selectors(selector_ids).await?;
            if usize::try_from(deleted).ok() != Some(selector_ids.len()) {
                return Err(RunErrorKind::DeleteCount {
                    deleted,
                    expected: selector_ids.len(),
                });
            }
        }
        for id in selector_ids {
            if admin.get_selector(id).await?.is_some() {
                return Err(RunErrorKind::StillPresent {
                    kind: "selector",
                    id: id.clone(),
                });
            }
        }
        for id in rule_ids {
            if admin.get_rule(id).await?.is_some() {
                return Err(RunErrorKind::StillPresent {
                    kind: "rule",
                    id: id.clone(),
                });
            }
        }
        let gone = Probe {
            request: self.scenario.wait.probe.request.clone(),
            expect: Expect {
                route: Some(Route::Absent),
                ..Default::default()
            },
        };
        self.wait_for(&gone, "the wait probe's route to disappear")
            .await?;
        let mut failures = Vec::new();
        for (i, p) in self.scenario.teardown.probes.iter().enumerate() {
            if let Err(miss) = self.probe_once(&p.request, &p.expect).await {
                failures.push(format!("  teardown probe {i}: {miss}"));
            }
        }
        if !failures.is_empty() {
            return Err(RunErrorKind::ChecksFailed(failures));
        }
        self.digests_converge(admin, "digest equality after teardown")
            .await
    }
}
