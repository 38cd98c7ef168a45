//! The convergence property with faults ((`harness::internals::converge`), docs/convergence.md), on the
//! host backend: `convergence@<mode>` for the four sync modes must pass; with a gateway that
//! drops deletes (`--emulate-bug drop-deletes`), `convergence_planted_bug@websocket` must
//! fail with a shrunk history of at most 3 operations and faults that contains a delete, and
//! the checker must find stale routes on each of the two gateways; and
//! `convergence_isolation_planted_bug@websocket` must see the isolation check between
//! histories catch that gateway keeping a passing history's route after its cleanup.
//!
//! Seeds: a constant per trial, or `GANTRY_PROPTEST_SEED` for all (printed; every failure
//! names it and the `gantry check` command that replays it). Budgets: [`Options::new`] (64
//! histories of at most 8 steps, bound 5 s, two gateways); measured times are in
//! docs/convergence.md.

use harness::internals::converge::history::{History, Op, Step, Upstream};
use harness::internals::converge::run::Live;
use harness::internals::converge::{Options, Outcome, check};
use harness::{Backend, BackendKind};
use libtest_mimic::{Failed, Trial};
use model::SyncMode;

use crate::properties::seed_for;

fn run(mode: SyncMode, trial: &str, gateway_args: &[&str]) -> Result<Outcome, Failed> {
    let seed = seed_for(trial);
    eprintln!("{trial}: seed {seed} (GANTRY_PROPTEST_SEED={seed} reruns it)");
    let bin_dir = harness::internals::backend::host::bin_dir_from_env()?;
    let backend = Backend::new(BackendKind::Host, bin_dir)?
        .with_gateway_args(gateway_args.iter().map(|a| (*a).to_owned()).collect());
    let outcome = check(&backend, &Options::new(mode, seed))?;
    eprintln!("{trial}: {}", outcome.summary());
    Ok(outcome)
}

fn convergence(mode: SyncMode) -> Result<(), Failed> {
    let outcome = run(mode, &format!("convergence@{mode}"), &[])?;
    let isolation = outcome.isolation();
    outcome.verdict?;
    Ok(isolation?)
}

/// A gateway that drops deletes must fail the property with a short shrunk history.
fn planted_bug() -> Result<(), Failed> {
    let trial = "convergence_planted_bug@websocket";
    let outcome = run(
        SyncMode::Websocket,
        trial,
        &["--emulate-bug", "drop-deletes"],
    )?;
    let message = match outcome.verdict {
        Ok(()) => return Err("the property passed on a gateway that drops deletes".into()),
        Err(m) => m,
    };
    println!("{trial}: the planted bug was caught; the property's failure message:\n{message}");
    let minimal = outcome
        .minimal
        .ok_or("the failure carries no minimal history")?;
    let seed = seed_for(trial).to_string();
    let checks = [
        (message.contains(&seed), "the message names the seed"),
        (
            minimal.len() <= 3,
            "the history shrank to at most 3 operations and faults",
        ),
        (
            minimal.ops().any(|op| op.deletes()),
            "the minimal history deletes something",
        ),
        (
            outcome.tally.stale > 0,
            "the checker classified a deleted route as stale",
        ),
        (
            outcome.per_gateway.len() == 2 && outcome.per_gateway.iter().all(|t| t.stale > 0),
            "the checker found stale routes on each of the two gateways",
        ),
    ];
    crate::all_hold(&checks, &message)
}

/// A gateway that drops deletes keeps a passing history's route after the history's cleanup
/// deleted it: the isolation check between histories must record that, naming the digests.
fn isolation_planted_bug() -> Result<(), Failed> {
    let trial = "convergence_isolation_planted_bug@websocket";
    let bin_dir = harness::internals::backend::host::bin_dir_from_env()?;
    let backend = Backend::new(BackendKind::Host, bin_dir)?
        .with_gateway_args(vec!["--emulate-bug".to_owned(), "drop-deletes".to_owned()]);
    let bound = Options::new(SyncMode::Websocket, 0).bound;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut live = Live::start(&backend, SyncMode::Websocket, 1, false, bound).await?;
        // No delete inside it: this history passes on that gateway.
        let put = History(vec![Step::Op(Op::Put {
            key: 0,
            upstream: Upstream::Alpha,
        })]);
        live.run(&put, bound).await?.verdict?;
        // Before the next history, the first one's route must be gone from the gateway.
        live.run(&put, bound).await?;
        match live.resets.as_slice() {
            [reset] if reset.contains("after history 1") && reset.contains("selectors") => {
                println!("{trial}: the kept route was caught:\n{reset}");
                Ok(())
            }
            resets => Err(format!(
                "want one reset after history 1 naming the digests, got {resets:#?}"
            )
            .into()),
        }
    })
}

/// `convergence@<mode>` for every sync mode (ignored, with a note, when the mode's server is
/// not installed), then `convergence_planted_bug@websocket` and
/// `convergence_isolation_planted_bug@websocket`.
pub(crate) fn trials() -> Vec<Trial> {
    let mut trials = crate::per_mode("convergence", convergence);
    trials.push(Trial::test(
        "convergence_planted_bug@websocket",
        planted_bug,
    ));
    trials.push(Trial::test(
        "convergence_isolation_planted_bug@websocket",
        isolation_planted_bug,
    ));
    trials
}
