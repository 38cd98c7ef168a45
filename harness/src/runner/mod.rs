//! Runs one scenario under one sync mode on a fresh topology:
//!
//! ```text
//! start ─▶ precheck ─▶ setup ─▶ wait ─▶ checks ─▶ steps ─▶ teardown ─▶ logs ─▶ stop
//!          digests      create   probe   each     each:    restore plugins, batch delete,
//!          equal; probe selectors converges judged  change,  GET → 404, probe route
//!          not passing  + rules  + digests (judge/) wait,    absent, teardown probes,
//!                                                  checks   digests equal
//! ```
//!
//! With several admins and gateways (`topology`), admin calls go to the first running admin
//! (a step's changes to its `via` admin when it names one),
//! every wait and digest equality covers every running gateway (each gateway's digest must
//! equal the admin's), a step's `during` probe goes to each running gateway in turn, and
//! probe checks and teardown probes to every running gateway, the other checks to the first
//! running one. A fault step keeps track of which run.
//!
//! Setup first sets `setup.plugins` (config with its placeholders filled in from the
//! topology's components, enabled flag); those plugins are put back with the step ones.
//!
//! Every change (setup, each step, teardown) is timed from the admin's 2xx to the gateway
//! applying it and to the first pass of its wait; every check's verdict and measurements go
//! out as [`Event::CheckFinished`] and into the case's [`CaseRecord`], passed or failed.
//! This file holds the case and what every phase shares (which processes run, logins, the
//! record); each phase has its room: [`setup`] (precheck and setup), [`waits`] (wait probes
//! and digest equality), [`steps`] (changes, `isolated`), [`faults`], [`during`],
//! [`teardown`], [`logs`] (the WARN and ERROR lines of the case against `expectLogs`). [`made`] keeps what setup made current; [`checks`] observes and judges each
//! check kind.

mod checks;
mod churn;
mod during;
mod faults;
mod leak;
mod logs;
mod made;
mod refused;
mod restart;
mod setup;
mod skips;
mod steps;
mod teardown;
mod traffic;
mod waits;

pub(crate) use self::setup::register_client;
pub use self::skips::{ExpectedSkip, expected_skips};

pub(crate) use self::checks::timed_toggle;

use model::lock::MutexExt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use model::{AppliedDigest, SyncMode};

use crate::backend::{Backend, BackendKind, Capabilities};
use crate::client::{AdminClient, GatewayClient};
use crate::error::{ClientError, RunError, RunErrorKind, Step};
use crate::judge::Measurements;
use crate::lower::Addresses;
use crate::probe::Names;
use crate::report::{CaseId, CaseRecord, ChangeTiming, CheckOutcome, CheckReport, Event};
use crate::scenario::Scenario;
use crate::scenario::ast::StepSpec;
use crate::topology::{Shape, Topology};
use crate::wait::Converged;
use crate::{RunMode, RunOptions};

use crate::client::admin::{ADMIN_PASSWORD, ADMIN_USER};

/// Why a case on a target without gantry's config digest has no digest equality.
const NO_DIGEST: &str = "the target serves no config digest (GET /actuator/digest): each \
    change is judged converged by its wait probes only, and no change has an applied time";

/// Lines of each service log attached to a failure.
const LOG_LINES: usize = 40;

type StepResult<T> = Result<T, (Step, RunErrorKind)>;

fn at<E: Into<RunErrorKind>>(step: Step) -> impl FnOnce(E) -> (Step, RunErrorKind) {
    move |e| (step, e.into())
}

