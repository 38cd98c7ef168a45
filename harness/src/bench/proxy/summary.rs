//! From the rounds' summaries to the report's figures: medians, added latency, ratios,
//! connection reuse and delayed-ACK stalls.

use super::super::load::{Pass, Summary};
use super::super::median;
use super::super::upstream::UpstreamKind;
use super::report::{
    Added, AddedRatio, Cost, KindResult, Open, PassName, Ratio, TargetResult, UpstreamUse,
};

fn pass_name(pass: Pass) -> PassName {
    match pass {
        Pass::Closed { .. } => PassName::Closed,
        Pass::Open { rate, .. } => PassName::Open(rate),
    }
}

/// The connection reuse figures, with a warning below two requests per connection.
pub(crate) fn upstream_use(
    target: &str,
    connections: u64,
    requests: u64,
    connections_since_start: u64,
) -> UpstreamUse {
    let per = (connections > 0).then(|| requests as f64 / connections as f64);
    let warning = per.filter(|p| *p < 2.0 && requests > 0).map(|p| {
        format!(
            "{target} opened {connections} upstream connections for {requests} requests \
             ({p:.2} per connection): a connection per request, no keep-alive reuse"
        )
    });
    UpstreamUse {
        connections,
        connections_since_start,
        requests,
        requests_per_connection: per,
        warning,
    }
}

/// The medians of a pass's summaries over the rounds (counts are summed).
pub(crate) fn median_summary(rounds: &[Summary]) -> Summary {
    let m =
        |f: fn(&Summary) -> f64| median(&rounds.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0);
    Summary {
        rps: m(|s| s.rps),
        p50_ms: m(|s| s.p50_ms),
        p99_ms: m(|s| s.p99_ms),
        p999_ms: m(|s| s.p999_ms),
        max_ms: m(|s| s.max_ms),
        ok: rounds.iter().map(|s| s.ok).sum(),
        failed: rounds.iter().map(|s| s.failed).sum(),
        connects: rounds.iter().map(|s| s.connects).sum(),
        timer_late_p99_ms: m(|s| s.timer_late_p99_ms),
    }
}

/// The medians of the rounds' costs; `None` when none was measured.
pub(crate) fn median_cost(rounds: &[Cost]) -> Option<Cost> {
    let m = |f: fn(&Cost) -> f64| median(&rounds.iter().map(f).collect::<Vec<_>>());
    Some(Cost {
        cpu_us_per_request: m(|c| c.cpu_us_per_request)?,
        switches_per_100: m(|c| c.switches_per_100)?,
    })
}

/// Medians, added latency and ratios from `rounds[target][round][pass]` and the closed
/// passes' `costs[target][round]`; target 0 is direct.
pub(crate) fn summarise(
    kind: UpstreamKind,
    targets: &[(String, Option<usize>)],
    passes: &[Pass],
    rounds: &[Vec<Vec<Summary>>],
    costs: &[Vec<Cost>],
    uses: Vec<UpstreamUse>,
) -> KindResult {
    let per_pass =
        |t: usize, p: usize| -> Vec<Summary> { rounds[t].iter().map(|r| r[p]).collect() };
    let mut out = Vec::new();
    for (t, ((name, selectors), upstream)) in targets.iter().zip(uses).enumerate() {
        let closed = median_summary(&per_pass(t, 0));
        let open = passes
            .iter()
            .enumerate()
            .skip(1)
            .filter_map(|(p, pass)| match pass {
                Pass::Open { rate, .. } => Some(Open {
                    rate: *rate,
                    summary: median_summary(&per_pass(t, p)),
                }),
                Pass::Closed { .. } => None,
            })
            .collect();
        let added = if t == 0 {
            Vec::new()
        } else {
            passes
                .iter()
                .enumerate()
                .map(|(p, pass)| {
                    let diffs: Vec<f64> = rounds[t]
                        .iter()
                        .zip(&rounds[0])
                        .map(|(mine, direct)| mine[p].p50_ms - direct[p].p50_ms)
                        .collect();
                    Added {
                        pass: pass_name(*pass),
                        p50_ms: median(&diffs).unwrap_or(0.0),
                    }
                })
                .collect()
        };
        out.push(TargetResult {
            target: name.clone(),
            selectors: *selectors,
            closed,
            open,
            added,
            upstream,
            cost: costs.get(t).and_then(|c| median_cost(c)),
            rounds: rounds[t].clone(),
        });
    }
    let stalls = stalls(kind, &out);
    let gantries = || out.iter().filter(|t| t.target.starts_with(GANTRY));
    let ratios = match out.iter().find(|t| t.target == "nginx") {
        None => Vec::new(),
        Some(nginx) => gantries().filter_map(|t| ratio(t, nginx)).collect(),
    };
    let baseline_ratios = gantries()
        .filter_map(|t| {
            let name = format!("{BASELINE}{}", t.selectors?);
            ratio(t, out.iter().find(|b| b.target == name)?)
        })
        .collect();
    KindResult {
        kind,
        targets: out,
        ratios,
        baseline_ratios,
        stalls,
    }
}

