//! Runs one scenario under one sync mode on a fresh topology:
//!
//! ```text
//! start ─▶ precheck ─▶ setup ─▶ wait ─▶ checks ─▶ steps ─▶ teardown ─▶ stop
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
//! [`made`] keeps what setup made current; [`checks`] observes and judges each check kind.

mod checks;
mod churn;
mod faults;
mod made;
mod refused;
mod skips;

pub use self::skips::{ExpectedSkip, expected_skips};

pub(crate) use self::checks::timed_toggle;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use model::{AppliedDigest, MetaDataRegister, SyncMode, UriRegister};

use self::faults::{Faulted, StepAdmins};
use self::made::{Made, MadeRule, MadeSelector};
use self::refused::{Refused, refused};
use crate::RunOptions;
use crate::backend::{Backend, BackendKind, Capabilities};
use crate::client::{AdminClient, GatewayClient};
use crate::error::{ClientError, RunError, RunErrorKind, Step};
use crate::judge::Measurements;
use crate::lower::{self, Addresses};
use crate::probe::{Names, judge};
use crate::report::{CaseRecord, ChangeTiming, CheckOutcome, CheckReport, Event, FinalDigests};
use crate::scenario::Scenario;
use crate::scenario::ast::{
    AdminChange, Change, Expect, Fault, PluginSetup, Probe, RegistrationSpec, RequestSpec, Route,
    RuleSpec, SelectorSpec, StepSpec, Target, Wait,
};
use crate::scenario::placeholder;
use crate::topology::{Shape, Topology};
use crate::wait::{Converged, WaitPolicy, await_convergence};

use crate::client::admin::{ADMIN_PASSWORD, ADMIN_USER};
/// Why a case on a target without gantry's config digest has no digest equality.
const NO_DIGEST: &str = "the target serves no config digest (GET /actuator/digest): each \
    change is judged converged by its wait probes only, and no change has an applied time";

/// Why a step's `isolated` claim is skipped on a target without gantry's config digest.
const NO_DIGEST_ISOLATION: &str = "the target serves no config digest (GET /actuator/digest): \
    whether the step's change reached the gateway cannot be read";

/// How often a step's `isolated` claim reads the digests.
const ISOLATION_POLL: Duration = Duration::from_millis(20);

/// Lines of each service log attached to a failure.
const LOG_LINES: usize = 40;

/// A passed case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseOutcome {
    /// Scenario name.
    pub case: String,
    /// Sync mode.
    pub mode: SyncMode,
    /// Time from the end of setup to the first pass of the final wait streak.
    pub converge_ms: u64,
    /// Checks, change timings and final digests.
    pub record: CaseRecord,
}

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
            sync_proxy: scenario.steps.iter().any(StepSpec::partitions),
            sync_faults: scenario.steps.iter().any(StepSpec::arms_sync_faults),
        },
    )
    .await
    .map_err(|e| fail(Step::Start, e.into(), String::new(), CaseRecord::default()))?;
    let addrs: Addresses = scenario
        .upstream_names()
        .map(|name| {
            let up = topo
                .upstream(name)
                .expect("the topology started every upstream");
            (name.to_owned(), up.host_port())
        })
        .collect();
    let caps = backend.capabilities();
    let case = Case {
        scenario,
        topo: &topo,
        gateways: topo
            .gateways()
            .iter()
            .map(|g| GatewayClient::new(g.url()).errors_with_200(caps.errors_with_200))
            .collect(),
        caps,
        in_flight: tokio::sync::RwLock::new(()),
        running: Mutex::new(Running {
            admins: vec![true; topo.admins().len()],
            gateways: (0..scenario.topology.gateways)
                .map(|i| !scenario.topology.late.contains(&i))
                .collect(),
        }),
        addrs,
        backend: backend.kind(),
        seed: opts.seed,
        id,
        events,
        record: Mutex::new(CaseRecord::default()),
        names: Mutex::new(Names::default()),
    };
    let mut result = case.run().await;
    if let Some(external) = topo.external() {
        // Whatever the case left (a failed one stops before its teardown) goes now, so that
        // the next case starts from what the target had.
        let swept = sweep_run(external).await;
        if let (Ok(_), Err(e)) = (&result, swept) {
            result = Err((Step::Teardown, e));
        }
    }
    let record = case.record.into_inner().unwrap_or_else(|e| e.into_inner());
    match result {
        Ok(converge) => Ok(CaseOutcome {
            case: scenario.name.clone(),
            mode,
            converge_ms: millis(converge),
            record,
        }),
        Err((step, kind)) => Err(fail(step, kind, failure_logs(&topo, step, opts), record)),
    }
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

