//! Runs one scenario under one sync mode on a fresh topology:
//!
//! ```text
//! start ─▶ precheck ─▶ setup ─▶ wait ─▶ checks ─▶ steps ─▶ teardown ─▶ stop
//!          digests      create   probe   all of    each:    restore plugins, batch delete,
//!          equal; probe selectors converges them    change,  GET → 404, probe route
//!          not passing  + rules  + digests          wait,    absent, teardown probes,
//!                                                   checks   digests equal
//! ```

use std::collections::HashMap;
use std::time::Duration;

use model::{DivideUpstream, MetaDataRegister, RuleDto, SelectorDto, SyncMode, UriRegister};

use crate::RunOptions;
use crate::backend::Backend;
use crate::client::{AdminClient, GatewayClient};
use crate::error::{RunError, RunErrorKind, Step};
use crate::probe::judge;
use crate::report::Event;
use crate::scenario::Scenario;
use crate::scenario::ast::{
    Change, Check, Expect, Probe, RegistrationSpec, RequestSpec, Route, SelectorSpec, UpstreamRef,
    Wait,
};
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

/// A rule setup made, and whether a step deleted it.
struct MadeRule {
    name: String,
    id: String,
    dto: RuleDto,
    deleted: bool,
}

/// A selector setup made (with its rules), and whether a step deleted it.
struct MadeSelector {
    name: String,
    id: String,
    dto: SelectorDto,
    deleted: bool,
    rules: Vec<MadeRule>,
}

/// Everything setup made, kept current by the steps.
struct Made {
    selectors: Vec<MadeSelector>,
    /// Selectors the admin made for registrations.
    registered: Vec<String>,
}

impl Made {
    fn selector(&mut self, name: &str) -> StepResult<&mut MadeSelector> {
        self.selectors
            .iter_mut()
            .find(|s| s.name == name && !s.deleted)
            .ok_or_else(|| {
                (
                    Step::Steps,
                    RunErrorKind::UnknownObject(format!("selector `{name}`")),
                )
            })
    }

    fn rule(&mut self, selector: &str, name: &str) -> StepResult<&mut MadeRule> {
        self.selector(selector)?
            .rules
            .iter_mut()
            .find(|r| r.name == name && !r.deleted)
            .ok_or_else(|| {
                (
                    Step::Steps,
                    RunErrorKind::UnknownObject(format!("rule `{name}` of selector `{selector}`")),
                )
            })
    }
}