/// The current build's targets are `gantry-<selectors>`…
pub(crate) const GANTRY: &str = "gantry-";
/// …and the baseline revision's `baseline-<selectors>`.
pub(crate) const BASELINE: &str = "baseline-";

/// `t` over `base` (nginx, or the baseline's gateway with as many selectors).
fn ratio(t: &TargetResult, base: &TargetResult) -> Option<Ratio> {
    Some(Ratio {
        selectors: t.selectors?,
        throughput: if base.closed.rps > 0.0 {
            t.closed.rps / base.closed.rps
        } else {
            0.0
        },
        added_latency: t
            .added
            .iter()
            .zip(&base.added)
            .map(|(g, n)| AddedRatio {
                pass: g.pass,
                ratio: (n.p50_ms > 0.0).then(|| g.p50_ms / n.p50_ms),
            })
            .collect(),
        cpu_per_request: t.cost.zip(base.cost).and_then(|(g, n)| {
            (n.cpu_us_per_request > 0.0).then(|| g.cpu_us_per_request / n.cpu_us_per_request)
        }),
    })
}

/// The baseline ratios whose throughput is below `threshold`, as lines naming them.
pub(crate) fn regressions(results: &[KindResult], rev: &str, threshold: f64) -> Vec<String> {
    results
        .iter()
        .flat_map(|k| {
            k.baseline_ratios
                .iter()
                .filter(|r| r.throughput < threshold)
                .map(move |r| {
                    format!(
                        "[{}] gantry-{} at {:.2}× the throughput of {rev}'s (threshold {threshold:.2}×)",
                        k.kind.name(),
                        r.selectors,
                        r.throughput
                    )
                })
        })
        .collect()
}

/// Open-loop passes whose p99 sits in the 35–60 ms band while direct's is under 10 ms: the
/// signature of a write that waited for the client's delayed ACK (Nagle), as a proxy without
/// TCP_NODELAY shows with the `split` upstream.
pub(super) fn stalls(kind: UpstreamKind, targets: &[TargetResult]) -> Vec<String> {
    let Some(direct) = targets.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in targets.iter().skip(1) {
        for (mine, base) in t.open.iter().zip(&direct.open) {
            let p99 = mine.summary.p99_ms;
            if (35.0..=60.0).contains(&p99) && base.summary.p99_ms < 10.0 {
                out.push(format!(
                    "{} with the `{}` upstream at {} rps: p99 {p99:.1} ms against direct's {:.1} ms, \
                     the ~40 ms of a write held for the client's delayed ACK (missing TCP_NODELAY?)",
                    t.target,
                    kind.name(),
                    mine.rate,
                    base.summary.p99_ms
                ));
            }
        }
    }
    out
}
