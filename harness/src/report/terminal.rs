//! Terminal output: a progress bar while cases run, and a summary table at the end.

use indicatif::{ProgressBar, ProgressStyle};

use super::{CaseResult, Event};

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

    #[test]
    fn skipped_cases_are_neither_passed_nor_failed() {
        let results = vec![CaseResult {
            case: "uri_equal".into(),
            mode: "etcd".into(),
            passed: false,
            converge_ms: None,
            error: None,
            skipped: Some("etcd server not available".into()),
        }];
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
    fn table_lists_every_case() {
        let results = vec![
            CaseResult {
                case: "uri_equal".into(),
                mode: "websocket".into(),
                passed: true,
                converge_ms: Some(7),
                error: None,
                skipped: None,
            },
            CaseResult {
                case: "bad".into(),
                mode: "parse".into(),
                passed: false,
                converge_ms: None,
                error: Some("x".into()),
                skipped: None,
            },
        ];
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
