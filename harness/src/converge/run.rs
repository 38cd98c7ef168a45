//! Applying a history to a live topology and observing the gateways afterwards.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use model::{
    ConditionDto, DivideUpstream, MatchMode, RuleDto, SelectorDto, SyncFaultKind, SyncMode,
};

use super::checker::{self, Answer, Class, Sample, Tally, classify};
use super::history::{Fault, History, Op, Step, Upstream};
use super::model::{Expect, Model};
use crate::backend::{Backend, BackendKind};
use crate::client::{AdminClient, GatewayClient};
use crate::fault::Mode as ProxyMode;
use crate::lower::{custom_selector, divide_rule};
use crate::runner::register_client;
use crate::scenario::ast::{
    FaultAction, RequestSpec, SyncFault, Target, TopologySpec, UpstreamDecl,
};
use crate::topology::{Shape, Topology};
use crate::upstream::UPSTREAM_HEADER;
use crate::wait::{WaitPolicy, await_convergence};

/// Time between probe rounds.
const POLL: Duration = Duration::from_millis(25);
/// An element is stable once it has answered right for this long.
const SETTLE: Duration = Duration::from_millis(500);

/// A topology (one admin, one or more gateways, their sync connections through the fault
/// proxy, echo upstreams `alpha` and `beta`) on which histories run one after another, each
/// on routes of its own (`/conv/<case>/<key>`).
#[derive(Debug)]
pub struct Live {
    topo: Topology,
    admin: AdminClient,
    gateways: Vec<GatewayClient>,
    plugin_id: String,
    mode: SyncMode,
    /// The divide handles sending to alpha and to beta.
    handles: [String; 2],
    /// Selectors the admin holds besides ours.
    baseline: usize,
    next_case: u64,
    /// How long a passing history's cleanup (its selectors deleted) may take to reach the
    /// gateways: the property's bound.
    clean_bound: Duration,
    /// Whether the last history failed (its gateways may hold anything: they are restarted
    /// before the next one without waiting).
    last_failed: bool,
    /// The longest a passing history's cleanup took to reach every gateway.
    pub slowest_clean: Duration,
    /// Each time a passing history's cleanup did not reach the gateways within
    /// `clean_bound`, what was still different (the gateways were then restarted).
    pub resets: Vec<String>,
    /// Operations the admin acknowledged, over every case.
    pub acknowledged: usize,
    /// Registrations among them.
    pub registrations: usize,
    /// Faults injected (and healed), over every case.
    pub faults: usize,
    /// The same per [`Fault::kind`].
    pub fault_kinds: BTreeMap<&'static str, usize>,
    /// The revision etcd was last compacted to.
    compacted: Option<i64>,
}

/// What one history did.
#[derive(Debug)]
pub struct CaseReport {
    /// Per element (route × gateway): the gateway's index and the element's class.
    pub classes: Vec<(usize, Class)>,
    /// `Err` describes every element not ok, a digest that disagrees, or what broke.
    pub verdict: Result<(), String>,
}

/// The acknowledged state of one case: the model and the ids the admin gave.
#[derive(Default)]
struct CaseState {
    model: Model,
    /// Per route: its selector's id and its rule's id.
    ids: BTreeMap<u8, (String, Option<String>)>,
    /// Per registered application: the ids of the divide and contextPath selectors the
    /// admin made for it.
    registered: BTreeMap<u8, Vec<String>>,
    /// Operations the admin acknowledged.
    acknowledged: usize,
    /// Registrations among them.
    registrations: usize,
    /// Acknowledged operations that changed something (at least one etcd write each, in the
    /// etcd mode).
    writes: i64,
}

