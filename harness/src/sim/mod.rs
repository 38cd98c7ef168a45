//! `gantry sim`: deterministic simulation (docs/simulation.md). The admin, several gateways
//! and a driver run as turmoil hosts on one thread, on a simulated network and clock, with
//! the wall clock and the random source of the admin and the gateway replaced through
//! [`model::world`]. A seed makes a plan ([`plan`]): the convergence property's operations
//! and a fault schedule, each at a simulated time. Its run ([`world`]) records every config
//! the admin committed and every config each gateway swapped in ([`trace`]); the checkers
//! ([`check`]) read every one of them. The same seed on the same build replays the same run,
//! bit for bit: the trace hash says so. A failing seed shrinks to the fewest steps that
//! still fail ([`shrink`]), and the command that replays them is printed.

mod check;
mod net;
mod plan;
mod routing;
mod shrink;
#[cfg(test)]
mod tests;
mod trace;
mod world;

use model::SyncMode;

pub(crate) use check::Violation;
pub(crate) use plan::{Plan, Size};
pub(crate) use trace::Trace;
pub(crate) use world::Setup;

/// What `gantry sim` runs: the simulation's shape and the bug the gateways emulate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    /// The sync mode.
    pub(crate) mode: SyncMode,
    /// Gateways.
    pub(crate) gateways: u8,
    /// Operations per history.
    pub(crate) ops: usize,
    /// A planted bug the gateways emulate.
    pub(crate) bug: Option<gateway::EmulatedBug>,
}

impl Options {
    fn size(&self) -> Size {
        Size {
            mode: self.mode,
            gateways: self.gateways,
            ops: self.ops,
        }
    }

    fn setup(&self) -> Setup {
        Setup {
            mode: self.mode,
            gateways: self.gateways,
            bug: self.bug,
        }
    }
}

/// One seed's run.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// The seed.
    pub(crate) seed: u64,
    /// The plan that ran (the seed's, or the steps of it kept).
    pub(crate) plan: Plan,
    /// What it observed.
    pub(crate) trace: Trace,
    /// The first property it broke, if any.
    pub(crate) violation: Option<Violation>,
}

/// Runs `seed` (only the steps `kept`, when given).
pub(crate) fn run_seed(
    seed: u64,
    kept: Option<&[usize]>,
    options: &Options,
) -> Result<Outcome, String> {
    let plan = Plan::generate(seed, options.size());
    let plan = match kept {
        Some(kept) => plan.keep(kept)?,
        None => plan,
    };
    let trace = world::run(seed, &plan, options.setup())?;
    let violation = judge(&plan, &trace, options.gateways).err();
    Ok(Outcome {
        seed,
        plan,
        trace,
        violation,
    })
}

/// The checkers over a run's trace.
fn judge(plan: &Plan, trace: &Trace, gateways: u8) -> Result<(), Violation> {
    check::prefix_consistency(trace, gateways)?;
    check::routing(trace)?;
    // An operation delayed by an admin crash happens after its planned time.
    let last_step = trace
        .entries
        .iter()
        .filter(|e| matches!(e, trace::Entry::Step { .. }))
        .map(trace::Entry::at)
        .max()
        .unwrap_or_default();
    check::liveness(trace, gateways, plan.ends_at().max(last_step), world::BOUND)
}

/// The steps of a failing seed's plan that still fail with the others left out (see
/// [`shrink`]), and that run's outcome.
pub(crate) fn shrink_seed(outcome: &Outcome, options: &Options) -> Result<Outcome, String> {
    shrink::shrink(outcome, options)
}

/// The command that replays `outcome` (its kept steps, when it is shrunk).
pub(crate) fn replay_command(outcome: &Outcome, options: &Options, shrunk: bool) -> String {
    let mut command = format!(
        "gantry sim --mode {} --gateways {} --ops {} --seed {}",
        options.mode, options.gateways, options.ops, outcome.seed
    );
    if let Some(bug) = options.bug {
        command.push_str(&format!(" --emulate-bug {}", bug_name(bug)));
    }
    if shrunk {
        let kept: Vec<String> = outcome
            .plan
            .steps
            .iter()
            .map(|s| s.index.to_string())
            .collect();
        command.push_str(&format!(" --keep {}", kept.join(",")));
    }
    command
}

/// `bug`'s command-line name.
pub(crate) fn bug_name(bug: gateway::EmulatedBug) -> String {
    use clap::ValueEnum;
    bug.to_possible_value()
        .map_or_else(|| format!("{bug:?}"), |v| v.get_name().to_owned())
}