/// Wall-clock µs since the Unix epoch (the clock the gateway's `appliedAtUs` uses).
fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Runs `scenario` under `mode`, reporting progress to `events`: what it recorded (checks,
/// change timings, digests), or why it failed with what it had recorded by then.
pub async fn run_case(
    scenario: &Scenario,
    mode: SyncMode,
    backend: &Backend,
    opts: &RunOptions,
    events: &(dyn Fn(Event) + Send + Sync),
) -> Result<CaseRecord, RunError> {
    let stretch = opts.run_mode.map_or(1, RunMode::stretch);
    let scenario = &*scenario.under(opts.run_mode);
    let id = CaseId::new(&scenario.name, mode);
    events(Event::CaseStarted { id: id.clone() });
    let fail = |step, kind, logs, record| RunError {
        case: scenario.name.clone(),
        mode,
        step,
        kind,
        logs,
        record,
    };
    events(Event::StepStarted {
        id: id.clone(),
        step: Step::Start,
    });
    let topo = Topology::start_with(
        backend,
        mode,
        &scenario.upstreams,
        &scenario.components,
        opts.keep,
        &Shape {
            spec: scenario.topology.clone(),
            proxies: scenario
                .steps
                .iter()
                .flat_map(StepSpec::faulted_links)
                .collect(),
            sync_faults: scenario.steps.iter().any(StepSpec::arms_sync_faults),
            clocks: scenario.steps.iter().any(StepSpec::steps_clocks),
            slice_links: match opts.run_mode {
                Some(RunMode::Slice { every_ms }) => {
                    Some(Duration::from_millis(u64::from(every_ms)))
                }
                _ => None,
            },
            disk_faults: scenario.steps.iter().any(StepSpec::fills_disk),
            resources: scenario.resources,
        },
    )
    .await
    .map_err(|e| fail(Step::Start, e.into(), String::new(), CaseRecord::default()))?;
    let addrs: Addresses = scenario
        .upstream_names()
        .map(|name| {
            let at = topo
                .upstream_address(name)
                .expect("the topology started every upstream");
            (name.to_owned(), at)
        })
        .collect();
    let caps = backend.capabilities();
    let leak = match opts.run_mode {
        Some(RunMode::Leak { runs }) => Some(runs),
        _ => None,
    };
    let mut readings = leak::Readings::default();
    let mut record = CaseRecord::default();
    let mut result = Ok(());
    for run in 1..=leak.unwrap_or(1) {
        let case = Case {
            scenario,
            topo: &topo,
            gateways: (0..topo.gateways().len())
                .map(|i| {
                    GatewayClient::new(&topo.client_url(i)).errors_with_200(caps.errors_with_200)
                })
                .collect(),
            caps,
            in_flight: tokio::sync::RwLock::new(()),
            running: Mutex::new(Running {
                admins: vec![true; topo.admins().len()],
                gateways: (0..scenario.topology.gateways)
                    .map(|i| !scenario.topology.late.contains(&i))
                    .collect(),
            }),
            addrs: addrs.clone(),
            backend: backend.kind(),
            seed: opts.seed,
            restart_between_steps: opts.run_mode == Some(RunMode::Restart),
            stretch,
            id: id.clone(),
            events,
            record: Mutex::new(CaseRecord::default()),
            names: Mutex::new(Names::default()),
        };
        let marks = logs::LogMarks::take(&topo);
        result = case.run().await;
        // Judged after a failure too (the report shows it), but the first failure is the
        // case's.
        let logged = case.judge_logs(&marks, logs::skipped_for_run(opts), mode);
        if let (Ok(()), Err(e)) = (&result, logged) {
            result = Err((Step::Logs, e));
        }
        if let Some(external) = topo.external() {
            // Whatever the case left (a failed one stops before its teardown) goes now, so
            // that the next case starts from what the target had.
            let swept = sweep_run(external).await;
            if let (Ok(_), Err(e)) = (&result, swept) {
                result = Err((Step::Teardown, e));
            }
        }
        record = case.record.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Err((step, kind)) = result {
            let kind = match leak {
                Some(runs) => RunErrorKind::InRun {
                    run,
                    runs,
                    kind: Box::new(kind),
                },
                None => kind,
            };
            result = Err((step, kind));
            break;
        }
        if leak.is_some() {
            readings.read(&topo);
        }
    }
    if leak.is_some() && result.is_ok() {
        result = readings
            .judge()
            .map_err(|e| (Step::Teardown, RunErrorKind::Leak(e)));
    }
    let result = match result {
        Ok(()) => Ok(record),
        Err((step, kind)) => {
            let oom = topo.oom_killed().await;
            Err(fail(
                step,
                kind,
                failure_logs(&topo, step, opts, &oom),
                record,
            ))
        }
    };
    topo.close().await;
    result
}

/// Removes what an external run made (its prefix's selectors): an error when there was
/// anything to remove after a passed case's teardown, or when the admin refused.
async fn sweep_run(external: &crate::backend::ExternalBackend) -> Result<(), RunErrorKind> {
    let admin = external.target.login().await?;
    match crate::target::external::sweep(&admin, &external.target.prefix).await? {
        0 => Ok(()),
        count => Err(RunErrorKind::LeftBehind {
            count,
            prefix: external.target.prefix.clone(),
        }),
    }
}

/// The service logs a failure shows, after the admins and gateways the OOM killer ended (`oom`,
/// if any): every service's last lines when a process ended on its
/// own, when the topology did not start, when the backend cannot tell (docker) or with
/// `--verbose`; otherwise a line saying how to see them (a failed expectation is read from
/// its own message, not from 40 lines of logs).
fn failure_logs(topo: &Topology, step: Step, opts: &RunOptions, oom: &[String]) -> String {
    if !oom.is_empty() {
        return format!(
            "\n{} killed by the kernel's OOM killer (docker: OOMKilled){}",
            oom.join(", "),
            topo.log_tails(LOG_LINES)
        );
    }
    let exited = topo.exited();
    let died = match exited.as_deref() {
        Some([]) => None,
        Some(names) => Some(format!("\n{} ended on its own", names.join(", "))),
        None => Some(String::new()),
    };
    match died {
        Some(died) => format!("{died}{}", topo.log_tails(LOG_LINES)),
        None if opts.verbose || step == Step::Start => topo.log_tails(LOG_LINES),
        None => "\n(no process died; `--verbose` shows the service logs, GANTRY_KEEP=1 keeps them)"
            .to_owned(),
    }
}

/// Which admins and gateways run, by index, as the steps' faults leave them.
struct Running {
    admins: Vec<bool>,
    gateways: Vec<bool>,
}

struct Case<'a> {
    scenario: &'a Scenario,
    topo: &'a Topology,
    /// A client per gateway, by index.
    gateways: Vec<GatewayClient>,
    /// Which admins and gateways run.
    running: Mutex<Running>,
    /// Held (shared) by each `during` probe while it picks a running gateway and sends; a
    /// gateway going down is marked so, then this is taken exclusively once, so no probe is
    /// left in flight to it (a probe to a paused gateway would hang until its timeout).
    in_flight: tokio::sync::RwLock<()>,
    /// Where each upstream listens, as the gateway reaches it.
    addrs: Addresses,
    backend: BackendKind,
    /// What the admin and gateway offer besides ShenYu's protocol.
    caps: Capabilities,
    seed: u64,
    /// Every running gateway restarted between every two steps (`--run-mode restart`).
    restart_between_steps: bool,
    /// How many times as long the steps' `converge` bounds are (`RunMode::stretch`; the
    /// waits' timeouts are stretched in `scenario` already).
    stretch: u32,
    id: CaseId,
    events: &'a (dyn Fn(Event) + Send + Sync),
    /// What the reports get, passed or failed.
    record: Mutex<CaseRecord>,
    /// Setup objects by id, for `selector` and `rule` expectations.
    names: Mutex<Names>,
}

