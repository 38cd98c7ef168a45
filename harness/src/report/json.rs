//! The JSON report: `{"gantry_version", "results": [CaseResult…]}`, each result with its
//! backend, seed, checks (kind, outcome, measurements), change timings and final digests
//! (docs/scenarios.md, "Reports").

use std::path::Path;

use serde::Serialize;

use super::CaseResult;

#[derive(Serialize)]
struct Report<'a> {
    gantry_version: &'static str,
    results: &'a [CaseResult],
}

/// The report as pretty JSON.
pub fn render(results: &[CaseResult]) -> String {
    serde_json::to_string_pretty(&Report {
        gantry_version: env!("CARGO_PKG_VERSION"),
        results,
    })
    .expect("results always serialise")
}

/// Writes the report to `path`.
pub fn write(path: &Path, results: &[CaseResult]) -> std::io::Result<()> {
    std::fs::write(path, render(results) + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::BTreeMap;

    use super::super::{
        CaseId, CaseOutcome, CaseRecord, ChangeTiming, CheckOutcome, CheckReport, FinalDigests,
    };
    use crate::judge::distribution::Stats;
    use crate::judge::latency::{Limits, Quantiles};
    use crate::judge::{Measurements, latency};

    #[test]
    fn report_shape() {
        let record = CaseRecord {
            converge_ms: Some(42),
            checks: vec![
                CheckReport {
                    name: "75/25".into(),
                    path: "checks[0]".into(),
                    step: None,
                    kind: "distribution",
                    outcome: CheckOutcome::Passed,
                    elapsed_ms: 812.5,
                    measurements: Measurements::Distribution(Stats {
                        requests: 2000,
                        observed: BTreeMap::from([("alpha".into(), 1490), ("beta".into(), 510)]),
                        observed_shares: BTreeMap::from([
                            ("alpha".into(), 0.745),
                            ("beta".into(), 0.255),
                        ]),
                        expected_shares: BTreeMap::from([
                            ("alpha".into(), 0.75),
                            ("beta".into(), 0.25),
                        ]),
                        chi_square: Some(0.2667),
                        degrees_of_freedom: 1,
                        p_value: Some(0.6056),
                        alpha: 1e-6,
                    }),
                },
                CheckReport {
                    name: "toggle".into(),
                    path: "steps[0].checks[0]".into(),
                    step: Some("move".into()),
                    kind: "latency",
                    outcome: CheckOutcome::Failed(vec![
                        "applied latency p99 40.0 ms is over the limit 20 ms".into(),
                    ]),
                    elapsed_ms: 120.0,
                    measurements: Measurements::Latency(latency::Stats {
                        changes: 20,
                        applied: Quantiles {
                            p50: 0.9,
                            p95: 1.5,
                            p99: 40.0,
                            max: 40.0,
                        },
                        probe: Quantiles {
                            p50: 1.2,
                            p95: 2.0,
                            p99: 41.0,
                            max: 41.0,
                        },
                        limits: Limits {
                            p50: None,
                            p95: None,
                            p99: Some(20.0),
                            max: None,
                        },
                        probe_limits: Limits {
                            p50: None,
                            p95: Some(50.0),
                            p99: None,
                            max: None,
                        },
                        applied_samples: vec![0.9, 40.0],
                    }),
                },
                CheckReport {
                    name: "apply time".into(),
                    path: "checks[1]".into(),
                    step: None,
                    kind: "latency",
                    outcome: CheckOutcome::Skipped("the target has no config digest".into()),
                    elapsed_ms: 0.0,
                    measurements: Measurements::None,
                },
            ],
            timings: vec![ChangeTiming {
                change: "setup".into(),
                applied_ms: Some(0.8),
                probe_ms: 10.2,
                converged_ms: 11.0,
            }],
            digests: Some(FinalDigests {
                admin: "abc".into(),
                gateway: "abc".into(),
            }),
        };
        let mut passed = CaseResult::bare(
            CaseId::new("lb", "websocket"),
            "cases/scenarios/balance/lb.yaml".into(),
            "host".into(),
            7,
            CaseOutcome::Passed,
        );
        passed.duration_ms = 2345.6;
        passed.converge_ms = record.converge_ms;
        passed.checks = record.checks;
        passed.timings = record.timings;
        passed.digests = record.digests;
        let mut broken = CaseResult::bare(
            CaseId::new("broken", "parse"),
            "cases/scenarios/broken.yaml".into(),
            "host".into(),
            7,
            CaseOutcome::Passed,
        );
        broken.outcome =
            CaseOutcome::Failed("cases/scenarios/broken.yaml:3:1: unknown field `x`".into());
        let mut skipped = CaseResult::bare(
            CaseId::new("watch", "etcd"),
            "cases/scenarios/sync/watch.yaml".into(),
            "host".into(),
            7,
            CaseOutcome::Passed,
        );
        skipped.outcome =
            CaseOutcome::Skipped("etcd is not installed (GANTRY_REQUIRE does not name it)".into());
        insta::assert_snapshot!(render(&[passed, broken, skipped]));
    }
}