impl Live {
    /// Starts the topology in `mode` and waits until the gateways serve the admin's config;
    /// each history's cleanup must then reach the gateways within `bound`.
    pub async fn start(
        backend: &Backend,
        mode: SyncMode,
        gateways: u8,
        keep: bool,
        bound: Duration,
    ) -> Result<Live, String> {
        let upstreams = [UpstreamDecl::echo("alpha"), UpstreamDecl::echo("beta")];
        let shape = Shape {
            spec: TopologySpec {
                gateways,
                ..TopologySpec::default()
            },
            sync_proxy: true,
            sync_faults: protocol_fault(mode).is_some(),
        };
        let topo = Topology::start_with(backend, mode, &upstreams, &[], keep, &shape)
            .await
            .map_err(|e| format!("starting the {mode} topology: {e}"))?;
        let admin = AdminClient::login(topo.admin().url(), "admin", "123456")
            .await
            .map_err(|e| format!("logging in to the admin: {e}"))?;
        let gateways = topo
            .gateways()
            .iter()
            .map(|g| GatewayClient::new(g.url()))
            .collect();
        let plugin_id = admin
            .plugin_id("divide")
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the admin has no divide plugin")?;
        let handle = |name: &str| -> Result<String, String> {
            let upstream = topo.upstream(name).ok_or(format!("no upstream {name}"))?;
            serde_json::to_string(&[DivideUpstream {
                protocol: "http://".to_owned(),
                upstream_url: upstream.host_port(),
                upstream_host: Some("localhost".to_owned()),
                weight: 50,
                status: true,
                ..Default::default()
            }])
            .map_err(|e| e.to_string())
        };
        let handles = [handle("alpha")?, handle("beta")?];
        let baseline = admin.digest().await.map_err(|e| e.to_string())?.selectors;
        let mut live = Live {
            topo,
            admin,
            gateways,
            plugin_id,
            mode,
            handles,
            baseline,
            next_case: 1,
            clean_bound: bound,
            last_failed: false,
            slowest_clean: Duration::ZERO,
            resets: Vec::new(),
            acknowledged: 0,
            registrations: 0,
            faults: 0,
            fault_kinds: BTreeMap::new(),
            compacted: None,
        };
        live.clean().await?;
        Ok(live)
    }

    /// Runs `history` on fresh routes, observes every gateway for at most `bound` after the
    /// last heal, deletes the routes again.
    pub async fn run(&mut self, history: &History, bound: Duration) -> Result<CaseReport, String> {
        self.clean().await?;
        let case = self.next_case;
        self.next_case += 1;
        let mut state = CaseState::default();
        let applied = self.apply(case, history, &mut state).await;
        self.acknowledged += state.acknowledged;
        self.registrations += state.registrations;
        let report = match applied {
            Ok(healed) => self.judge(case, history, &state.model, healed, bound).await,
            Err(e) => CaseReport {
                classes: Vec::new(),
                verdict: Err(e),
            },
        };
        if history.touches_plugin() {
            self.admin
                .enable_plugins(std::slice::from_ref(&self.plugin_id), true)
                .await
                .map_err(|e| format!("enabling the divide plugin again after case {case}: {e}"))?;
        }
        let ids: Vec<String> = state
            .ids
            .into_values()
            .map(|(s, _)| s)
            .chain(state.registered.into_values().flatten())
            .collect();
        if !ids.is_empty() {
            self.admin
                .delete_selectors(&ids)
                .await
                .map_err(|e| format!("deleting case {case}'s selectors: {e}"))?;
        }
        self.last_failed = report.verdict.is_err();
        Ok(report)
    }

    /// Applies every step; returns when the last fault was healed (or the last operation
    /// acknowledged). Every fault is healed even when an operation inside it fails.
    async fn apply(
        &mut self,
        case: u64,
        history: &History,
        state: &mut CaseState,
    ) -> Result<Instant, String> {
        for step in &history.0 {
            match step {
                Step::Op(op) => self.op(case, *op, state).await?,
                Step::Fault { fault, during } => {
                    let etcd_before = self.inject(*fault).await?;
                    self.faults += 1;
                    *self.fault_kinds.entry(fault.kind()).or_default() += 1;
                    let writes = state.writes;
                    let mut done = Ok(());
                    for op in during {
                        done = self.op(case, *op, state).await;
                        if done.is_err() {
                            break;
                        }
                    }
                    // A compaction covers the operations during it: at least one etcd write
                    // each that changed something (the runner's `compact: etcd` counts one per
                    // admin change).
                    let writes = state.writes - writes;
                    let others = match fault.one_gateway() {
                        Some(down) => self.others_answer(down).await,
                        None => Ok(()),
                    };
                    self.heal(*fault, etcd_before.map(|r| r + writes)).await?;
                    done?;
                    others?;
                }
            }
        }
        Ok(Instant::now())
    }

