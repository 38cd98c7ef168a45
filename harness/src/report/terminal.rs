//! Terminal output: progress while cases run (a bar per sync mode on a terminal, a plain line
//! per finished case otherwise), and a summary table at the end.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::place::{Locate, failed_at, locate_in_file, shown};
use super::{CaseId, CaseOutcome, CaseResult, CheckOutcome, Event};

/// Shows a run's progress: per mode, cases done of the total, the current case and step, and
/// the elapsed time.
#[derive(Debug)]
pub struct TerminalReporter {
    multi: MultiProgress,
    bars: BTreeMap<String, ProgressBar>,
    /// Not a terminal (CI logs): a line per finished case instead of bars.
    plain: bool,
}

impl TerminalReporter {
    /// A reporter for `totals`: cases per mode (`parse` for files that do not parse). Bars
    /// when stderr is a terminal, plain lines otherwise.
    pub fn new(totals: &[(String, u64)]) -> Self {
        Self::with_target(totals, !std::io::stderr().is_terminal())
    }

    fn with_target(totals: &[(String, u64)], plain: bool) -> Self {
        let multi = MultiProgress::with_draw_target(if plain {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        });
        let style = ProgressStyle::with_template("{prefix:>10} [{pos}/{len}] {elapsed:>4} {msg}")
            .expect("the template is valid");
        let bars = totals
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(mode, n)| {
                let bar = multi.add(ProgressBar::new(*n));
                bar.set_style(style.clone());
                bar.set_prefix(mode.clone());
                (mode.clone(), bar)
            })
            .collect();
        Self { multi, bars, plain }
    }

    fn bar(&self, id: &CaseId) -> Option<&ProgressBar> {
        self.bars.get(&id.mode)
    }

    /// The line printed when a case finishes.
    pub fn line(r: &CaseResult) -> String {
        let seconds = r.duration_ms / 1000.0;
        match &r.outcome {
            CaseOutcome::Skipped(why) => format!("SKIP {}: {why}", r.id),
            CaseOutcome::Passed => format!("PASS {} ({seconds:.1} s)", r.id),
            CaseOutcome::Failed(_) => format!("FAIL {} ({seconds:.1} s)", r.id),
        }
    }

    /// Updates the display for one event.
    pub fn handle(&self, event: &Event) {
        match event {
            Event::CaseStarted { id } => {
                if let Some(bar) = self.bar(id) {
                    bar.set_message(id.to_string());
                }
            }
            Event::StepStarted { id, step } => {
                if let Some(bar) = self.bar(id) {
                    bar.set_message(format!("{id}: {step}"));
                }
            }
            Event::CheckFinished { id, check } => {
                if let Some(bar) = self.bar(id) {
                    bar.set_message(format!("{id}: check `{}`", check.name));
                }
            }
            Event::CaseFinished(r) => {
                if let Some(bar) = self.bar(&r.id) {
                    bar.inc(1);
                }
                if self.plain {
                    eprintln!("{}", Self::line(r));
                } else {
                    let _ = self.multi.println(Self::line(r));
                }
            }
        }
    }

    /// Removes the bars.
    pub fn finish(&self) {
        for bar in self.bars.values() {
            bar.finish_and_clear();
        }
    }
}

/// Every failure with its case file, each failed check's `file:line` and the error, for
/// printing before the table.
pub fn failure_details(results: &[CaseResult]) -> String {
    failure_details_with(results, &locate_in_file)
}

/// [`failure_details`], failed checks placed by `locate`.
pub fn failure_details_with(results: &[CaseResult], locate: Locate<'_>) -> String {
    let mut out = String::new();
    for r in results {
        let Some(error) = r.outcome.error() else {
            continue;
        };
        out += &format!("FAIL {} ({})\n", r.id, shown(&r.file));
        for c in &r.checks {
            if let Some(at) = failed_at(r, c, locate) {
                out += &format!("  check `{}` failed at {at}\n", c.name);
            }
        }
        out += &format!("{error}\n\n");
    }
    out
}

