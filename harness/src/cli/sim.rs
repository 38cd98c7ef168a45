//! `gantry sim`: runs seeds on worker threads (each simulation is single-threaded), prints
//! one line per seed in seed order, shrinks a failure and prints its replay command.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use model::SyncMode;

use super::args::SimArgs;

/// `println!` that does not panic when stdout is closed (`gantry sim … | head`): the lines
/// are lost, the run goes on and its exit code stands.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}
use super::exit_code;
use crate::sim::{Options, Outcome, replay_command, run_seed, shrink_seed};

/// Runs the seeds `args` names; exit 1 when any failed, the setup code when the simulation
/// itself could not run.
pub(super) fn sim(args: &SimArgs) -> ExitCode {
    if !matches!(args.mode, SyncMode::Websocket | SyncMode::Http) {
        eprintln!(
            "error: gantry sim runs the websocket and http modes; {} is not simulated yet \
             (docs/simulation.md says why)",
            args.mode
        );
        return ExitCode::from(exit_code::SETUP);
    }
    let options = Options {
        mode: args.mode,
        gateways: args.gateways,
        ops: args.ops,
        bug: args.emulate_bug,
    };
    // Clap requires one of `--seed` and `--seeds`.
    let (first, count) = match args.seed {
        Some(seed) => (seed, 1),
        None => (args.start, args.seeds.unwrap_or(1)),
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .clamp(1, 64);
    let started = Instant::now();
    let next = AtomicU64::new(0);
    let (tx, rx) = mpsc::channel::<(u64, Result<Outcome, String>)>();
    let mut failed = Vec::new();
    let mut broken = None;
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (next, options) = (&next, &options);
            let keep = args.keep.as_deref();
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return;
                    }
                    let seed = first + i;
                    if tx.send((i, run_seed(seed, keep, options))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        // Printed in seed order as they complete.
        let mut pending = BTreeMap::new();
        let mut printed = 0;
        for (i, outcome) in rx {
            pending.insert(i, outcome);
            while let Some(outcome) = pending.remove(&printed) {
                printed += 1;
                match outcome {
                    Ok(outcome) => {
                        report(&outcome, args);
                        if outcome.violation.is_some() {
                            failed.push(outcome);
                        }
                    }
                    Err(e) => {
                        eprintln!("error: seed {}: {e}", first + printed - 1);
                        broken.get_or_insert(e);
                        next.store(count, Ordering::Relaxed);
                    }
                }
            }
        }
    });
    if broken.is_some() {
        return ExitCode::from(exit_code::SETUP);
    }
    for outcome in &failed {
        explain(outcome, &options, args);
    }
    let secs = started.elapsed().as_secs_f64();
    out!(
        "{count} seeds, {} failed, {:.0} seeds/hour",
        failed.len(),
        count as f64 * 3600.0 / secs.max(1e-9)
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit_code::FAILED)
    }
}

/// The seed's line (and its trace, when asked).
fn report(outcome: &Outcome, args: &SimArgs) {
    let verdict = if outcome.violation.is_some() {
        "FAIL"
    } else {
        "ok"
    };
    out!(
        "seed {}: {verdict} trace {}",
        outcome.seed,
        outcome.trace.hash()
    );
    if args.trace {
        for entry in &outcome.trace.entries {
            out!("    {entry}");
        }
    }
}

/// A failure: what broke, the plan shrunk to what still fails, and the replay command.
fn explain(outcome: &Outcome, options: &Options, args: &SimArgs) {
    let Some(violation) = &outcome.violation else {
        return;
    };
    out!("seed {} failed: {violation}", outcome.seed);
    let shrunk = if args.no_shrink || args.keep.is_some() {
        None
    } else {
        match shrink_seed(outcome, options) {
            Ok(shrunk) => Some(shrunk),
            Err(e) => {
                eprintln!("error: shrinking seed {}: {e}", outcome.seed);
                None
            }
        }
    };
    let shown = shrunk.as_ref().unwrap_or(outcome);
    if let Some(violation) = shrunk.as_ref().and_then(|s| s.violation.as_ref()) {
        out!(
            "  shrunk from {} to {} steps: {violation}",
            outcome.plan.steps.len(),
            shown.plan.steps.len()
        );
    }
    for step in &shown.plan.steps {
        out!("    {step}");
    }
    out!(
        "  replay: {}",
        replay_command(shown, options, shrunk.is_some() || args.keep.is_some())
    );
}