    /// Sends `op` when it applies; records it in the model once the admin acknowledged it.
    async fn op(&self, case: u64, op: Op, state: &mut CaseState) -> Result<(), String> {
        if !state.model.applies(op) {
            return Ok(());
        }
        let failed = |e: &dyn std::fmt::Display| format!("the admin failed `{op}`: {e}");
        match op {
            Op::Put { key, upstream } => {
                let selector = match state.ids.get(&key) {
                    Some((id, _)) => {
                        let dto = self.selector(case, key, upstream, state.model.enabled(key));
                        self.admin
                            .update_selector(id, &dto)
                            .await
                            .map_err(|e| failed(&e))?;
                        id.clone()
                    }
                    None => {
                        let dto = self.selector(case, key, upstream, true);
                        let id = self
                            .admin
                            .create_selector(&dto)
                            .await
                            .map_err(|e| failed(&e))?;
                        state.ids.insert(key, (id.clone(), None));
                        id
                    }
                };
                if !state.model.has_rule(key) {
                    let rule = self
                        .admin
                        .create_rule(&rule(case, key, &selector))
                        .await
                        .map_err(|e| failed(&e))?
                        .ok_or_else(|| failed(&"the new rule is not listed"))?;
                    if let Some(ids) = state.ids.get_mut(&key) {
                        ids.1 = Some(rule);
                    }
                }
            }
            Op::Enable { key, on } => {
                let (id, _) = &state.ids[&key];
                let upstream = match state.model.upstream(key) {
                    Some(u) => u,
                    None => return Err(failed(&"harness bug: the route has no upstream")),
                };
                let dto = self.selector(case, key, upstream, on);
                self.admin
                    .update_selector(id, &dto)
                    .await
                    .map_err(|e| failed(&e))?;
            }
            Op::Delete { key } => {
                let (id, _) = &state.ids[&key];
                self.admin
                    .delete_selectors(std::slice::from_ref(id))
                    .await
                    .map_err(|e| failed(&e))?;
                state.ids.remove(&key);
            }
            Op::DeleteRule { key } => {
                let rule = state.ids.get_mut(&key).and_then(|ids| ids.1.take());
                let rule = rule.ok_or_else(|| failed(&"harness bug: no rule id"))?;
                self.admin
                    .delete_rules(&[rule])
                    .await
                    .map_err(|e| failed(&e))?;
            }
            Op::Plugin { on } => {
                self.admin
                    .enable_plugins(std::slice::from_ref(&self.plugin_id), on)
                    .await
                    .map_err(|e| failed(&e))?;
            }
            Op::Register { key, upstream } => {
                let address = self
                    .topo
                    .upstream(upstream.name())
                    .ok_or_else(|| failed(&"harness bug: no such upstream"))?
                    .host_port();
                let app = format!("conv-{case}-app-{key}");
                let paths = [registered_path(case, key)];
                let ids = register_client(
                    &self.admin,
                    &app,
                    &context_path(case, key),
                    &paths,
                    &address,
                )
                .await
                .map_err(|e| failed(&e))?;
                state.registered.insert(key, ids);
                state.registrations += 1;
            }
        }
        state.writes += i64::from(state.model.writes(op));
        state.model.acknowledged(op);
        state.acknowledged += 1;
        Ok(())
    }

