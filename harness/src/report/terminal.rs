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
                let verdict = if r.passed { "PASS" } else { "FAIL" };
                self.bar.println(format!("{verdict} {}", r.id()));
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
        .filter(|r| !r.passed)
        .map(|r| {
            format!(
                "FAIL {}\n{}\n\n",
                r.id(),
                r.error.as_deref().unwrap_or("(no error recorded)")
            )
        })
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
        let verdict = if r.passed { "pass" } else { "FAIL" };
        let ms = r
            .converge_ms
            .map_or_else(|| "-".to_owned(), |c| format!("{c} ms"));
        out += &format!("{:<w$}  {:<m$}  {verdict:<6}  {ms:>10}\n", r.case, r.mode);
    }
    let passed = results.iter().filter(|r| r.passed).count();
    out += &format!("{passed} passed, {} failed", results.len() - passed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lists_every_case() {
        let results = vec![
            CaseResult {
                case: "uri_equal".into(),
                mode: "websocket".into(),
                passed: true,
                converge_ms: Some(7),
                error: None,
            },
            CaseResult {
                case: "bad".into(),
                mode: "parse".into(),
                passed: false,
                converge_ms: None,
                error: Some("x".into()),
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
