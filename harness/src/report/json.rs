//! The JSON report: `{"gantry_version", "results": [CaseResult…]}`, each result with its
//! case file (from the workspace root), backend, seed, checks (kind, outcome, measurements,
//! and `at`, the `file:line` of a failed one), change timings and final digests
//! (docs/scenarios.md, "Reports"). [`read`] reads one back, for merging the reports of a
//! run's shards ([`merge()`](super::merge())).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::place::{Locate, failed_at, locate_in_file, shown};
use super::{CaseResult, CheckReport};

/// The report as [`render`] writes it.
#[derive(Serialize)]
struct Written<'a> {
    gantry_version: &'static str,
    results: Vec<Placed<'a>>,
}

/// A result as written: its file named from the workspace root, each failed check with `at`.
struct Placed<'a> {
    result: &'a CaseResult,
    checks: Vec<PlacedCheck<'a>>,
}

impl Serialize for Placed<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.result).serialize_flat(s, &shown(&self.result.file), &self.checks)
    }
}

/// A check as written: its fields, then `at` (`file:line`) when it failed. Reading a report
/// back ignores `at`: it follows from the file and the check's `path`.
#[derive(Serialize)]
struct PlacedCheck<'a> {
    #[serde(flatten)]
    check: &'a CheckReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<String>,
}

/// A JSON report read back by [`read`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Report {
    /// The version of gantry that wrote it.
    pub gantry_version: String,
    /// Its results, in the order written.
    pub results: Vec<CaseResult>,
}

/// The report as pretty JSON, failed checks placed from their case files.
pub fn render(results: &[CaseResult]) -> String {
    render_with(results, &locate_in_file)
}

/// The report as pretty JSON, failed checks placed by `locate`.
pub fn render_with(results: &[CaseResult], locate: Locate<'_>) -> String {
    serde_json::to_string_pretty(&Written {
        gantry_version: env!("CARGO_PKG_VERSION"),
        results: results
            .iter()
            .map(|result| Placed {
                result,
                checks: (result.checks.iter())
                    .map(|check| PlacedCheck {
                        check,
                        at: failed_at(result, check, locate),
                    })
                    .collect(),
            })
            .collect(),
    })
    .expect("results always serialise")
}

/// Writes the report to `path`.
pub fn write(path: &Path, results: &[CaseResult]) -> std::io::Result<()> {
    std::fs::write(path, render(results) + "\n")
}

/// Reads the JSON report at `path`, as [`write()`] wrote it.
pub fn read(path: &Path) -> Result<Report, ReadError> {
    let src = std::fs::read_to_string(path).map_err(|error| ReadError::Io {
        file: path.to_owned(),
        error,
    })?;
    let invalid = |at: String, e: serde_json::Error| {
        // serde_json ends its message with the position, which the error shows first.
        let message = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        ReadError::Invalid {
            file: path.to_owned(),
            line: e.line(),
            column: e.column(),
            at,
            message: message.strip_suffix(&suffix).unwrap_or(&message).to_owned(),
        }
    };
    let mut de = serde_json::Deserializer::from_str(&src);
    let report = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let at = e.path().to_string();
        invalid(at, e.into_inner())
    })?;
    de.end().map_err(|e| invalid(".".into(), e))?;
    Ok(report)
}