    /// Starts `fault`; for a compaction, returns etcd's revision before it.
    async fn inject(&self, fault: Fault) -> Result<Option<i64>, String> {
        let done = match fault {
            Fault::RestartGateway => self.on_gateways(FaultAction::Stop).await,
            Fault::PauseGateway => self.on_gateways(FaultAction::Pause).await,
            Fault::RestartOneGateway { index } => self.on_gateway(index, FaultAction::Stop).await,
            Fault::PauseOneGateway { index } => self.on_gateway(index, FaultAction::Pause).await,
            Fault::Partition => self.topo.partition(ProxyMode::Blackhole).await,
            Fault::KillAdmin => self.topo.fault(FaultAction::Kill, ADMIN).await,
            Fault::PauseAdmin => self.topo.fault(FaultAction::Pause, ADMIN).await,
            Fault::KillStore => self.topo.fault(FaultAction::Kill, self.store()?).await,
            Fault::Protocol => {
                let kind = protocol_fault(self.mode).ok_or(format!(
                    "no protocol fault heals by itself in the {} mode",
                    self.mode
                ))?;
                let armed = SyncFault {
                    kind,
                    count: 1,
                    delay: None,
                };
                return self
                    .admin
                    .arm_sync_fault(&armed)
                    .await
                    .map(|()| None)
                    .map_err(|e| format!("arming {}: {e}", kind.name()));
            }
            Fault::Compact { partitioned } => {
                let before = self
                    .topo
                    .etcd_revision()
                    .await
                    .map_err(|e| format!("injecting {fault:?}: {e}"))?;
                if partitioned {
                    self.topo
                        .partition(ProxyMode::Cut)
                        .await
                        .map_err(|e| format!("injecting {fault:?}: {e}"))?;
                }
                return Ok(Some(before));
            }
        };
        done.map(|()| None)
            .map_err(|e| format!("injecting {fault:?}: {e}"))
    }

    /// Ends `fault`; after an admin restart logs in again (its tokens do not survive it). A
    /// compaction compacts etcd once its revision is at least `etcd_least`, then heals the
    /// partition, if any (also when the compaction failed).
    async fn heal(&mut self, fault: Fault, etcd_least: Option<i64>) -> Result<(), String> {
        let done = match fault {
            Fault::RestartGateway => self.on_gateways(FaultAction::Start).await,
            Fault::PauseGateway => self.on_gateways(FaultAction::Resume).await,
            Fault::RestartOneGateway { index } => self.on_gateway(index, FaultAction::Start).await,
            Fault::PauseOneGateway { index } => self.on_gateway(index, FaultAction::Resume).await,
            Fault::Compact { partitioned } => {
                let compacted = self.compact(etcd_least.unwrap_or_default()).await;
                let healed = if partitioned {
                    self.topo.heal().await
                } else {
                    Ok(())
                };
                compacted.and(healed).map(drop)
            }
            Fault::Partition => self.topo.heal().await,
            Fault::KillAdmin => self.topo.fault(FaultAction::Start, ADMIN).await,
            Fault::PauseAdmin => self.topo.fault(FaultAction::Resume, ADMIN).await,
            Fault::KillStore => self.topo.fault(FaultAction::Start, self.store()?).await,
            // It heals by itself (or hits the next push, if none came).
            Fault::Protocol => Ok(()),
        };
        done.map_err(|e| format!("healing {fault:?}: {e}\n{}", self.topo.log_tails(20)))?;
        if fault == Fault::KillAdmin {
            self.admin = AdminClient::login(self.topo.admin().url(), "admin", "123456")
                .await
                .map_err(|e| format!("logging in to the restarted admin: {e}"))?;
        }
        Ok(())
    }

    /// The store [`Fault::KillStore`] kills in this mode.
    fn store(&self) -> Result<Target, String> {
        store_target(self.mode).ok_or(format!("the {} mode has no store to kill", self.mode))
    }

    /// Compacts etcd once its revision is at least `least`, unless nothing was written since
    /// the last compaction (etcd refuses to compact a revision twice).
    async fn compact(&mut self, least: i64) -> Result<(), crate::BackendError> {
        let now = self.topo.etcd_revision().await?;
        if self.compacted.is_some_and(|c| now <= c && least <= c) {
            return Ok(());
        }
        self.compacted = Some(self.topo.compact_etcd(least).await?);
        Ok(())
    }

    /// `Ok` when every gateway but `down` answers (its `/actuator/digest`) while `down`
    /// alone is stopped or paused.
    async fn others_answer(&self, down: u8) -> Result<(), String> {
        for (g, client) in self.gateways.iter().enumerate() {
            if g == usize::from(down) {
                continue;
            }
            client.digest().await.map_err(|e| {
                format!("gateway[{g}] did not answer while only gateway[{down}] was down: {e}")
            })?;
        }
        Ok(())
    }

