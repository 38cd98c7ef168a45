//! The topology histories run on, and one history's run on it: apply, judge, clean up.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use model::SyncMode;

use super::super::checker::Class;
use super::super::history::History;
use super::super::model::Model;
use super::modes::protocol_fault;
use crate::backend::Backend;
use crate::client::{AdminClient, GatewayClient};
use crate::lower::divide_handle;
use crate::scenario::ast::{FaultAction, Link, TopologySpec, UpstreamDecl};
use crate::topology::{Shape, Topology};
use crate::wait::{WaitPolicy, await_convergence};

/// Time between probe rounds.
pub(super) const POLL: Duration = Duration::from_millis(25);

/// A topology (one admin, one or more gateways, their sync connections through the fault
/// proxy, echo upstreams `alpha` and `beta`) on which histories run one after another, each
/// on routes of its own (`/conv/<case>/<key>`).
#[derive(Debug)]
pub struct Live {
    pub(super) topo: Topology,
    pub(super) admin: AdminClient,
    pub(super) gateways: Vec<GatewayClient>,
    pub(super) plugin_id: String,
    pub(super) mode: SyncMode,
    /// The divide handles sending to alpha and to beta.
    pub(super) handles: [String; 2],
    /// Selectors the admin holds besides ours.
    pub(super) baseline: usize,
    pub(super) next_case: u64,
    /// How long a passing history's cleanup (its selectors deleted) may take to reach the
    /// gateways: the property's bound.
    pub(super) clean_bound: Duration,
    /// Whether the last history failed (its gateways may hold anything: they are restarted
    /// before the next one without waiting).
    pub(super) last_failed: bool,
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
    /// The same per `Fault::kind`.
    pub fault_kinds: BTreeMap<&'static str, usize>,
    /// The revision etcd was last compacted to.
    pub(super) compacted: Option<i64>,
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
pub(crate) struct CaseState {
    pub(crate) model: Model,
    /// Per route: its selector's id and its rule's id.
    pub(super) ids: BTreeMap<u8, (String, Option<String>)>,
    /// Per registered application: the ids of the divide and contextPath selectors the
    /// admin made for it.
    pub(super) registered: BTreeMap<u8, Vec<String>>,
    /// Operations the admin acknowledged.
    pub(super) acknowledged: usize,
    /// Registrations among them.
    pub(super) registrations: usize,
    /// Acknowledged operations that changed something (at least one etcd write each, in the
    /// etcd mode).
    pub(super) writes: i64,
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
            proxies: [Link::Sync].into(),
            sync_faults: protocol_fault(mode).is_some(),
            clocks: false,
            slice_links: None,
            disk_faults: false,
            resources: Default::default(),
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
            let upstream = topo
                .upstream_address(name)
                .ok_or(format!("no upstream {name}"))?;
            Ok(divide_handle(&upstream))
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

    /// `Ok` when every gateway serves the admin's config (with `selectors` selectors, if
    /// given), else what differs.
    pub(super) async fn digest_gap(&self, selectors: Option<usize>) -> Result<(), String> {
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
}