impl Case<'_> {
    fn step(&self, step: Step) {
        (self.events)(Event::StepStarted {
            id: self.id.clone(),
            step,
        });
    }

    fn record(&self, f: impl FnOnce(&mut CaseRecord)) {
        f(&mut self.record.locked());
    }

    async fn run(&self) -> StepResult<()> {
        if !self.caps.digest {
            self.record(|r| {
                r.checks.push(CheckReport {
                    name: "digest equality".into(),
                    path: "(every change)".into(),
                    step: None,
                    kind: crate::report::events::DIGEST_CHECK,
                    outcome: CheckOutcome::Skipped(NO_DIGEST.into()),
                    elapsed_ms: 0.0,
                    measurements: Measurements::None,
                });
            });
        }
        self.step(Step::Precheck);
        let mut admin = self.login().await.map_err(at(Step::Precheck))?;
        self.precheck(&admin).await?;
        self.step(Step::Setup);
        let mut made = self.setup(&admin).await?;
        let committed = now_us();
        *self.names.locked() = made.names();
        self.step(Step::Wait);
        let converge = self
            .wait_for(&self.scenario.wait, "the wait probe")
            .await
            .map_err(at(Step::Wait))?;
        self.record(|r| r.converge_ms = Some(millis(converge.first_pass)));
        let applied = self
            .digests_converge(&admin, "digest equality after the wait")
            .await
            .map_err(at(Step::Wait))?;
        self.timing("setup", committed, applied.as_ref(), converge);
        self.step(Step::Checks);
        self.checks(&admin, &self.scenario.checks, None, &mut made)
            .await
            .map_err(at(Step::Checks))?;
        let mut plugins = Vec::new();
        if !self.scenario.steps.is_empty() {
            self.step(Step::Steps);
        }
        let steps = self.steps(&mut admin, &mut made, &mut plugins).await;
        // Plugins a step or setup changed are restored even when a step failed.
        let mut restored = self.restore_plugins(&admin, &plugins).await;
        for original in &made.plugins {
            let put_back = admin.update_plugin(original).await.map_err(Into::into);
            restored = restored.and(put_back);
        }
        steps?;
        restored.map_err(at(Step::Teardown))?;
        self.step(Step::Teardown);
        self.teardown(&admin, &made)
            .await
            .map_err(at(Step::Teardown))?;
        Ok(())
    }

    /// Records a change's times: admin 2xx at `committed` (µs) → the gateway's applied time
    /// of the converged digest, and → the end of the first pass of its wait's streak (the
    /// wait starts right after the 2xx).
    fn timing(
        &self,
        change: &str,
        committed: u64,
        applied: Option<&AppliedDigest>,
        wait: Converged,
    ) {
        let timing = ChangeTiming {
            change: change.to_owned(),
            applied_ms: applied.map(|a| a.applied_at_us.saturating_sub(committed) as f64 / 1000.0),
            probe_ms: wait.first_seen.as_secs_f64() * 1000.0,
            converged_ms: now_us().saturating_sub(committed) as f64 / 1000.0,
        };
        tracing::info!(case = %self.id, change, applied_ms = ?timing.applied_ms, probe_ms = timing.probe_ms, "change live");
        self.record(|r| r.timings.push(timing));
    }

    /// Logs in to the first running admin.
    async fn login(&self) -> Result<AdminClient, ClientError> {
        self.login_to(self.first_admin().unwrap_or(0)).await
    }

    /// Logs in to admin `i`.
    async fn login_to(&self, i: usize) -> Result<AdminClient, ClientError> {
        AdminClient::login(self.topo.admins()[i].url(), ADMIN_USER, ADMIN_PASSWORD).await
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Running> {
        self.running.locked()
    }

    /// The index of the first running admin, if one runs.
    fn first_admin(&self) -> Option<usize> {
        self.running().admins.iter().position(|r| *r)
    }

    /// The indexes of the running gateways.
    fn running_gateways(&self) -> Vec<usize> {
        let running = self.running();
        (0..running.gateways.len())
            .filter(|&i| running.gateways[i])
            .collect()
    }

    /// The index of the first running gateway: checks and probes go through it (the
    /// parse-time checks make sure one runs at the end of every step).
    fn primary(&self) -> usize {
        self.running().gateways.iter().position(|r| *r).unwrap_or(0)
    }

    /// The first running gateway's client.
    fn gateway(&self) -> &GatewayClient {
        &self.gateways[self.primary()]
    }

    /// How failures name gateway `i`: `the gateway`, or `gateway[i]` when there are several.
    fn gateway_name(&self, i: usize) -> String {
        if self.gateways.len() == 1 {
            "the gateway".to_owned()
        } else {
            format!("gateway[{i}]")
        }
    }
}