    /// `action` on gateway `index` only.
    async fn on_gateway(&self, index: u8, action: FaultAction) -> Result<(), crate::BackendError> {
        self.topo.fault(action, Target::Gateway(Some(index))).await
    }

    async fn on_gateways(&self, action: FaultAction) -> Result<(), crate::BackendError> {
        for i in 0..self.gateways.len() {
            let i = u8::try_from(i).unwrap_or(u8::MAX);
            self.topo.fault(action, Target::Gateway(Some(i))).await?;
        }
        Ok(())
    }

    /// Probes every route of the history on every gateway until each is stable or `bound`
    /// after `healed` has passed, classifies them, and checks the digests agree.
    async fn judge(
        &self,
        case: u64,
        history: &History,
        model: &Model,
        healed: Instant,
        bound: Duration,
    ) -> CaseReport {
        let probed = history
            .keys()
            .into_iter()
            .map(|k| (Probed::Route(k), model.expect(k)))
            .chain(
                history
                    .registered()
                    .into_iter()
                    .map(|k| (Probed::App(k), model.expect_registered(k))),
            );
        let elements: Vec<(Probed, usize, Expect)> = probed
            .flat_map(|(p, e)| (0..self.gateways.len()).map(move |g| (p, g, e)))
            .collect();
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); elements.len()];
        // The admin's config is final once the history is applied.
        let admin = self.admin.digest().await.ok().map(|d| d.digest);
        let mut caught_up: Vec<Option<Duration>> = vec![None; self.gateways.len()];
        loop {
            self.note_caught_up(admin.as_deref(), healed, &mut caught_up)
                .await;
            let at = healed.elapsed();
            let answers = join_all(
                elements
                    .iter()
                    .map(|&(p, g, _)| self.probe(&self.gateways[g], p.path(case))),
            )
            .await;
            for (s, answer) in samples.iter_mut().zip(answers) {
                s.push(Sample { at, answer });
            }
            let settled = elements
                .iter()
                .zip(&samples)
                .all(|(&(_, _, e), s)| right_for(e, s) >= SETTLE);
            if settled || healed.elapsed() >= bound {
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        let classes: Vec<(usize, Class)> = elements
            .iter()
            .zip(&samples)
            .map(|(&(_, g, e), s)| (g, classify(e, s, caught_up[g].unwrap_or(Duration::MAX))))
            .collect();
        let mut problems = String::new();
        for ((&(k, g, e), s), (_, class)) in elements.iter().zip(&samples).zip(&classes) {
            if !matches!(class, Class::Ok { .. }) {
                let _ = write!(
                    problems,
                    "\n  {k} on {}: {class:?} (the model says {e}; {} samples; {})",
                    self.topo.gateways()[g].name(),
                    s.len(),
                    checker::changes(s)
                );
            }
        }
        if let Err(e) = self
            .digests_agree(bound.saturating_sub(healed.elapsed()))
            .await
        {
            let _ = write!(problems, "\n  {e}");
        }
        let verdict = if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "after the history, within {:.1} s of the last heal:{problems}",
                bound.as_secs_f64()
            ))
        };
        CaseReport { classes, verdict }
    }

    /// Updates, per gateway, since when (from `healed`) its digest has been equal to the
    /// admin's (`admin`) in every round: `None` as soon as a round sees it differ (a gateway
    /// replaying the history can pass through a state equal to the final one, then leave it).
    async fn note_caught_up(
        &self,
        admin: Option<&str>,
        healed: Instant,
        equal_since: &mut [Option<Duration>],
    ) {
        let Some(admin) = admin else { return };
        let at = healed.elapsed();
        for (g, client) in self.gateways.iter().enumerate() {
            let equal = client
                .digest()
                .await
                .is_ok_and(|d| d.report.digest == admin);
            equal_since[g] = match (equal, equal_since[g]) {
                (true, since) => since.or(Some(at)),
                (false, _) => None,
            };
        }
    }

    async fn probe(&self, gateway: &GatewayClient, path: String) -> Answer {
        let req = RequestSpec {
            method: "GET".to_owned(),
            path,
            headers: BTreeMap::new(),
            query: BTreeMap::new(),
            body: None,
        };
        let resp = match gateway.send(&req).await {
            Ok(r) => r,
            Err(e) => return Answer::Other(e.to_string()),
        };
        Answer::from_response(resp.status, resp.header(UPSTREAM_HEADER), &resp.body)
    }

    /// Waits `within` (at least 100 ms) until every gateway's digest equals the admin's.
    async fn digests_agree(&self, within: Duration) -> Result<(), String> {
        let policy = WaitPolicy {
            consecutive: 1,
            interval: POLL,
            timeout: within.max(Duration::from_millis(100)),
        };
        await_convergence(policy, || self.digest_gap(None))
            .await
            .map(drop)
            .map_err(|t| format!("digest equality: {t}"))
    }

    /// `Ok` when every gateway serves the admin's config (with `selectors` selectors, if
    /// given), else what differs.
    async fn digest_gap(&self, selectors: Option<usize>) -> Result<(), String> {
        let a = self.admin.digest().await.map_err(|e| e.to_string())?;
        if let Some(want) = selectors
            && a.selectors != want
        {
            return Err(format!(
                "the admin has {} selectors, want {want}",
                a.selectors
            ));
        }
        for (g, client) in self.gateways.iter().enumerate() {
            let d = client.digest().await.map_err(|e| e.to_string())?;
            if d.report.digest != a.digest {
                return Err(format!(
                    "admin {} ({} selectors, {} rules), {} {} ({} selectors, {} rules)",
                    a.digest,
                    a.selectors,
                    a.rules,
                    self.topo.gateways()[g].name(),
                    d.report.digest,
                    d.report.selectors,
                    d.report.rules
                ));
            }
        }
        Ok(())
    }

    /// Waits until the gateways hold the admin's config without any case's routes. After a
    /// passing history that must happen within the bound, else what still differs is
    /// recorded in [`Live::resets`]; after a failing one (or a reset) the gateways are
    /// restarted, and must then serve the admin's config within 30 s.
    async fn clean(&mut self) -> Result<(), String> {
        let want = Some(self.baseline);
        let policy = |timeout| WaitPolicy {
            consecutive: 1,
            interval: POLL,
            timeout,
        };
        if !std::mem::take(&mut self.last_failed) {
            let started = Instant::now();
            match await_convergence(policy(self.clean_bound), || self.digest_gap(want)).await {
                Ok(_) => {
                    self.slowest_clean = self.slowest_clean.max(started.elapsed());
                    return Ok(());
                }
                Err(t) => self.resets.push(match self.next_case - 1 {
                    0 => format!("at start: {t}"),
                    case => format!(
                        "after history {case} (its selectors deleted): {t}\n{}",
                        self.topo.log_tails(20)
                    ),
                }),
            }
        }
        self.on_gateways(FaultAction::Restart)
            .await
            .map_err(|e| format!("restarting the gateways between cases: {e}"))?;
        await_convergence(policy(Duration::from_secs(30)), || self.digest_gap(want))
            .await
            .map(drop)
            .map_err(|t| format!("between cases: {t}\n{}", self.topo.log_tails(20)))
    }

    fn selector(&self, case: u64, key: u8, upstream: Upstream, enabled: bool) -> SelectorDto {
        let handle = match upstream {
            Upstream::Alpha => &self.handles[0],
            Upstream::Beta => &self.handles[1],
        };
        let condition = ConditionDto::new("uri", "=", "", &route_path(case, key));
        SelectorDto {
            enabled: Some(enabled),
            ..custom_selector(
                &self.plugin_id,
                &format!("conv-{case}-{key}"),
                handle,
                vec![condition],
            )
        }
    }
}