/// With `--verbose`: every case that ran, its file, each check's verdict and time, and each
/// change's timings, ms after the admin's 2xx: applied (the gateway's word), live (the wait's
/// probes pass), digests equal (the gateway holds the admin's whole config).
pub fn case_details(results: &[CaseResult]) -> String {
    let mut out = String::new();
    for r in results
        .iter()
        .filter(|r| r.outcome.skipped().is_none() && !r.id.is_parse())
    {
        let verdict = if r.outcome.passed() { "ok" } else { "FAIL" };
        out += &format!("{} ({}): {verdict}\n", r.id, r.file);
        for c in &r.checks {
            let outcome = match &c.outcome {
                CheckOutcome::Passed => "ok".to_owned(),
                CheckOutcome::Failed(misses) => format!("FAIL ({} misses)", misses.len()),
                CheckOutcome::Skipped(why) => format!("skip: {why}"),
            };
            let step = c
                .step
                .as_deref()
                .map_or(String::new(), |s| format!(" [step `{s}`]"));
            out += &format!(
                "  check `{}`{step} ({}): {outcome} in {:.0} ms\n",
                c.name, c.kind, c.elapsed_ms
            );
        }
        for t in &r.timings {
            out += &format!(
                "  {}: applied {}, live {:.1} ms, digests equal {:.1} ms\n",
                t.change,
                t.applied_ms
                    .map_or_else(|| "unknown".to_owned(), |ms| format!("{ms:.1} ms")),
                t.probe_ms,
                t.converged_ms
            );
        }
    }
    out
}

/// Every skipped case with the reason, for printing before the table.
pub fn skip_notes(results: &[CaseResult]) -> String {
    results
        .iter()
        .filter_map(|r| Some(format!("SKIP {}: {}\n", r.id, r.outcome.skipped()?)))
        .collect()
}

/// A line per skipped check (with the reason) and per statistical verdict: the χ² of each
/// distribution check and the quantiles of each latency check.
pub fn check_notes(results: &[CaseResult]) -> String {
    let mut out = String::new();
    // A check skipped for one reason in many cases (an external target without the digest
    // skips `digest equality` in every case) is one line naming them.
    let mut skips: Vec<((&str, &str), Vec<String>)> = Vec::new();
    for r in results {
        for c in &r.checks {
            let at = match &c.step {
                Some(step) => format!("{} step `{step}`", r.id),
                None => r.id.to_string(),
            };
            if let CheckOutcome::Skipped(why) = &c.outcome {
                let key = (c.name.as_str(), why.as_str());
                match skips.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, cases)) => cases.push(at),
                    None => skips.push((key, vec![at])),
                }
                continue;
            }
            if let Some(line) = c.measurements.measured().and_then(|m| m.terminal()) {
                out += &format!("{at}: {} `{}`: {line}\n", c.kind, c.name);
            }
        }
    }
    let mut skipped = String::new();
    for ((name, why), cases) in skips {
        skipped += &match cases.as_slice() {
            [one] => format!("SKIP check `{name}` of {one}: {why}\n"),
            many => format!(
                "SKIP check `{name}` of {} cases ({}): {why}\n",
                many.len(),
                many.join(", ")
            ),
        };
    }
    skipped + &out
}

