//! The JUnit XML report (`gantry run --report-junit FILE`, quick-junit): one `<testsuite>` per
//! sync mode × backend (`websocket@host`; `websocket@host+full` under `--sync-style full`),
//! one `<testcase>` per scenario with its time; a failure carries the error (the failed step,
//! every failed check, the processes' last log lines), a skip its reason. Readable by the
//! usual CI dashboards.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::{CaseOutcome, CaseResult};

/// The report as XML.
pub fn render(results: &[CaseResult]) -> String {
    let mut suites: BTreeMap<String, TestSuite> = BTreeMap::new();
    let mut total = Duration::ZERO;
    for r in results {
        // A suite per mode × backend (× `full` sync style, so both styles merge apart).
        let name = match r.sync_style {
            model::SyncStyle::Incremental => format!("{}@{}", r.id.mode, r.backend),
            model::SyncStyle::Full => format!("{}@{}+full", r.id.mode, r.backend),
        };
        let suite = suites
            .entry(name.clone())
            .or_insert_with(|| TestSuite::new(name.clone()));
        let status = match &r.outcome {
            CaseOutcome::Skipped(why) => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(why.clone());
                s
            }
            CaseOutcome::Passed => TestCaseStatus::success(),
            CaseOutcome::Failed(error) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(error.lines().next().unwrap_or_default().to_owned());
                s.set_description(error.clone());
                s
            }
        };
        let mut case = TestCase::new(r.id.case.clone(), status);
        case.set_classname(format!("{}.{}", r.file, name));
        let time = Duration::from_secs_f64(r.duration_ms.max(0.0) / 1000.0);
        case.set_time(time);
        total += time;
        suite.add_test_case(case);
    }
    let mut report = Report::new("gantry");
    report.set_time(total);
    report.add_test_suites(suites.into_values());
    report
        .to_string()
        .expect("a report of plain strings always serialises")
}

/// Writes the report to `path`.
pub fn write(path: &Path, results: &[CaseResult]) -> std::io::Result<()> {
    std::fs::write(path, render(results))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::CaseId;

    #[test]
    fn suites_per_mode_and_backend_with_failures_and_skips() {
        let mut ok = CaseResult::bare(
            CaseId::new("a", "websocket"),
            "a.yaml".into(),
            "host".into(),
            1,
            CaseOutcome::Passed,
        );
        ok.duration_ms = 1500.0;
        let mut bad = CaseResult::bare(
            CaseId::new("b", "websocket"),
            "b.yaml".into(),
            "host".into(),
            1,
            CaseOutcome::Passed,
        );
        bad.outcome = CaseOutcome::Failed(
            "b@websocket failed at checks: 1 check failed:\n  check `x`: <nope> & \u{1b}[31m"
                .into(),
        );
        let mut skip = CaseResult::bare(
            CaseId::new("a", "etcd"),
            "a.yaml".into(),
            "host".into(),
            1,
            CaseOutcome::Passed,
        );
        skip.outcome = CaseOutcome::Skipped("etcd not installed".into());
        let xml = render(&[ok, bad, skip]);
        let report = Report::deserialize_from_str(&xml).expect("valid JUnit XML");
        assert_eq!((report.tests, report.failures, report.skipped), (3, 1, 1));
        let names: Vec<&str> = report.test_suites.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["etcd@host", "websocket@host"]);
        let ws = &report.test_suites[1];
        assert_eq!(ws.test_cases[0].time, Some(Duration::from_millis(1500)));
        assert!(xml.contains("check `x`: &lt;nope&gt; &amp;"), "{xml}");
        assert!(
            !xml.contains('\u{1b}'),
            "control characters are filtered out"
        );
    }
}