/// A plugin whose enabled flag a step changed: its id and original flag.
struct ChangedPlugin {
    id: String,
    enabled: bool,
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
        let mut made = self.setup(&admin).await?;
        self.step(Step::Wait);
        let converge = self
            .wait_for(&self.scenario.wait, "the wait probe")
            .await
            .map_err(at(Step::Wait))?;
        self.digests_converge(&admin, "digest equality after the wait")
            .await
            .map_err(at(Step::Wait))?;
        self.step(Step::Checks);
        self.checks(&self.scenario.checks, "", Step::Checks).await?;
        let mut plugins = Vec::new();
        if !self.scenario.steps.is_empty() {
            self.step(Step::Steps);
        }
        let steps = self.steps(&admin, &mut made, &mut plugins).await;
        // Plugins a step changed are restored even when a step failed.
        let restored = self.restore_plugins(&admin, &plugins).await;
        steps?;
        restored.map_err(at(Step::Teardown))?;
        self.step(Step::Teardown);
        self.teardown(&admin, &made)
            .await
            .map_err(at(Step::Teardown))?;
        Ok(converge)
    }

    fn policy(&self) -> WaitPolicy {
        policy(&self.scenario.wait)
    }

    /// Runs every step: its changes, its wait, digest equality, its checks.
    async fn steps(
        &self,
        admin: &AdminClient,
        made: &mut Made,
        plugins: &mut Vec<ChangedPlugin>,
    ) -> StepResult<()> {
        for st in &self.scenario.steps {
            for change in &st.changes {
                self.apply(admin, change, made, plugins).await?;
            }
            let converge = self
                .wait_for(&st.wait, &format!("step `{}`: the wait probe", st.name))
                .await
                .map_err(at(Step::Steps))?;
            tracing::info!(
                case = %self.id,
                step = %st.name,
                converge_ms = u64::try_from(converge.as_millis()).unwrap_or(u64::MAX),
                "step converged"
            );
            self.digests_converge(
                admin,
                &format!("step `{}`: digest equality after the wait", st.name),
            )
            .await
            .map_err(at(Step::Steps))?;
            self.checks(&st.checks, &format!("step `{}` ", st.name), Step::Steps)
                .await?;
        }
        Ok(())
    }

    /// Applies one admin change, keeping `made` current.
    async fn apply(
        &self,
        admin: &AdminClient,
        change: &Change,
        made: &mut Made,
        plugins: &mut Vec<ChangedPlugin>,
    ) -> StepResult<()> {
        match change {
            Change::UpdateSelector(u) => {
                let sel = made.selector(&u.name)?;
                if let Some(ups) = &u.upstreams {
                    sel.dto.handle = Some(self.upstreams_handle(ups));
                }
                if let Some(e) = u.enabled {
                    sel.dto.enabled = Some(e);
                }
                if let Some(cs) = &u.conditions {
                    sel.dto.selector_conditions = Some(cs.iter().map(|c| c.to_dto()).collect());
                }
                sel.dto.id = Some(sel.id.clone());
                admin
                    .update_selector(&sel.id, &sel.dto)
                    .await
                    .map_err(at(Step::Steps))
            }
            Change::UpdateRule(u) => {
                let rule = made.rule(&u.selector, &u.name)?;
                if let Some(e) = u.enabled {
                    rule.dto.enabled = Some(e);
                }
                if let Some(cs) = &u.conditions {
                    rule.dto.rule_conditions = Some(cs.iter().map(|c| c.to_dto()).collect());
                }
                if let Some(h) = &u.handle {
                    rule.dto.handle =
                        Some(serde_json::to_string(&h.to_handle()).expect("handles serialise"));
                }
                rule.dto.id = Some(rule.id.clone());
                admin
                    .update_rule(&rule.id, &rule.dto)
                    .await
                    .map_err(at(Step::Steps))
            }
            Change::EnablePlugin(p) => {
                let plugin = admin
                    .plugin(&p.name)
                    .await
                    .map_err(at(Step::Steps))?
                    .ok_or_else(|| (Step::Steps, RunErrorKind::PluginNotFound(p.name.clone())))?;
                if !plugins.iter().any(|c| c.id == plugin.id) {
                    plugins.push(ChangedPlugin {
                        id: plugin.id.clone(),
                        enabled: plugin.enabled,
                    });
                }
                admin
                    .enable_plugins(&[plugin.id], p.enabled)
                    .await
                    .map_err(at(Step::Steps))
            }
            Change::DeleteSelector(name) => {
                let sel = made.selector(name)?;
                let deleted = admin
                    .delete_selectors(std::slice::from_ref(&sel.id))
                    .await
                    .map_err(at(Step::Steps))?;
                one_deleted(deleted)?;
                sel.deleted = true;
                for r in &mut sel.rules {
                    r.deleted = true;
                }
                Ok(())
            }
            Change::DeleteRule(r) => {
                let rule = made.rule(&r.selector, &r.name)?;
                let deleted = admin
                    .delete_rules(std::slice::from_ref(&rule.id))
                    .await
                    .map_err(at(Step::Steps))?;
                one_deleted(deleted)?;
                rule.deleted = true;
                Ok(())
            }
        }
    }

    /// Puts every plugin a step changed back to its original enabled flag.
    async fn restore_plugins(
        &self,
        admin: &AdminClient,
        plugins: &[ChangedPlugin],
    ) -> Result<(), RunErrorKind> {
        for p in plugins {
            admin
                .enable_plugins(std::slice::from_ref(&p.id), p.enabled)
                .await?;
        }
        Ok(())
    }
}

/// A step's delete of one object must report exactly one deleted.
fn one_deleted(deleted: i64) -> StepResult<()> {
    if deleted == 1 {
        return Ok(());
    }
    Err((
        Step::Steps,
        RunErrorKind::DeleteCount {
            deleted,
            expected: 1,
        },
    ))
}

/// The wait policy of a `wait:` block.
fn policy(w: &Wait) -> WaitPolicy {
    WaitPolicy {
        consecutive: w.consecutive,
        interval: w.interval,
        timeout: w.timeout,
    }
}