/// The summary table: scenario, mode, result, setup live (ms from setup's 2xx to the wait's
/// probes passing, [`CaseResult::converge_ms`]); then the totals.
pub fn summary_table(results: &[CaseResult]) -> String {
    let w = results
        .iter()
        .map(|r| r.id.case.len())
        .max()
        .unwrap_or(0)
        .max("scenario".len());
    let m = results
        .iter()
        .map(|r| r.id.mode.len())
        .max()
        .unwrap_or(0)
        .max("mode".len());
    let mut out = format!(
        "{:<w$}  {:<m$}  {:<6}  {:>10}\n",
        "scenario", "mode", "result", "setup live"
    );
    for r in results {
        let verdict = match r.outcome {
            CaseOutcome::Skipped(_) => "skip",
            CaseOutcome::Passed => "pass",
            CaseOutcome::Failed(_) => "FAIL",
        };
        let ms = r
            .converge_ms
            .map_or_else(|| "-".to_owned(), |c| format!("{c} ms"));
        out += &format!(
            "{:<w$}  {:<m$}  {verdict:<6}  {ms:>10}\n",
            r.id.case, r.id.mode
        );
    }
    let passed = results.iter().filter(|r| r.outcome.passed()).count();
    let failed = results.iter().filter(|r| r.failed()).count();
    out += &format!("{passed} passed, {failed} failed");
    let skipped = results.len() - passed - failed;
    if skipped > 0 {
        out += &format!(", {skipped} skipped");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Measurements;

    #[test]
    fn a_bar_per_mode_counts_its_cases() {
        let r = TerminalReporter::with_target(
            &[
                ("websocket".into(), 2),
                ("etcd".into(), 1),
                ("parse".into(), 0),
            ],
            true,
        );
        assert_eq!(r.bars.keys().collect::<Vec<_>>(), ["etcd", "websocket"]);
        let mut done = CaseResult::bare(
            CaseId::new("a", "websocket"),
            "a.yaml".into(),
            "host".into(),
            1,
            CaseOutcome::Passed,
        );
        done.duration_ms = 1234.0;
        assert_eq!(TerminalReporter::line(&done), "PASS a@websocket (1.2 s)");
        r.handle(&Event::CaseStarted {
            id: CaseId::new("a", "websocket"),
        });
        r.handle(&Event::CaseFinished(done));
        assert_eq!(r.bars["websocket"].position(), 1);
        assert_eq!(r.bars["etcd"].position(), 0);
    }

    fn result(case: &str, mode: &str) -> CaseResult {
        CaseResult::bare(
            CaseId::new(case, mode),
            "x.yaml".into(),
            "host".into(),
            1,
            CaseOutcome::Passed,
        )
    }

    #[test]
    fn verbose_details_list_checks_and_timings_of_cases_that_ran() {
        use crate::report::{ChangeTiming, CheckReport};
        let mut ran = result("uri_equal", "http");
        ran.checks.push(CheckReport {
            name: "routes".into(),
            path: "checks[0]".into(),
            step: None,
            kind: "probe",
            outcome: CheckOutcome::Passed,
            elapsed_ms: 3.2,
            measurements: Measurements::Probe { sent: 1, passed: 1 },
        });
        ran.timings.push(ChangeTiming {
            change: "setup".into(),
            applied_ms: Some(1.25),
            probe_ms: 12.0,
            converged_ms: 14.5,
        });
        let mut skipped = result("uri_equal", "etcd");
        skipped.outcome = CaseOutcome::Skipped("etcd not installed".into());
        assert_eq!(
            case_details(&[ran, skipped]),
            "uri_equal@http (x.yaml): ok\n  check `routes` (probe): ok in 3 ms\n  \
             setup: applied 1.2 ms, live 12.0 ms, digests equal 14.5 ms\n"
        );
    }

    #[test]
    fn skipped_cases_are_neither_passed_nor_failed() {
        let mut r = result("uri_equal", "etcd");
        r.outcome = CaseOutcome::Skipped("etcd server not available".into());
        let results = vec![r];
        assert!(!results[0].failed());
        assert_eq!(failure_details(&results), "");
        assert_eq!(
            skip_notes(&results),
            "SKIP uri_equal@etcd: etcd server not available\n"
        );
        assert!(
            summary_table(&results)
                .ends_with("uri_equal  etcd  skip             -\n0 passed, 0 failed, 1 skipped"),
            "{}",
            summary_table(&results)
        );
    }

    /// One reason for one check in several cases is one line naming them.
    #[test]
    fn a_check_skipped_alike_in_many_cases_is_one_line() {
        use crate::report::CheckReport;
        let skipped = |case: &str, why: &str| {
            let mut r = result(case, "websocket");
            r.checks = vec![CheckReport {
                name: "digest equality".into(),
                path: "(every change)".into(),
                step: None,
                kind: "digest",
                outcome: CheckOutcome::Skipped(why.into()),
                elapsed_ms: 0.0,
                measurements: Measurements::None,
            }];
            r
        };
        let results = [
            skipped("a", "no digest"),
            skipped("b", "other"),
            skipped("c", "no digest"),
        ];
        assert_eq!(
            check_notes(&results),
            "SKIP check `digest equality` of 2 cases (a@websocket, c@websocket): no digest\n\
             SKIP check `digest equality` of b@websocket: other\n"
        );
    }

    #[test]
    fn check_notes_name_skips_and_statistics() {
        use crate::judge::latency::{Limits, Quantiles, Stats};
        use crate::report::CheckReport;
        let mut r = result("hash", "websocket");
        r.checks = vec![
            CheckReport {
                name: "sticky".into(),
                path: "steps[0].checks[0]".into(),
                step: Some("add".into()),
                kind: "hash",
                outcome: CheckOutcome::Skipped("no client addresses".into()),
                elapsed_ms: 0.0,
                measurements: Measurements::None,
            },
            CheckReport {
                name: "toggle".into(),
                path: "checks[0]".into(),
                step: None,
                kind: "latency",
                outcome: CheckOutcome::Passed,
                elapsed_ms: 1.0,
                measurements: Measurements::Latency(Stats {
                    changes: 4,
                    applied: Quantiles {
                        p50: 1.0,
                        p95: 2.0,
                        p99: 3.0,
                        max: 4.0,
                    },
                    probe: Quantiles {
                        p50: 1.5,
                        p95: 2.5,
                        p99: 3.5,
                        max: 4.5,
                    },
                    limits: Limits {
                        p50: None,
                        p95: None,
                        p99: None,
                        max: None,
                    },
                    probe_limits: Limits {
                        p50: None,
                        p95: None,
                        p99: None,
                        max: None,
                    },
                    applied_samples: vec![1.0, 4.0],
                }),
            },
        ];
        assert_eq!(
            check_notes(&[r]),
            "SKIP check `sticky` of hash@websocket step `add`: no client addresses\n\
             hash@websocket: latency `toggle`: applied p50 1.00 ms, p99 3.00 ms, max 4.00 ms; \
             probe p50 1.50 ms, p99 3.50 ms (4 changes)\n"
        );
    }

    #[test]
    fn table_lists_every_case() {
        let mut ok = result("uri_equal", "websocket");
        ok.converge_ms = Some(7);
        let mut bad = result("bad", "parse");
        bad.outcome = CaseOutcome::Failed("x".into());
        let results = vec![ok, bad];
        let t = summary_table(&results);
        assert_eq!(
            t,
            "scenario   mode       result  setup live\n\
             uri_equal  websocket  pass          7 ms\n\
             bad        parse      FAIL             -\n\
             1 passed, 1 failed"
        );
        assert_eq!(failure_details(&results), "FAIL bad@parse (x.yaml)\nx\n\n");
    }

    /// A failed check is named with the line of its case file, read from the file.
    #[test]
    fn a_failure_names_the_file_and_line_of_its_failed_check() {
        use crate::report::CheckReport;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("routes.yaml");
        std::fs::write(
            &file,
            "name: routes\nchecks:\n  - name: first\n    request: { path: /a }\n  - name: second\n    request: { path: /b }\n",
        )
        .unwrap();
        let mut r = result("routes", "http");
        r.file = file.display().to_string();
        r.outcome = CaseOutcome::Failed("routes@http failed at checks".into());
        let check = |name: &str, path: &str, outcome| CheckReport {
            name: name.into(),
            path: path.into(),
            step: None,
            kind: "probe",
            outcome,
            elapsed_ms: 1.0,
            measurements: Measurements::None,
        };
        r.checks = vec![
            check("first", "checks[0]", CheckOutcome::Passed),
            check(
                "second",
                "checks[1]",
                CheckOutcome::Failed(vec!["HTTP 404".into()]),
            ),
        ];
        let shown = file.display();
        assert_eq!(
            failure_details(&[r]),
            format!(
                "FAIL routes@http ({shown})\n  check `second` failed at {shown}:5\n\
                 routes@http failed at checks\n\n"
            )
        );
    }

    #[test]
    fn failures_and_table_snapshot() {
        let results = crate::report::html::tests::sample();
        let locate = |file: &str, path: &str| {
            (file.ends_with("uri_equal.yaml") && path == "checks[1]").then_some(42)
        };
        insta::assert_snapshot!(format!(
            "{}{}",
            failure_details_with(&results, &locate),
            summary_table(&results)
        ));
    }
}