const ADMIN: Target = Target::Admin(None);

/// The protocol fault [`Fault::Protocol`] arms in `mode`, if any (one the gateway heals by
/// itself: docs/faults.md).
pub fn protocol_fault(mode: SyncMode) -> Option<SyncFaultKind> {
    match mode {
        SyncMode::Websocket => Some(SyncFaultKind::CloseMidPush),
        SyncMode::Http => Some(SyncFaultKind::EmptyAnswer),
        _ => None,
    }
}

/// Whether histories in `mode` on `backend` may compact etcd ([`Fault::Compact`]: the etcd
/// mode on the host backend, as a case file's `compact: etcd`).
pub fn compacts(mode: SyncMode, backend: BackendKind) -> bool {
    mode == SyncMode::Etcd && backend == BackendKind::Host
}

/// The store the gateways sync from in `mode`, if any (what [`Fault::KillStore`] kills).
pub fn store_target(mode: SyncMode) -> Option<Target> {
    match mode {
        SyncMode::Zookeeper => Some(Target::Zookeeper),
        SyncMode::Etcd => Some(Target::Etcd),
        _ => None,
    }
}

/// Route `key` of case `case`.
fn route_path(case: u64, key: u8) -> String {
    format!("/conv/{case}/{key}")
}

/// The context path registered application `key` of case `case` registers.
fn context_path(case: u64, key: u8) -> String {
    format!("/reg/{case}/{key}")
}