/// The service logs a failure shows: every service's last lines when a process ended on its
/// own, when the topology did not start, when the backend cannot tell (docker) or with
/// `--verbose`; otherwise a line saying how to see them (a failed expectation is read from
/// its own message, not from 40 lines of logs).
fn failure_logs(topo: &Topology, step: Step, opts: &RunOptions) -> String {
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

/// What a step's `during` probe saw.
#[derive(Debug, Default)]
struct During {
    sent: u32,
    failed: u32,
    /// The first few misses, with when they happened.
    first: Vec<String>,
    elapsed_ms: f64,
}

impl During {
    /// Why the probe to `path` fails its step: an answer missed, or none was sent (it then
    /// showed nothing about the step).
    fn failure(&self, path: &str) -> Option<String> {
        if self.sent == 0 {
            return Some(format!(
                "`during` sent no request to {path} in the {:.0} ms of the step (no gateway \
                 was running, or the step ended first), so it shows nothing",
                self.elapsed_ms
            ));
        }
        (self.failed > 0).then(|| {
            format!(
                "{} of {} answers during the step missed {path}; first: {}",
                self.failed,
                self.sent,
                self.first.join("; ")
            )
        })
    }
}

/// A plugin whose enabled flag a step changed: its id and original flag.
struct ChangedPlugin {
    id: String,
    enabled: bool,
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
    id: String,
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
        f(&mut self.record.lock().unwrap_or_else(|e| e.into_inner()));
    }

    async fn run(&self) -> StepResult<Duration> {
        if !self.caps.digest {
            self.record(|r| {
                r.checks.push(CheckReport {
                    name: "digest equality".into(),
                    path: "(every change)".into(),
                    step: None,
                    kind: "digest",
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
        *self.names.lock().unwrap_or_else(|e| e.into_inner()) = made.names();
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
        Ok(converge.first_pass)
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

    /// Runs every step: its changes and faults, its wait, digest equality (bounded by
    /// `converge` after faults; skipped while the admin is down) with its `during` probe sent
    /// throughout, then its checks. A started or restarted admin forgets its sessions, so
    /// `admin` logs in again.
    async fn steps(
        &self,
        admin: &mut AdminClient,
        made: &mut Made,
        plugins: &mut Vec<ChangedPlugin>,
    ) -> StepResult<()> {
        let mut faulted = Faulted::default();
        for (i, st) in self.scenario.steps.iter().enumerate() {
            let done = AtomicBool::new(false);
            let work = async {
                let result = self
                    .step_until_converged(i, admin, &mut faulted, made, plugins)
                    .await;
                done.store(true, Ordering::Relaxed);
                result
            };
            let (result, during) = match &st.during {
                Some(probe) => {
                    let (result, during) = tokio::join!(work, self.during(probe, &done));
                    (result, Some(during))
                }
                None => (work.await, None),
            };
            if let (Some(probe), Some(during)) = (&st.during, during) {
                self.during_report(st, i, probe, &during)?;
            }
            result?;
            self.checks(admin, &st.checks, Some(&st.name), made)
                .await
                .map_err(at(Step::Steps))?;
        }
        Ok(())
    }

    /// Step `index`: its changes and faults, its wait and digest equality.
    async fn step_until_converged(
        &self,
        index: usize,
        admin: &mut AdminClient,
        faulted: &mut Faulted,
        made: &mut Made,
        plugins: &mut Vec<ChangedPlugin>,
    ) -> StepResult<()> {
        let st = &self.scenario.steps[index];
        let mut admins = StepAdmins {
            case: admin,
            via: st.via.and_then(Target::index),
            via_client: None,
        };
        // A compaction covers the step's writes (at least one per admin change before it):
        // etcd's revision before its changes, and the admin changes made so far.
        let mut admin_changes = 0;
        let compacts = (st.changes.iter()).any(|c| matches!(c, Change::Fault(Fault::Compact(_))));
        let etcd_before = match compacts {
            true => self.topo.etcd_revision().await.map_err(at(Step::Steps))?,
            false => 0,
        };
        for (c, change) in st.changes.iter().enumerate() {
            match change {
                Change::Admin(change) => {
                    admin_changes += 1;
                    let field = format!("steps[{index}].changes[{c}].{}", change.name());
                    let client = admins.client(self).await?;
                    self.apply(client, &st.name, &field, change, made, plugins)
                        .await?;
                }
                Change::Fault(fault) => {
                    let compact_from = etcd_before + admin_changes;
                    self.fault(st, fault, &mut admins, compact_from, faulted)
                        .await?;
                }
            }
        }
        let admin = admins.case;
        let committed = now_us();
        if let Some(hold) = st.isolated {
            self.isolated(admin, index, hold).await?;
        }
        let started = Instant::now();
        let converge = self
            .wait_for(&st.wait, &format!("step `{}`: the wait probe", st.name))
            .await
            .map_err(at(Step::Steps))?;
        if faulted.admin_down || faulted.partitioned {
            tracing::info!(case = %self.id, step = %st.name, "the admin is down or the gateway cut off: no digest equality after this step");
            return Ok(());
        }
        let applied = self
            .digests_converge(
                admin,
                &format!("step `{}`: digest equality after the wait", st.name),
            )
            .await
            .map_err(at(Step::Steps))?;
        let took = started.elapsed();
        if st.has_faults() && took > st.converge_bound() {
            return Err((
                Step::Steps,
                RunErrorKind::ConvergedLate {
                    step: st.name.clone(),
                    took_ms: millis(took),
                    bound_ms: millis(st.converge_bound()),
                },
            ));
        }
        self.timing(
            &format!("step `{}`", st.name),
            committed,
            applied.as_ref(),
            converge,
        );
        Ok(())
    }

    /// Sends `probe` back to back until `done`, judging each answer as it comes; to each
    /// running gateway in turn (one going down is left out first, and the probes in flight to
    /// it answered); while none runs, it waits for one.
    async fn during(&self, probe: &Probe, done: &AtomicBool) -> During {
        let names = self.names.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let started = Instant::now();
        let mut during = During::default();
        while !done.load(Ordering::Relaxed) {
            let sending = self.in_flight.read().await;
            let running = self.running_gateways();
            let Some(&i) = running.get(during.sent as usize % running.len().max(1)) else {
                drop(sending);
                // No gateway to serve: poll for one to come back.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            during.sent += 1;
            let verdict = self
                .send(&self.gateways[i], &probe.request)
                .await
                .and_then(|resp| judge(&probe.expect, &resp, &names));
            if let Err(miss) = verdict {
                during.failed += 1;
                if during.first.len() < 3 {
                    let at_ms = started.elapsed().as_millis();
                    let on = if self.gateways.len() == 1 {
                        String::new()
                    } else {
                        format!(" on gateway[{i}]")
                    };
                    during.first.push(format!("at {at_ms} ms{on}: {miss}"));
                }
            }
        }
        during.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        during
    }

    /// Reports a step's `during` probe as a check of the step (`steps[i].during`); fails the
    /// step when an answer missed or none was sent (the step then showed nothing about it).
    fn during_report(
        &self,
        st: &StepSpec,
        index: usize,
        probe: &Probe,
        during: &During,
    ) -> StepResult<()> {
        let passed = during.sent - during.failed;
        let failure = during.failure(&probe.request.path);
        self.step_check(CheckReport {
            name: format!("during step `{}`", st.name),
            path: format!("steps[{index}].during"),
            step: Some(st.name.clone()),
            kind: "probe",
            outcome: match failure {
                Some(why) => CheckOutcome::Failed(vec![why]),
                None => CheckOutcome::Passed,
            },
            elapsed_ms: during.elapsed_ms,
            measurements: Measurements::Probe {
                sent: during.sent,
                passed,
            },
        })
    }

    /// Holds step `index`'s `isolated` claim for `hold` from now: every running gateway's
    /// digest, read with the admin's every [`ISOLATION_POLL`], must differ from it every time
    /// (an equal one: the change reached the gateway). Reported as the check
    /// `steps[index].isolated`, skipped on a target without a config digest; its measurements
    /// count the digest pairs read (one per gateway per round) and those that differed.
    async fn isolated(&self, admin: &AdminClient, index: usize, hold: Duration) -> StepResult<()> {
        let st = &self.scenario.steps[index];
        let started = Instant::now();
        // Digest pairs read, and those that differed.
        let (mut read, mut apart) = (0, 0);
        let outcome = match self.caps.digest {
            false => CheckOutcome::Skipped(NO_DIGEST_ISOLATION.into()),
            true => match self.held_apart(admin, hold, &mut read, &mut apart).await {
                Ok(()) => CheckOutcome::Passed,
                Err(why) => CheckOutcome::Failed(vec![format!(
                    "`isolated: {}`: {why}",
                    humantime::format_duration(hold)
                )]),
            },
        };
        self.step_check(CheckReport {
            name: format!("step `{}` kept from the gateway", st.name),
            path: format!("steps[{index}].isolated"),
            step: Some(st.name.clone()),
            kind: "isolation",
            outcome,
            elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
            measurements: Measurements::Probe {
                sent: read,
                passed: apart,
            },
        })
    }

    /// Polls the admin's and every running gateway's digest until `hold` has passed (the last
    /// round starts at or after it), counting the pairs `read` and those `apart`; fails at the
    /// first gateway whose digest equals the admin's, or when a digest cannot be read.
    async fn held_apart(
        &self,
        admin: &AdminClient,
        hold: Duration,
        read: &mut u32,
        apart: &mut u32,
    ) -> Result<(), String> {
        let started = Instant::now();
        let mut tick = tokio::time::interval(ISOLATION_POLL);
        loop {
            tick.tick().await;
            let into = started.elapsed();
            let at = format!("{} ms into the hold", into.as_millis());
            for i in self.running_gateways() {
                let name = self.gateway_name(i);
                let a = (admin.digest().await).map_err(|e| format!("{at}, the admin: {e}"))?;
                let g =
                    (self.gateways[i].digest().await).map_err(|e| format!("{at}, {name}: {e}"))?;
                *read += 1;
                if a.digest == g.report.digest {
                    return Err(format!(
                        "{at}, {name} holds the admin's config: its digest {} equals the \
                         admin's {} (the change reached it)",
                        g.report.digest, a.digest
                    ));
                }
                *apart += 1;
            }
            if into >= hold {
                return Ok(());
            }
        }
    }

    /// Reports a check of a step and fails the step when it failed.
    fn step_check(&self, report: CheckReport) -> StepResult<()> {
        (self.events)(Event::CheckFinished {
            id: self.id.clone(),
            check: report.clone(),
        });
        let failure = match &report.outcome {
            CheckOutcome::Failed(why) => Some(why.join("; ")),
            CheckOutcome::Passed | CheckOutcome::Skipped(_) => None,
        };
        let step = report.step.clone().unwrap_or_default();
        self.record(|r| r.checks.push(report));
        match failure {
            Some(why) => Err((
                Step::Steps,
                RunErrorKind::ChecksFailed(vec![format!("  step `{step}` {why}")]),
            )),
            None => Ok(()),
        }
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
        self.running.lock().unwrap_or_else(|e| e.into_inner())
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

    /// Applies one admin change, keeping `made` current.
    async fn apply(
        &self,
        admin: &AdminClient,
        step: &str,
        field: &str,
        change: &AdminChange,
        made: &mut Made,
        plugins: &mut Vec<ChangedPlugin>,
    ) -> StepResult<()> {
        match change {
            AdminChange::CreateSelector(spec) => {
                let sel = self
                    .create_selector(admin, spec, field, Step::Steps)
                    .await?;
                made.selectors.push(sel);
                *self.names.lock().unwrap_or_else(|e| e.into_inner()) = made.names();
                Ok(())
            }
            AdminChange::CreateRule(r) => {
                let sel = made.selector(&r.selector)?;
                let rule = create_rule(
                    admin,
                    &r.rule,
                    &format!("{field}.rule"),
                    &sel.id,
                    Step::Steps,
                )
                .await?;
                sel.rules.push(rule);
                *self.names.lock().unwrap_or_else(|e| e.into_inner()) = made.names();
                Ok(())
            }
            AdminChange::Register(reg) => {
                let ids = self.register(admin, reg).await.map_err(at(Step::Steps))?;
                made.registered.extend(ids);
                Ok(())
            }
            AdminChange::UpdateSelector(u) => {
                let sel = made.selector(&u.name)?;
                lower::update_selector(&mut sel.dto, &sel.id, u, &self.addrs);
                if let Some(ups) = &u.upstreams {
                    sel.upstreams.clone_from(ups);
                }
                admin
                    .update_selector(&sel.id, &sel.dto)
                    .await
                    .map_err(|e| (Step::Steps, refused(field, &Refused::Selector, e)))
            }
            AdminChange::UpdateRule(u) => {
                let rule = made.rule(&u.selector, &u.name)?;
                lower::update_rule(&mut rule.dto, &rule.id, u);
                admin
                    .update_rule(&rule.id, &rule.dto)
                    .await
                    .map_err(|e| (Step::Steps, refused(field, &Refused::rule_update(u), e)))
            }
            AdminChange::EnablePlugin(p) => {
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
            AdminChange::DeleteSelector(name) => {
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
            AdminChange::DeleteRule(r) => {
                let rule = made.rule(&r.selector, &r.name)?;
                let deleted = admin
                    .delete_rules(std::slice::from_ref(&rule.id))
                    .await
                    .map_err(at(Step::Steps))?;
                one_deleted(deleted)?;
                rule.deleted = true;
                Ok(())
            }
            AdminChange::UpdatePlugin(spec) => {
                let field = format!("step `{step}`: updatePlugin `{}`", spec.name);
                let original = self.update_plugin(admin, spec, &field, Step::Steps).await?;
                // The first change of a plugin holds what teardown puts back.
                if !made.plugins.iter().any(|p| p.id == original.id) {
                    made.plugins.push(original);
                }
                Ok(())
            }
        }
    }

    /// Sets a plugin's config (its placeholders filled in with this topology's addresses; a
    /// problem is reported at `field`) and enabled flag; returns the plugin as it was.
    async fn update_plugin(
        &self,
        admin: &AdminClient,
        spec: &PluginSetup,
        field: &str,
        step: Step,
    ) -> StepResult<model::PluginVo> {
        let original = admin
            .plugin(&spec.name)
            .await
            .map_err(at(step))?
            .ok_or_else(|| (step, RunErrorKind::PluginNotFound(spec.name.clone())))?;
        let mut changed = original.clone();
        if let Some(config) = &spec.config {
            let values = self.topo.placeholder_values();
            let filled = placeholder::substitute(config, &values).map_err(|detail| {
                (
                    step,
                    RunErrorKind::Placeholder {
                        field: format!("{field}.config"),
                        detail,
                    },
                )
            })?;
            changed.config = Some(filled);
        }
        changed.enabled = spec.enabled.unwrap_or(original.enabled);
        admin.update_plugin(&changed).await.map_err(at(step))?;
        Ok(original)
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

/// Creates `rule` (at `field` in the case file) under the selector `selector_id`.
async fn create_rule(
    admin: &AdminClient,
    rule: &RuleSpec,
    field: &str,
    selector_id: &str,
    step: Step,
) -> StepResult<MadeRule> {
    let dto = lower::rule_dto(rule, selector_id);
    let id = admin
        .create_rule(&dto)
        .await
        .map_err(|e| (step, refused(field, &Refused::rule(rule), e)))?
        .ok_or_else(|| {
            (
                step,
                RunErrorKind::RuleNotFound {
                    rule: rule.name.clone(),
                    selector_id: selector_id.to_owned(),
                },
            )
        })?;
    Ok(MadeRule {
        name: rule.name.clone(),
        id,
        dto,
        deleted: false,
    })
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
    /// The gateway holds the admin's initial config, and the wait probes do not all pass yet
    /// (a failure says what each got).
    async fn precheck(&self, admin: &AdminClient) -> StepResult<()> {
        self.digests_converge(admin, "initial digest equality")
            .await
            .map_err(at(Step::Precheck))?;
        if self.backend == BackendKind::External {
            self.unrouted_on_target()
                .await
                .map_err(at(Step::Precheck))?;
        }
        let wait = &self.scenario.wait;
        let mut got = Vec::new();
        for (i, probe) in wait.probes.iter().enumerate() {
            let names = self.names.lock().unwrap_or_else(|e| e.into_inner()).clone();
            match self.gateway().send(&probe.request).await {
                Ok(resp) if judge(&probe.expect, &resp, &names).is_ok() => {
                    got.push(format!(
                        "wait.{}: got {}",
                        wait.probe_path(i),
                        resp.summary()
                    ));
                }
                _ => return Ok(()),
            }
        }
        Err((
            Step::Precheck,
            RunErrorKind::ProbePassesBeforeSetup {
                got: got.join("; "),
            },
        ))
    }

    /// On an external target, before the case made anything: every distinct request of the
    /// case, sent once as written, must find no selector (-107), else the target's own config
    /// routes it and would answer it or shadow the case's routes (the run's probe only ruled
    /// out a catch-all).
    async fn unrouted_on_target(&self) -> Result<(), RunErrorKind> {
        let mut sent = Vec::new();
        for request in self.scenario.requests() {
            if sent.contains(&request) {
                continue;
            }
            sent.push(request);
            let resp = self.gateway().send(request).await?;
            if !crate::target::external::finds_no_selector(&resp) {
                return Err(RunErrorKind::RoutedByTarget {
                    request: format!("{} {}", request.method, request.path),
                    got: resp.summary(),
                });
            }
        }
        Ok(())
    }

    /// Sets the `setup.plugins` configs (placeholders filled in with this topology's
    /// addresses) and enabled flags, then creates every selector and rule, then the
    /// registrations; returns what it made.
    async fn setup(&self, admin: &AdminClient) -> StepResult<Made> {
        let mut made = Made::default();
        for (i, spec) in self.scenario.setup.plugins.iter().enumerate() {
            let field = format!("setup.plugins[{i}]");
            let original = self.update_plugin(admin, spec, &field, Step::Setup).await?;
            made.plugins.push(original);
        }
        for (i, spec) in self.scenario.setup.selectors.iter().enumerate() {
            let field = format!("setup.selectors[{i}]");
            let sel = self
                .create_selector(admin, spec, &field, Step::Setup)
                .await?;
            made.selectors.push(sel);
        }
        for reg in &self.scenario.setup.registrations {
            let ids = self.register(admin, reg).await.map_err(at(Step::Setup))?;
            made.registered.extend(ids);
        }
        Ok(made)
    }

    /// Creates a selector of `spec` (at `field` in the case file) and then its rules (in setup
    /// or a step's `createSelector`).
    async fn create_selector(
        &self,
        admin: &AdminClient,
        spec: &SelectorSpec,
        field: &str,
        step: Step,
    ) -> StepResult<MadeSelector> {
        let plugin_id = admin
            .plugin_id(&spec.plugin)
            .await
            .map_err(at(step))?
            .ok_or_else(|| (step, RunErrorKind::PluginNotFound(spec.plugin.clone())))?;
        let mut selector_dto = lower::selector_dto(spec, &plugin_id, &self.addrs);
        selector_dto.name = Some(self.topo.selector_name(&spec.name));
        let selector_id = admin
            .create_selector(&selector_dto)
            .await
            .map_err(|e| (step, refused(field, &Refused::Selector, e)))?;
        let mut rules = Vec::new();
        for (j, rule) in spec.rules.iter().enumerate() {
            let field = format!("{field}.rules[{j}]");
            rules.push(create_rule(admin, rule, &field, &selector_id, step).await?);
        }
        Ok(MadeSelector {
            name: spec.name.clone(),
            id: selector_id,
            dto: selector_dto,
            upstreams: spec.upstreams.clone(),
            deleted: false,
            rules,
            hash_seen: None,
        })
    }

    /// Registers like a ShenYu http client at start (protocol §9): [`register_client`] with
    /// the upstream's address, as the scenario's app unless the registration names one.
    async fn register(
        &self,
        admin: &AdminClient,
        reg: &RegistrationSpec,
    ) -> Result<Vec<String>, RunErrorKind> {
        let app_name = reg
            .app_name
            .clone()
            .unwrap_or_else(|| self.scenario.name.clone());
        let host_port = self
            .topo
            .upstream(&reg.upstream)
            .expect("validated: upstreams are declared")
            .host_port();
        register_client(admin, &app_name, &reg.context_path, &reg.paths, &host_port).await
    }
}

/// Registers like a ShenYu http client at start (protocol §9) as app `app_name` under
/// `context_path`, listening at `host_port`: metadata per path of `paths`, then the address.
/// Returns the ids of the divide and contextPath selectors the admin made for it, for
/// teardown. Case files' registrations and the convergence histories (`converge`) both
/// register through it.
pub async fn register_client(
    admin: &AdminClient,
    app_name: &str,
    context_path: &str,
    paths: &[String],
    host_port: &str,
) -> Result<Vec<String>, RunErrorKind> {
    for path in paths {
        let meta = MetaDataRegister {
            app_name: Some(app_name.to_owned()),
            context_path: Some(context_path.to_owned()),
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
    let (host, port) = host_port
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
        .expect("upstream addresses are host:port");
    let uri = UriRegister {
        protocol: Some("http://".to_owned()),
        app_name: Some(app_name.to_owned()),
        context_path: Some(context_path.to_owned()),
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
            .find(|s| s.name == context_path)
            .ok_or_else(|| {
                RunErrorKind::UnknownObject(format!(
                    "{plugin} selector `{}` after registration",
                    context_path
                ))
            })?;
        ids.push(selector.id);
    }
    Ok(ids)
}

impl Case<'_> {
    async fn probe_once(&self, request: &RequestSpec, expect: &Expect) -> Result<(), String> {
        self.probe_on(self.gateway(), request, expect).await
    }

    async fn probe_on(
        &self,
        gateway: &GatewayClient,
        request: &RequestSpec,
        expect: &Expect,
    ) -> Result<(), String> {
        let resp = gateway.send(request).await.map_err(|e| e.to_string())?;
        let names = self.names.lock().unwrap_or_else(|e| e.into_inner()).clone();
        judge(expect, &resp, &names)
    }

    /// Waits until `wait`'s probes all pass on every running gateway (at once), and answers
    /// the latest convergence of them.
    async fn wait_for(&self, wait: &Wait, what: &str) -> Result<Converged, RunErrorKind> {
        let waits = self.running_gateways().into_iter().map(|i| async move {
            await_convergence(policy(wait), || self.probes_on(i, wait))
                .await
                .map_err(|source| RunErrorKind::Timeout {
                    what: if self.gateways.len() == 1 {
                        what.to_owned()
                    } else {
                        format!("{what} on gateway[{i}]")
                    },
                    source,
                })
        });
        let converged = futures_util::future::join_all(waits).await;
        let mut latest: Option<Converged> = None;
        for c in converged {
            let c = c?;
            if latest.is_none_or(|l| c.first_seen > l.first_seen) {
                latest = Some(c);
            }
        }
        Ok(latest.expect("a gateway runs at every wait (checked at parse time)"))
    }

    /// One pass of `wait`'s probes on gateway `i`: every probe must pass; a miss names the
    /// probe when there are several.
    async fn probes_on(&self, i: usize, wait: &Wait) -> Result<(), String> {
        for (k, probe) in wait.probes.iter().enumerate() {
            self.probe_on(&self.gateways[i], &probe.request, &probe.expect)
                .await
                .map_err(|miss| match wait.listed {
                    true => format!("{}: {miss}", wait.probe_path(k)),
                    false => miss,
                })?;
        }
        Ok(())
    }

    /// Waits (within the scenario's wait timeout) until every running gateway's config digest
    /// equals the admin's, and returns the report of the gateway that applied it last (with
    /// the time that config went live); `None` at once when the target has no digest (the
    /// case's record says so once, as a skipped check). Sync is eventually consistent: after the wait probe
    /// passes, other parts of the same change may still be on their way (ZooKeeper and etcd
    /// deliver per node), so this is a bounded wait, not a single comparison; a timeout names
    /// the gateway and reports both digests last seen.
    async fn digests_converge(
        &self,
        admin: &AdminClient,
        what: &str,
    ) -> Result<Option<AppliedDigest>, RunErrorKind> {
        if !self.caps.digest {
            return Ok(None);
        }
        let mut last: Option<AppliedDigest> = None;
        for i in self.running_gateways() {
            let applied = self.digest_converges(admin, i, what).await?;
            if last
                .as_ref()
                .is_none_or(|l| applied.applied_at_us > l.applied_at_us)
            {
                last = Some(applied);
            }
        }
        let last = last.expect("a gateway runs at every digest equality (checked at parse time)");
        Ok(Some(last))
    }

    /// [`Case::digests_converge`] for gateway `i`.
    async fn digest_converges(
        &self,
        admin: &AdminClient,
        i: usize,
        what: &str,
    ) -> Result<AppliedDigest, RunErrorKind> {
        let policy = WaitPolicy {
            consecutive: 1,
            ..policy(&self.scenario.wait)
        };
        let gateway = &self.gateways[i];
        let name = self.gateway_name(i);
        let seen: Mutex<Option<(String, AppliedDigest)>> = Mutex::new(None);
        await_convergence(policy, || async {
            let (a, g) = (
                admin.digest().await.map_err(|e| e.to_string())?,
                gateway.digest().await.map_err(|e| e.to_string())?,
            );
            if a.digest == g.report.digest {
                *seen.lock().unwrap_or_else(|e| e.into_inner()) = Some((a.digest, g));
                Ok(())
            } else {
                Err(format!("admin {a:?}, {name} {g:?}"))
            }
        })
        .await
        .map_err(|source| RunErrorKind::Timeout {
            what: if self.gateways.len() == 1 {
                what.to_owned()
            } else {
                format!("{what} ({name})")
            },
            source,
        })?;
        let (admin_digest, gateway) = seen
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .expect("a converged wait saw equal digests");
        self.record(|r| {
            r.digests = Some(FinalDigests {
                admin: admin_digest,
                gateway: gateway.report.digest.clone(),
            });
        });
        Ok(gateway)
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
        let committed = now_us();
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
            probes: (self.scenario.wait.probes.iter())
                .map(|p| Probe {
                    request: p.request.clone(),
                    expect: Expect {
                        route: Some(Route::Absent),
                        ..Default::default()
                    },
                })
                .collect(),
            ..self.scenario.wait.clone()
        };
        let converge = self
            .wait_for(
                &gone,
                match gone.listed {
                    true => "the wait probes' routes to disappear",
                    false => "the wait probe's route to disappear",
                },
            )
            .await?;
        // A step may already have removed the wait probe's route, so that wait proves little
        // on its own: the teardown probes run once the gateway holds the admin's config.
        let applied = self
            .digests_converge(admin, "digest equality after teardown")
            .await?;
        self.timing("teardown", committed, applied.as_ref(), converge);
        let mut failures = Vec::new();
        let several = self.running_gateways().len() > 1;
        for (i, p) in self.scenario.teardown.probes.iter().enumerate() {
            for g in self.running_gateways() {
                if let Err(miss) = self
                    .probe_on(&self.gateways[g], &p.request, &p.expect)
                    .await
                {
                    let on = match several {
                        true => format!(" on {}", self.gateway_name(g)),
                        false => String::new(),
                    };
                    failures.push(format!("  teardown probe {i}{on}: {miss}"));
                }
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(RunErrorKind::ChecksFailed(failures))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::During;

    #[test]
    fn a_during_probe_fails_on_a_miss_and_when_it_sent_nothing() {
        let nothing = During {
            elapsed_ms: 12.4,
            ..During::default()
        };
        assert_eq!(
            nothing.failure("/a").as_deref(),
            Some(
                "`during` sent no request to /a in the 12 ms of the step (no gateway was \
                 running, or the step ended first), so it shows nothing"
            )
        );
        let missed = During {
            sent: 5,
            failed: 1,
            first: vec!["at 3 ms: status: expected 200, got 404".into()],
            elapsed_ms: 40.0,
        };
        assert_eq!(
            missed.failure("/a").as_deref(),
            Some(
                "1 of 5 answers during the step missed /a; first: at 3 ms: status: expected \
                 200, got 404"
            )
        );
        let passed = During {
            sent: 5,
            ..During::default()
        };
        assert_eq!(passed.failure("/a"), None);
    }
}
