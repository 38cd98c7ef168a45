//! The convergence property (issue 13; docs/convergence.md): proptest generates histories of
//! admin operations on a few routes interleaved with faults ([`history`]); each runs on a live
//! topology ([`run`]) while a reference model records what the admin acknowledged
//! ([`model`]); after the last heal a set-full-style checker probes every route on every
//! gateway until it is stable or the bound passes and classifies it as ok, lost, stale or
//! flapping ([`checker`]); the gateways' digests must equal the admin's. A failing history
//! shrinks to a minimal one, and the seed replays it (`gantry check --seed …`).

pub(crate) mod checker;
pub(crate) mod history;
pub(crate) mod model;
pub(crate) mod run;

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

use crate::backend::Backend;
use checker::Tally;
use history::History;

/// The knobs of one property run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The sync mode.
    pub mode: ::model::SyncMode,
    /// The proptest seed (the same seed generates the same histories).
    pub seed: u64,
    /// Histories to generate (proptest cases).
    pub cases: u32,
    /// At most this many steps per history.
    pub steps: usize,
    /// Whether histories contain faults.
    pub faults: bool,
    /// How long after the last heal every route must be stable and the digests equal.
    pub bound: Duration,
    /// Proptest's shrinking, then the greedy pass, each stop after this many histories…
    pub shrink_iters: u32,
    /// …or after this long.
    pub shrink_time: Duration,
    /// Keep the topology's files (and containers) after the run.
    pub keep: bool,
    /// Gateways in the topology, all syncing through the same fault proxy (more than one:
    /// host backend only).
    pub gateways: u8,
}

impl Options {
    /// The defaults of the `cargo test` trials: 64 histories of at most 8 steps with faults,
    /// a 5 s bound, two gateways; proptest's shrinking and then the greedy pass each bounded
    /// by 40 histories and 30 s.
    pub fn new(mode: ::model::SyncMode, seed: u64) -> Options {
        Options {
            mode,
            seed,
            cases: 64,
            steps: 8,
            faults: true,
            bound: Duration::from_secs(5),
            shrink_iters: 40,
            shrink_time: Duration::from_secs(30),
            keep: false,
            gateways: 2,
        }
    }
}

/// How a property run ended.
#[derive(Debug)]
pub struct Outcome {
    /// `Err(message)` when the property failed: the minimal history, why, and the seed.
    pub verdict: Result<(), String>,
    /// The minimal failing history, when it failed.
    pub minimal: Option<History>,
    /// Every element of every history run (shrinking included).
    pub tally: Tally,
    /// The same, per gateway (in index order).
    pub per_gateway: Vec<Tally>,
    /// Histories run (shrinking included).
    pub histories: usize,
    /// Each time a passing history's cleanup (its selectors deleted) did not reach every
    /// gateway within the bound, what still differed (the gateways were then restarted).
    /// Empty unless a gateway keeps deleted routes; see [`Outcome::isolation`].
    pub resets: Vec<String>,
    /// The longest a passing history's cleanup took to reach every gateway.
    pub slowest_clean: Duration,
    /// Operations the admin acknowledged, and faults injected, over every history.
    pub applied: (usize, usize),
    /// Of the acknowledged operations, the registrations.
    pub registrations: usize,
    /// The faults per kind (`history::Fault::kind`).
    pub fault_kinds: std::collections::BTreeMap<&'static str, usize>,
    /// Wall time, topology start included.
    pub elapsed: Duration,
}

impl Outcome {
    /// One line: histories, counts, time-to-stable quantiles, time; then one line per
    /// gateway when there are several.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "{} histories ({} acknowledged operations, {} of them registrations, {} faults) in \
             {:.1} s (cleanups reached the gateways within {} ms, {} did not): {}",
            self.histories,
            self.applied.0,
            self.registrations,
            self.applied.1,
            self.elapsed.as_secs_f64(),
            self.slowest_clean.as_millis(),
            self.resets.len(),
            self.tally
        );
        if !self.fault_kinds.is_empty() {
            let kinds: Vec<String> = self
                .fault_kinds
                .iter()
                .map(|(kind, n)| format!("{kind} {n}"))
                .collect();
            out.push_str(&format!("\n  faults: {}", kinds.join(", ")));
        }
        if self.per_gateway.len() > 1 {
            for (g, tally) in self.per_gateway.iter().enumerate() {
                out.push_str(&format!("\n  gateway[{g}]: {tally}"));
            }
        }
        out
    }

    /// `Err` when a passing history's cleanup did not reach every gateway within the bound:
    /// a gateway kept routes the admin deleted, outside any history (the histories' own
    /// verdicts are in [`Outcome::verdict`]).
    pub fn isolation(&self) -> Result<(), String> {
        if self.resets.is_empty() {
            return Ok(());
        }
        Err(format!(
            "the gateways still held a passing history's deleted routes at the bound {} \
             time(s) (restarted then):\n{}",
            self.resets.len(),
            self.resets.join("\n")
        ))
    }
}

