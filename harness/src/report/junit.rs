//! The JUnit XML report (`gantry run --report-junit FILE`, quick-junit): one `<testsuite>` per
//! sync mode × backend (`websocket@host`; `websocket@host+full` under `--sync-style full`;
//! `+restart` and a `run_mode` property under `--run-mode restart`),
//! one `<testcase>` per scenario with its time, its `classname` `<case file>.<suite>` and its
//! `file` attribute the case file from the workspace root ([`super::place::shown`]); a failure
//! carries the error (the failed step, every failed check with its `file:line`, the processes'
//! last log lines), a skip its reason. Readable by the usual CI dashboards.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::place::{Locate, failed_at, locate_in_file, shown};
use super::{CaseOutcome, CaseResult};

/// The report as XML.
pub fn render(results: &[CaseResult]) -> String {
    render_with(results, &locate_in_file)
}

/// The report as XML, failed checks placed by `locate`.
pub fn render_with(results: &[CaseResult], locate: Locate<'_>) -> String {
    let mut suites: BTreeMap<String, TestSuite> = BTreeMap::new();
    let mut total = Duration::ZERO;
    for r in results {
        // A suite per mode × backend (× `full` sync style, so both styles merge apart).
        // (× run mode: `+restart`, `+repeat:3`).
        let mut name = match r.sync_style {
            model::SyncStyle::Incremental => format!("{}@{}", r.id.mode, r.backend),
            model::SyncStyle::Full => format!("{}@{}+full", r.id.mode, r.backend),
        };
        if let Some(run_mode) = r.run_mode {
            name = format!("{name}+{run_mode}");
        }
        let suite = suites.entry(name.clone()).or_insert_with(|| {
            let mut suite = TestSuite::new(name.clone());
            if let Some(run_mode) = r.run_mode {
                suite.add_property(("run_mode", run_mode.to_string().as_str()));
            }
            suite
        });
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
                let places: String = (r.checks.iter())
                    .filter_map(|c| {
                        Some(format!(
                            "\ncheck `{}` failed at {}",
                            c.name,
                            failed_at(r, c, locate)?
                        ))
                    })
                    .collect();
                s.set_description(format!("{error}{places}"));
                s
            }
        };
        let file = shown(&r.file);
        let mut case = TestCase::new(r.id.case.clone(), status);
        case.set_classname(format!("{file}.{name}"));
        case.extra.insert("file".into(), file.into());
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

    /// A case file reached through `harness/..` is named from the workspace root, in the
    /// `classname` and the `file` attribute; a failed check is placed at its line.
    #[test]
    fn case_files_are_named_from_the_workspace_root() {
        use crate::judge::Measurements;
        use crate::report::{CheckOutcome, CheckReport};
        let file = format!("{}/cases/scenarios/a.yaml", crate::WORKSPACE_DIR);
        assert!(file.contains("/harness/../cases/"), "{file}");
        let mut bad = CaseResult::bare(
            CaseId::new("a", "http"),
            file,
            "host".into(),
            1,
            CaseOutcome::Failed("a@http failed at checks".into()),
        );
        bad.checks.push(CheckReport {
            name: "routes".into(),
            path: "checks[0]".into(),
            step: None,
            kind: "probe",
            outcome: CheckOutcome::Failed(vec!["no".into()]),
            elapsed_ms: 1.0,
            measurements: Measurements::None,
        });
        let xml = render_with(&[bad], &|_, path| (path == "checks[0]").then_some(12));
        let report = Report::deserialize_from_str(&xml).expect("valid JUnit XML");
        let case = &report.test_suites[0].test_cases[0];
        assert_eq!(
            case.classname.as_deref(),
            Some("cases/scenarios/a.yaml.http@host")
        );
        assert_eq!(
            case.extra.get("file").map(|f| f.as_str()),
            Some("cases/scenarios/a.yaml")
        );
        assert!(
            xml.contains("check `routes` failed at cases/scenarios/a.yaml:12"),
            "{xml}"
        );
        assert!(!xml.contains(".."), "{xml}");
    }

    #[test]
    fn report_snapshot() {
        let results = crate::report::html::tests::sample();
        let locate = |file: &str, path: &str| {
            (file.ends_with("uri_equal.yaml") && path == "checks[1]").then_some(42)
        };
        insta::assert_snapshot!(render_with(&results, &locate));
    }
}