/// The one API path registered application `key` of case `case` registers (and is probed
/// on; the registered rule's condition is `uri = ` it).
fn registered_path(case: u64, key: u8) -> String {
    format!("{}/get", context_path(case, key))
}

/// What one element of the checker probes (on every gateway).
#[derive(Debug, Clone, Copy)]
enum Probed {
    /// A route's path.
    Route(u8),
    /// A registered application's API path.
    App(u8),
}

impl Probed {
    fn path(self, case: u64) -> String {
        match self {
            Probed::Route(k) => route_path(case, k),
            Probed::App(k) => registered_path(case, k),
        }
    }
}

impl std::fmt::Display for Probed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Probed::Route(k) => write!(f, "route {k}"),
            Probed::App(k) => write!(f, "registered application {k}"),
        }
    }
}

fn rule(case: u64, key: u8, selector: &str) -> RuleDto {
    let condition = ConditionDto::new("uri", "=", "", &route_path(case, key));
    divide_rule(
        selector,
        &format!("conv-{case}-{key}-rule"),
        MatchMode::And,
        vec![condition],
    )
}

/// How long the element has answered right up to its latest sample (zero if that is wrong).
fn right_for(expect: Expect, samples: &[Sample]) -> Duration {
    let Some(last) = samples.last() else {
        return Duration::ZERO;
    };
    let run_start = samples
        .iter()
        .rposition(|s| !s.answer.agrees(expect))
        .map_or(0, |i| i + 1);
    match samples.get(run_start) {
        Some(first) => last.at - first.at,
        None => Duration::ZERO,
    }
}

/// Adds the report's classes to `tally` and to their gateway's tally in `per_gateway`.
pub fn count(tally: &mut Tally, per_gateway: &mut [Tally], report: &CaseReport) {
    for &(g, c) in &report.classes {
        tally.add(c);
        if let Some(t) = per_gateway.get_mut(g) {
            t.add(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_counted_in_total_and_per_gateway() {
        let ok = Class::Ok {
            stable_after: Duration::ZERO,
        };
        let report = CaseReport {
            classes: vec![(0, ok), (1, Class::Stale), (1, ok), (2, Class::Lost)],
            verdict: Ok(()),
        };
        let mut total = Tally::default();
        let mut per_gateway = vec![Tally::default(); 2];
        count(&mut total, &mut per_gateway, &report);
        assert_eq!((total.ok, total.stale, total.lost), (2, 1, 1));
        assert_eq!((per_gateway[0].ok, per_gateway[0].stale), (1, 0));
        assert_eq!((per_gateway[1].ok, per_gateway[1].stale), (1, 1));
    }

    #[test]
    fn store_kills_exist_in_the_store_modes_only() {
        assert_eq!(store_target(SyncMode::Zookeeper), Some(Target::Zookeeper));
        assert_eq!(store_target(SyncMode::Etcd), Some(Target::Etcd));
        assert_eq!(store_target(SyncMode::Websocket), None);
        assert_eq!(store_target(SyncMode::Http), None);
    }

    #[test]
    fn etcd_compacts_on_the_host_backend_only() {
        assert!(compacts(SyncMode::Etcd, BackendKind::Host));
        assert!(!compacts(SyncMode::Etcd, BackendKind::Docker));
        for mode in [SyncMode::Websocket, SyncMode::Http, SyncMode::Zookeeper] {
            assert!(!compacts(mode, BackendKind::Host));
        }
    }
}
