//! The simulation end to end: a seed replays its run, the seeds pass on the reference admin
//! and gateway, and every planted sync bug is found within 1,000 seeds.

use model::SyncMode;

use super::plan::{Action, Fault};
use super::{Options, Plan, run_seed, shrink_seed};

fn options(bug: Option<gateway::EmulatedBug>) -> Options {
    Options {
        mode: SyncMode::Websocket,
        gateways: 3,
        ops: 50,
        bug,
    }
}

/// [`options`] in HTTP long-polling mode.
fn http(bug: Option<gateway::EmulatedBug>) -> Options {
    Options {
        mode: SyncMode::Http,
        ..options(bug)
    }
}

#[test]
fn a_seed_with_faults_replays_its_trace_bit_for_bit() {
    replays(&options(None));
}

#[test]
fn a_seed_with_faults_replays_its_trace_bit_for_bit_over_http_long_polling() {
    replays(&http(None));
}

/// A seed whose plan has three of the simulator's faults, a crash among them, runs twice to
/// the same trace; the next seed to another.
fn replays(options: &Options) {
    let seed = (0..100)
        .find(|&seed| {
            let plan = Plan::generate(seed, options.size());
            let faults: Vec<Fault> = plan
                .steps
                .iter()
                .filter_map(|s| match s.action {
                    Action::Fault { fault, .. } => Some(fault),
                    Action::Op(_) => None,
                })
                .collect();
            faults.len() >= 3
                && faults
                    .iter()
                    .any(|f| matches!(f, Fault::CrashGateway { .. } | Fault::CrashAdmin))
        })
        .expect("some seed below 100 plans three faults and a crash");
    let first = run_seed(seed, None, options).unwrap();
    let again = run_seed(seed, None, options).unwrap();
    assert_eq!(first.trace.hash(), again.trace.hash(), "seed {seed}");
    assert_eq!(first.trace.entries, again.trace.entries, "seed {seed}");
    let other = run_seed(seed + 1, None, options).unwrap();
    assert_ne!(first.trace.hash(), other.trace.hash());
}

#[test]
fn the_reference_admin_and_gateway_pass_a_range_of_seeds() {
    passes(&options(None));
}

#[test]
fn the_reference_admin_and_gateway_pass_a_range_of_seeds_over_http_long_polling() {
    passes(&http(None));
}

/// Seeds 0..12 pass, requests answered on the way.
fn passes(options: &Options) {
    for seed in 0..12 {
        let outcome = run_seed(seed, None, options).unwrap();
        let answered = outcome
            .trace
            .entries
            .iter()
            .filter(|e| {
                matches!(e, super::trace::Entry::Request { exchange, .. }
                    if !matches!(exchange.answer, super::routing::Answer::Unanswered(_)))
            })
            .count();
        assert!(answered > 20, "seed {seed}: {answered} requests answered");
        assert!(
            outcome.violation.is_none(),
            "seed {seed}: {:?}\n{}",
            outcome.violation,
            outcome
                .trace
                .entries
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// The first of seeds 0..1000 on which `bug` is caught (websocket), and what caught it.
fn found(bug: gateway::EmulatedBug) -> (u64, String) {
    found_by(&options(Some(bug)))
}

/// The first of seeds 0..1000 on which `options`' bug is caught, and what caught it.
fn found_by(options: &Options) -> (u64, String) {
    let bug = options.bug;
    for seed in 0..1_000 {
        let outcome = run_seed(seed, None, options).unwrap();
        if let Some(violation) = outcome.violation {
            return (seed, violation.to_string());
        }
    }
    panic!("{bug:?} survived 1,000 seeds");
}

#[test]
fn drop_deletes_is_found() {
    let (seed, violation) = found(gateway::EmulatedBug::DropDeletes);
    eprintln!("drop-deletes: seed {seed}: {violation}");
}

#[test]
fn clear_before_refill_is_found() {
    let (seed, violation) = found(gateway::EmulatedBug::ClearBeforeRefill);
    assert!(violation.contains("never committed"), "{violation}");
    eprintln!("clear-before-refill: seed {seed}: {violation}");
}

#[test]
fn reordered_increments_are_found() {
    let (seed, violation) = found(gateway::EmulatedBug::ReorderIncrements);
    eprintln!("reorder-increments: seed {seed}: {violation}");
}

#[test]
fn a_skipped_rule_group_is_found() {
    let (seed, violation) = found(gateway::EmulatedBug::SkipRuleFullSync);
    eprintln!("skip-rule-full-sync: seed {seed}: {violation}");
}

#[test]
fn a_skipped_long_poll_group_is_found() {
    let (seed, violation) = found_by(&http(Some(gateway::EmulatedBug::SkipRuleFullSync)));
    eprintln!("skip-rule-full-sync over http: seed {seed}: {violation}");
}

#[test]
fn a_route_forwarded_as_a_replaced_config_says_is_found_by_the_routing_checker() {
    let (seed, violation) = found(gateway::EmulatedBug::HandleChangeIgnored);
    assert!(violation.starts_with("routing: "), "{violation}");
    eprintln!("handle-change-ignored: seed {seed}: {violation}");
}

#[test]
fn a_failure_shrinks_to_a_replayable_plan_that_still_fails() {
    let options = options(Some(gateway::EmulatedBug::DropDeletes));
    let (seed, _) = found(gateway::EmulatedBug::DropDeletes);
    let failing = run_seed(seed, None, &options).unwrap();
    let shrunk = shrink_seed(&failing, &options).unwrap();
    assert!(shrunk.plan.steps.len() < failing.plan.steps.len());
    let violation = shrunk.violation.clone().expect("the shrunk plan fails");
    // `--seed S --keep …` replays it exactly.
    let kept: Vec<usize> = shrunk.plan.steps.iter().map(|s| s.index).collect();
    let replayed = run_seed(seed, Some(&kept), &options).unwrap();
    assert_eq!(replayed.trace.hash(), shrunk.trace.hash());
    assert_eq!(replayed.violation, Some(violation));
    let command = super::replay_command(&shrunk, &options, true);
    assert!(
        command.ends_with(&format!(
            "--seed {seed} --emulate-bug drop-deletes --keep {}",
            kept.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        )),
        "{command}"
    );
}
