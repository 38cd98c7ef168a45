//! Terminal output: a progress bar while cases run, and a summary table at the end.

use indicatif::{ProgressBar, ProgressStyle};

use super::{CaseResult, CheckOutcome, Event};
use crate::judge::Measurements;

/// Shows progress for a run of `total` cases.
#[derive(Debug)]
pub struct TerminalReporter {
    bar: ProgressBar,
}

impl TerminalReporter {
    /// A reporter for `total` cases (hidden when stderr is not a terminal).
    pub fn new(total: u64) -> Self {
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{pos}/{len}] {elapsed} {msg}")
                .expect("the template is valid"),
        );
        Self { bar }
    }

    /// Updates the display for one event.
    pub fn handle(&self, event: &Event) {
        match event {
            Event::CaseStarted { id } => self.bar.set_message(id.clone()),
            Event::StepStarted { id, step } => self.bar.set_message(format!("{id}: {step}")),
            Event::CheckFinished { id, check } => {
                self.bar
                    .set_message(format!("{id}: check `{}` done", check.name));
            }
            Event::CaseFinished(r) => {
                self.bar.inc(1);
                match (&r.skipped, r.passed) {
                    (Some(why), _) => self.bar.println(format!("SKIP {}: {why}", r.id())),
                    (None, true) => self.bar.println(format!("PASS {}", r.id())),
                    (None, false) => self.bar.println(format!("FAIL {}", r.id())),
                }
            }
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Every failure with its error, for printing before the table.
pub fn failure_details(results: &[CaseResult]) -> String {
    results
        .iter()
        .filter(|r| r.failed())
        .map(|r| {
            format!(
                "FAIL {}\n{}\n\n",
                r.id(),
                r.error.as_deref().unwrap_or("(no error recorded)")
            )
        })
        .collect()
}

/// Every skipped case with the reason, for printing before the table.
pub fn skip_notes(results: &[CaseResult]) -> String {
    results
        .iter()
        .filter_map(|r| Some(format!("SKIP {}: {}\n", r.id(), r.skipped.as_deref()?)))
        .collect()
}

/// A line per skipped check (with the reason) and per statistical verdict: the χ² of each
/// distribution check and the quantiles of each latency check.
pub fn check_notes(results: &[CaseResult]) -> String {
    let mut out = String::new();
    for r in results {
        for c in &r.checks {
            let at = match &c.step {
                Some(step) => format!("{} step `{step}`", r.id()),
                None => r.id(),
            };
            if let CheckOutcome::Skipped(why) = &c.outcome {
                out += &format!("SKIP check `{}` of {at}: {why}\n", c.name);
                continue;
            }
            match &c.measurements {
                Measurements::Distribution(d) => {
                    if let (Some(chi), Some(p)) = (d.chi_square, d.p_value) {
                        out += &format!(
                            "{at}: distribution `{}`: χ² = {chi:.2}, df {}, p = {p:.3} (α {:e}, {} requests)\n",
                            c.name, d.degrees_of_freedom, d.alpha, d.requests
                        );
                    }
                }
                Measurements::Latency(l) => {
                    out += &format!(
                        "{at}: latency `{}`: applied p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; \
                         probe p50 {:.2} ms, p99 {:.2} ms ({} changes)\n",
                        c.name,
                        l.applied.p50,
                        l.applied.p99,
                        l.applied.max,
                        l.probe.p50,
                        l.probe.p99,
                        l.changes
                    );
                }
                _ => {}
            }
        }
    }
    out
}

/// The summary table: scenario, mode, result, converge ms; then the totals.
pub fn summary_table(results: &[CaseResult]) -> String {
    let w = results
        .iter()
        .map(|r| r.case.len())
        .max()
        .unwrap_or(0)
        .max("scenario".len());
    let m = results
        .iter()
        .map(|r| r.mode.len())
        .max()
        .unwrap_or(0)
        .max("mode".len());
    let mut out = format!(
        "{:<w$}  {:<m$}  {:<6}  {:>10}\n",
        "scenario", "mode", "result", "converge"
    );
    for r in results {
        let verdict = match (&r.skipped, r.passed) {
            (Some(_), _) => "skip",
            (None, true) => "pass",
            (None, false) => "FAIL",
        };
        let ms = r
            .converge_ms
            .map_or_else(|| "-".to_owned(), |c| format!("{c} ms"));
        out += &format!("{:<w$}  {:<m$}  {verdict:<6}  {ms:>10}\n", r.case, r.mode);
    }
    let passed = results.iter().filter(|r| r.passed).count();
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

    fn result(case: &str, mode: &str) -> CaseResult {
        CaseResult::bare(case.into(), mode.into(), "host".into(), 1)
    }

    #[test]
    fn skipped_cases_are_neither_passed_nor_failed() {
        let mut r = result("uri_equal", "etcd");
        r.skipped = Some("etcd server not available".into());
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

    #[test]
    fn check_notes_name_skips_and_statistics() {
        use crate::judge::latency::{Limits, Quantiles, Stats};
        use crate::report::CheckReport;
        let mut r = result("hash", "websocket");
        r.checks = vec![
            CheckReport {
                name: "sticky".into(),
                step: Some("add".into()),
                kind: "hash",
                outcome: CheckOutcome::Skipped("no client addresses".into()),
                elapsed_ms: 0.0,
                measurements: Measurements::None,
            },
            CheckReport {
                name: "toggle".into(),
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
        ok.passed = true;
        ok.converge_ms = Some(7);
        let mut bad = result("bad", "parse");
        bad.error = Some("x".into());
        let results = vec![ok, bad];
        let t = summary_table(&results);
        assert_eq!(
            t,
            "scenario   mode       result    converge\n\
             uri_equal  websocket  pass          7 ms\n\
             bad        parse      FAIL             -\n\
             1 passed, 1 failed"
        );
        assert_eq!(failure_details(&results), "FAIL bad@parse\nx\n\n");
    }
}