/// Runs the property on a fresh topology of `backend` (its own current-thread runtime: call
/// it outside any).
pub fn check(backend: &Backend, opts: &Options) -> Result<Outcome, String> {
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting a runtime: {e}"))?;
    let live = RefCell::new(rt.block_on(run::Live::start(
        backend,
        opts.mode,
        opts.gateways,
        opts.keep,
        opts.bound,
    ))?);
    let tally = RefCell::new(Tally::default());
    let per_gateway = RefCell::new(vec![Tally::default(); usize::from(opts.gateways)]);
    let histories = Cell::new(0);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&opts.seed.to_le_bytes());
    let config = Config {
        cases: opts.cases,
        failure_persistence: None,
        max_shrink_iters: opts.shrink_iters,
        max_shrink_time: u32::try_from(opts.shrink_time.as_millis()).unwrap_or(u32::MAX),
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let test = |h: &History| -> Result<(), String> {
        histories.set(histories.get() + 1);
        let report = rt.block_on(live.borrow_mut().run(h, h.bound(opts.bound)))?;
        run::count(
            &mut tally.borrow_mut(),
            &mut per_gateway.borrow_mut(),
            &report,
        );
        report.verdict
    };
    let extra = history::ModeFaults {
        protocol: run::protocol_fault(opts.mode).is_some(),
        store: run::store_target(opts.mode).is_some(),
        compact: run::compacts(opts.mode, backend.kind()),
        gateways: opts.gateways,
    };
    let result = runner.run(&history::history(opts.steps, opts.faults, extra), |h| {
        test(&h).map_err(TestCaseError::fail)
    });
    let seed = opts.seed;
    let (verdict, minimal) = match result {
        Ok(()) => (Ok(()), None),
        Err(TestError::Abort(why)) => (Err(format!("proptest aborted: {why}")), None),
        Err(TestError::Fail(why, minimal)) => {
            let (minimal, why) = shrink_further(minimal, why.to_string(), opts, &test);
            (
                Err(format!(
                    "convergence@{}: the gateways did not converge to what the admin acknowledged \
                 (seed {seed}; replay: gantry check --sync {} --seed {seed} --ops {} --faults {} \
                 --cases {} --bound {} --gateways {}).\n\
                 Minimal failing history ({} operations and faults):\n{minimal}{why}",
                    opts.mode,
                    opts.mode,
                    opts.steps,
                    if opts.faults { "on" } else { "off" },
                    opts.cases,
                    humantime::format_duration(opts.bound),
                    opts.gateways,
                    minimal.len()
                )),
                Some(minimal),
            )
        }
    };
    let mut live = live.into_inner();
    let applied = (live.acknowledged, live.faults);
    let (resets, slowest_clean) = (std::mem::take(&mut live.resets), live.slowest_clean);
    let registrations = live.registrations;
    let fault_kinds = std::mem::take(&mut live.fault_kinds);
    drop(live);
    Ok(Outcome {
        verdict,
        minimal,
        tally: tally.into_inner(),
        per_gateway: per_gateway.into_inner(),
        histories: histories.get(),
        resets,
        slowest_clean,
        applied,
        registrations,
        fault_kinds,
        elapsed: started.elapsed(),
    })
}

/// Proptest's shrinking ends at the first simplification it cannot undo (a fault step's
/// operations, say), so this goes on greedily: it drops one step, one operation inside a
/// fault, or a fault around its operations at a time, keeping each change after which the
/// history still fails, within the same budget (`shrink_iters` histories, `shrink_time`).
fn shrink_further(
    mut minimal: History,
    mut why: String,
    opts: &Options,
    test: &dyn Fn(&History) -> Result<(), String>,
) -> (History, String) {
    let started = Instant::now();
    let mut runs = 0;
    'smaller: loop {
        for candidate in history::smaller(&minimal) {
            if runs >= opts.shrink_iters || started.elapsed() >= opts.shrink_time {
                break 'smaller;
            }
            runs += 1;
            if let Err(e) = test(&candidate) {
                (minimal, why) = (candidate, e);
                continue 'smaller;
            }
        }
        break;
    }
    (minimal, why)
}