impl Case<'_> {
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
    async fn setup(&self, admin: &AdminClient) -> StepResult<Made> {
        let mut plugins: HashMap<&str, String> = HashMap::new();
        let mut made = Made {
            selectors: Vec::new(),
            registered: Vec::new(),
        };
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
            let selector_dto = self.selector_dto(spec, plugin_id);
            let selector_id = admin
                .create_selector(&selector_dto)
                .await
                .map_err(at(Step::Setup))?;
            let mut rules = Vec::new();
            for rule in &spec.rules {
                let dto = RuleDto {
                    selector_id: Some(selector_id.clone()),
                    name: Some(rule.name.clone()),
                    match_mode: Some(model::MatchMode::from(rule.match_mode).code()),
                    sort: Some(rule.sort),
                    enabled: Some(rule.enabled),
                    loged: Some(true),
                    match_restful: Some(false),
                    handle: Some(rule.handle_json()),
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
                rules.push(MadeRule {
                    name: rule.name.clone(),
                    id,
                    dto,
                    deleted: false,
                });
            }
            made.selectors.push(MadeSelector {
                name: spec.name.clone(),
                id: selector_id,
                dto: selector_dto,
                deleted: false,
                rules,
            });
        }
        for reg in &self.scenario.setup.registrations {
            let ids = self.register(admin, reg).await.map_err(at(Step::Setup))?;
            made.registered.extend(ids);
        }
        Ok(made)
    }

    /// Registers like a ShenYu http client at start (protocol §9): metadata per path, then
    /// the upstream's address. Returns the ids of the divide and contextPath selectors the
    /// admin made for it, for teardown.
    async fn register(
        &self,
        admin: &AdminClient,
        reg: &RegistrationSpec,
    ) -> Result<Vec<String>, RunErrorKind> {
        let app_name = reg
            .app_name
            .clone()
            .unwrap_or_else(|| self.scenario.name.clone());
        for path in &reg.paths {
            let meta = MetaDataRegister {
                app_name: Some(app_name.clone()),
                context_path: Some(reg.context_path.clone()),
                path: Some(path.clone()),
                rpc_type: Some("http".to_owned()),
                rule_name: Some(path.clone()),
                enabled: Some(true),
                register_meta_data: Some(false),
                add_prefixed: Some(false),
                ..Default::default()
            };
            admin
                .register("/shenyu-client/register-metadata", &meta)
                .await?;
        }
        let host_port = self
            .topo
            .upstream(&reg.upstream)
            .expect("validated: upstreams are declared")
            .host_port();
        let (host, port) = host_port
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
            .expect("upstream addresses are host:port");
        let uri = UriRegister {
            protocol: Some("http://".to_owned()),
            app_name: Some(app_name),
            context_path: Some(reg.context_path.clone()),
            rpc_type: Some("http".to_owned()),
            host: Some(host.to_owned()),
            port: Some(port),
            event_type: Some("REGISTER".to_owned()),
        };
        admin.register("/shenyu-client/register-uri", &uri).await?;
        let mut ids = Vec::new();
        for plugin in ["divide", "contextPath"] {
            let plugin_id = admin
                .plugin_id(plugin)
                .await?
                .ok_or_else(|| RunErrorKind::PluginNotFound(plugin.to_owned()))?;
            let selector = admin
                .list_selectors(&plugin_id)
                .await?
                .into_iter()
                .find(|s| s.name == reg.context_path)
                .ok_or_else(|| {
                    RunErrorKind::UnknownObject(format!(
                        "{plugin} selector `{}` after registration",
                        reg.context_path
                    ))
                })?;
            ids.push(selector.id);
        }
        Ok(ids)
    }

    /// The divide selector handle for scenario upstreams.
    fn upstreams_handle(&self, ups: &[UpstreamRef]) -> String {
        let upstreams: Vec<DivideUpstream> = ups
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
        serde_json::to_string(&upstreams).expect("upstreams serialise")
    }

    fn selector_dto(&self, spec: &SelectorSpec, plugin_id: String) -> SelectorDto {
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
            handle: Some(self.upstreams_handle(&spec.upstreams)),
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

    async fn wait_for(&self, wait: &Wait, what: &str) -> Result<Duration, RunErrorKind> {
        let probe = &wait.probe;
        await_convergence(policy(wait), || {
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
    async fn checks(&self, checks: &[Check], prefix: &str, step: Step) -> StepResult<()> {
        let mut failures = Vec::new();
        for c in checks {
            if let Err(miss) = self.probe_once(&c.request, &c.expect).await {
                failures.push(format!("  {prefix}check `{}`: {miss}", c.name));
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err((step, RunErrorKind::ChecksFailed(failures)))
        }
    }

    async fn teardown(&self, admin: &AdminClient, made: &Made) -> Result<(), RunErrorKind> {
        let selector_ids: Vec<String> = made
            .selectors
            .iter()
            .filter(|s| !s.deleted)
            .map(|s| s.id.clone())
            .chain(made.registered.iter().cloned())
            .collect();
        let all_selector_ids = made.selectors.iter().map(|s| &s.id).chain(&made.registered);
        let rule_ids: Vec<&String> = made
            .selectors
            .iter()
            .flat_map(|s| s.rules.iter().map(|r| &r.id))
            .collect();
        if !selector_ids.is_empty() {
            let deleted = admin.delete_selectors(&selector_ids).await?;
            if usize::try_from(deleted).ok() != Some(selector_ids.len()) {
                return Err(RunErrorKind::DeleteCount {
                    deleted,
                    expected: selector_ids.len(),
                });
            }
        }
        for id in all_selector_ids {
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
        let gone = Wait {
            probe: Probe {
                request: self.scenario.wait.probe.request.clone(),
                expect: Expect {
                    route: Some(Route::Absent),
                    ..Default::default()
                },
            },
            ..self.scenario.wait.clone()
        };
        self.wait_for(&gone, "the wait probe's route to disappear")
            .await?;
        // A step may already have removed the wait probe's route, so that wait proves little
        // on its own: the teardown probes run once the gateway holds the admin's config.
        self.digests_converge(admin, "digest equality after teardown")
            .await?;
        let mut failures = Vec::new();
        for (i, p) in self.scenario.teardown.probes.iter().enumerate() {
            if let Err(miss) = self.probe_once(&p.request, &p.expect).await {
                failures.push(format!("  teardown probe {i}: {miss}"));
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(RunErrorKind::ChecksFailed(failures))
        }
    }
}