/// Why [`read`] could not read a JSON report.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file cannot be read.
    #[error("cannot read the JSON report {}: {error}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The file is not a JSON report gantry wrote.
    #[error("{}:{line}:{column}: not a gantry JSON report: {message} (at `{at}`)", file.display())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// Where in it, from 1.
        line: usize,
        /// Where in the line, from 1.
        column: usize,
        /// The field, as a JSON path (`results[2].checks[0].kind`; `.` for the whole report).
        at: String,
        /// What is wrong there.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::{BTreeMap, BTreeSet};

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
                        seed: None,
                        unseeded: None,
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
        // Reached through `harness/..`: written from the workspace root.
        let mut passed = CaseResult::bare(
            CaseId::new("lb", "websocket"),
            format!("{}/cases/scenarios/balance/lb.yaml", crate::WORKSPACE_DIR),
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
        let locate = |file: &str, path: &str| {
            (file.ends_with("lb.yaml") && path == "steps[0].checks[0]").then_some(31)
        };
        insta::assert_snapshot!(render_with(&[passed, broken, skipped], &locate));
    }

    /// A passed result with a check of every kind (and every kind of measurement), a failed
    /// one, a skipped one and a file that does not parse.
    fn every_kind() -> Vec<CaseResult> {
        use crate::judge::{burst, churn, hash, round_robin, steer};

        let check = |kind: &'static str, measurements: Measurements| CheckReport {
            name: format!("a {kind} check"),
            path: "checks[0]".into(),
            step: Some("move".into()),
            kind,
            outcome: CheckOutcome::Passed,
            // Not exactly representable: the reading must round-trip it.
            elapsed_ms: 0.1 + 0.2,
            measurements,
        };
        let quantiles = Quantiles {
            p50: 1.5,
            p95: 2.25,
            p99: 3.0,
            max: 17.125,
        };
        let limits = Limits {
            p50: None,
            p95: Some(50.0),
            p99: None,
            max: Some(1e3),
        };
        let ups = |a: u64, b: u64| BTreeMap::from([("alpha".into(), a), ("beta".into(), b)]);
        let phase = |sent, missed| churn::PhaseStats {
            sent,
            missed,
            latency: quantiles,
        };
        let mut passed = CaseResult::bare(
            CaseId::new("every kind", "zookeeper"),
            "cases/scenarios/every.yaml".into(),
            "docker".into(),
            u64::MAX,
            CaseOutcome::Passed,
        );
        passed.duration_ms = 1234.567;
        passed.converge_ms = Some(89);
        passed.checks = vec![
            check("probe", Measurements::Probe { sent: 3, passed: 3 }),
            check(
                "distribution",
                Measurements::Distribution(Stats {
                    requests: 2000,
                    observed: ups(1490, 510),
                    observed_shares: BTreeMap::from([("alpha".into(), 0.745)]),
                    expected_shares: BTreeMap::from([("alpha".into(), 0.75)]),
                    chi_square: None,
                    degrees_of_freedom: 1,
                    p_value: Some(0.6056),
                    alpha: 1e-6,
                    seed: None,
                    unseeded: None,
                }),
            ),
            check(
                "roundRobin",
                Measurements::RoundRobin(round_robin::Stats {
                    expected_cycle: vec!["alpha".into(), "beta".into()],
                    observed: vec!["beta".into(), "alpha".into(), "HTTP 503".into()],
                    rotation: None,
                }),
            ),
            check(
                "hash",
                Measurements::Hash(hash::Stats {
                    clients: 16,
                    spread: BTreeMap::from([("alpha".into(), 9), ("beta".into(), 7)]),
                    mismatches: 1,
                    moved: Some(3),
                    expected_moves: None,
                }),
            ),
            check(
                "steer",
                Measurements::Steer(steer::Stats {
                    requests: 200,
                    observed: ups(180, 20),
                    slow: "beta".into(),
                    slow_share: 0.1,
                    max_share: 0.3,
                    min_share: 0.2,
                }),
            ),
            check(
                "latency",
                Measurements::Latency(latency::Stats {
                    changes: 2,
                    applied: quantiles,
                    probe: quantiles,
                    limits,
                    probe_limits: limits,
                    applied_samples: vec![0.9, 40.0, 1.0 / 3.0],
                }),
            ),
            check(
                "burst",
                Measurements::Burst(burst::Stats {
                    sent: 10,
                    statuses: BTreeMap::from([(200, 8), (503, 1)]),
                    failed: 1,
                }),
            ),
            check(
                "churn",
                Measurements::Churn(churn::Stats {
                    baseline: phase(400, 0),
                    churn: phase(380, 2),
                    changes: 20,
                    failed_changes: 1,
                    asked_rate: 4.0,
                    achieved_rate: 3.8,
                    held: 0,
                    limits: Default::default(),
                }),
            ),
            check(
                "syncStatus",
                Measurements::SyncStatus(crate::judge::sync_status::Stats {
                    reads: 2,
                    state: Some("STALE".into()),
                    observed: Some(r#"{"adminDigest":"abc","gateways":[]}"#.into()),
                }),
            ),
            check(
                "synced",
                Measurements::Synced(crate::judge::synced::Stats {
                    reads: 3,
                    held: Some([("alpha".to_owned(), 80), ("beta".to_owned(), 20)].into()),
                }),
            ),
        ];
        passed.timings = vec![ChangeTiming {
            change: "step move".into(),
            applied_ms: None,
            probe_ms: 10.2,
            converged_ms: 11.0,
        }];
        passed.digests = Some(FinalDigests {
            admin: "abc".into(),
            gateway: "abd".into(),
        });
        let mut failed = CaseResult::bare(
            CaseId::new("isolated", "http"),
            "cases/scenarios/isolated.yaml".into(),
            "host".into(),
            7,
            CaseOutcome::Failed("step `move`: the gateway saw the change".into()),
        );
        failed.checks = vec![
            CheckReport {
                outcome: CheckOutcome::Skipped("no config digest".into()),
                ..check("digest", Measurements::None)
            },
            CheckReport {
                outcome: CheckOutcome::Failed(vec!["digests equal after 2 rounds".into()]),
                ..check("isolation", Measurements::Probe { sent: 4, passed: 2 })
            },
        ];
        vec![
            passed,
            failed,
            CaseResult::bare(
                CaseId::new("watch", "etcd"),
                "cases/scenarios/watch.yaml".into(),
                "host".into(),
                7,
                CaseOutcome::Skipped("etcd is not installed".into()),
            ),
            CaseResult::bare(
                CaseId::unparsed("broken"),
                "cases/scenarios/broken.yaml".into(),
                "host".into(),
                7,
                CaseOutcome::Failed("broken.yaml:3:1: unknown field `x`".into()),
            ),
        ]
    }

    /// Writes `text` as `report.json` in `dir` and reads it back.
    fn read_text(dir: &Path, text: &str) -> (PathBuf, Result<Report, ReadError>) {
        let path = dir.join("report.json");
        std::fs::write(&path, text).unwrap();
        let read = read(&path);
        (path, read)
    }

    /// The line of the first line of `text` that contains `what`, from 1.
    fn line_of(text: &str, what: &str) -> usize {
        text.lines().position(|l| l.contains(what)).unwrap() + 1
    }

    #[test]
    fn a_report_reads_back_as_written() {
        let results = every_kind();
        let measured: BTreeSet<String> = (results.iter().flat_map(|r| &r.checks))
            .map(|c| serde_json::to_value(&c.measurements).unwrap()["kind"].to_string())
            .collect();
        let every: BTreeSet<String> = (["probe", "none"].iter().chain(crate::judge::JUDGE_KEYS))
            .map(|k| format!("{k:?}"))
            .collect();
        assert_eq!(measured, every, "the sample misses a kind of measurement");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        write(&path, &results).unwrap();
        let report = read(&path).unwrap();
        assert_eq!(report.gantry_version, env!("CARGO_PKG_VERSION"));
        assert_eq!(report.results, results);
        assert_eq!(render(&report.results), render(&results));
    }

    #[test]
    fn an_unknown_check_kind_is_named_with_its_place() {
        let text = render(&every_kind()).replacen(r#""kind": "hash""#, r#""kind": "hush""#, 1);
        let dir = tempfile::tempdir().unwrap();
        let (path, read) = read_text(dir.path(), &text);
        let Err(ReadError::Invalid {
            file,
            line,
            at,
            message,
            ..
        }) = &read
        else {
            panic!("{read:?}");
        };
        assert_eq!(file, &path);
        assert_eq!(*line, line_of(&text, "hush"));
        assert_eq!(at, "results[0].checks[3].kind");
        assert!(message.starts_with("unknown check kind `hush` (known: probe, distribution"));
        let line = *line;
        let shown = read.unwrap_err().to_string();
        assert!(
            shown.starts_with(&format!("{}:{line}:", path.display())),
            "{shown}"
        );
    }

    #[test]
    fn a_result_with_two_outcomes_is_refused() {
        let text = render(&every_kind()).replacen(r#""passed": true"#, r#""passed": false"#, 1);
        let dir = tempfile::tempdir().unwrap();
        let (_, read) = read_text(dir.path(), &text);
        let Err(ReadError::Invalid { at, message, .. }) = &read else {
            panic!("{read:?}");
        };
        assert_eq!(at, "results[0]");
        assert!(
            message.starts_with("case `every kind@zookeeper`: `passed: false` with error None"),
            "{message}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_report_is_named_with_the_position() {
        let dir = tempfile::tempdir().unwrap();
        let text = render(&every_kind());
        let cut = text.find(r#""timings""#).unwrap();
        let (path, read) = read_text(dir.path(), &text[..cut]);
        let shown = read.unwrap_err().to_string();
        let line = line_of(&text, r#""timings""#);
        assert!(
            shown.starts_with(&format!("{}:{line}:", path.display())),
            "{shown}"
        );
        assert!(shown.contains("EOF while parsing"), "{shown}");

        let (_, read) = read_text(dir.path(), &format!("{text}\n[]"));
        let Err(ReadError::Invalid { line, message, .. }) = read else {
            panic!("{read:?}");
        };
        assert_eq!(line, text.lines().count() + 1);
        assert_eq!(message, "trailing characters");

        let missing = dir.path().join("missing.json");
        let shown = super::read(&missing).unwrap_err().to_string();
        assert!(shown.contains(&missing.display().to_string()), "{shown}");
    }
}
