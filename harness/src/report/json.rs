//! The JSON report: `{"results":[{"case","mode","passed","converge_ms","error"}]}`.

use std::path::Path;

use serde::Serialize;

use super::CaseResult;

#[derive(Serialize)]
struct Report<'a> {
    results: &'a [CaseResult],
}

/// The report as pretty JSON.
pub fn render(results: &[CaseResult]) -> String {
    serde_json::to_string_pretty(&Report { results }).expect("results always serialise")
}

/// Writes the report to `path`.
pub fn write(path: &Path, results: &[CaseResult]) -> std::io::Result<()> {
    std::fs::write(path, render(results) + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_shape() {
        let results = vec![
            CaseResult {
                case: "uri_equal".into(),
                mode: "websocket".into(),
                passed: true,
                converge_ms: Some(42),
                error: None,
                skipped: None,
            },
            CaseResult {
                case: "broken".into(),
                mode: "parse".into(),
                passed: false,
                converge_ms: None,
                error: Some("cases/scenarios/broken.yaml:3:1: unknown field `x`".into()),
                skipped: None,
            },
        ];
        insta::assert_snapshot!(render(&results));
    }
}
