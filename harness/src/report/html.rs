//! The HTML report (`gantry run --report-html DIR` writes `DIR/index.html`): one
//! self-contained page (inline CSS and SVG, no network fetch) with a summary per sync mode ×
//! backend; then the failures, each case that failed with its checks and error (a failed
//! check named by the file and line of its case file) behind a list linking to them; then
//! the plots ([`super::plots`]: sync-latency histogram per mode, observed vs expected shares
//! per distribution check, the time setup took to go live per scenario); then every other
//! case with its checks and their measurements.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

pub use super::place::Locate;
use super::place::{failed_at, locate_in_file};
use super::plots;
use super::{CaseOutcome, CaseResult, CheckOutcome, CheckReport};

/// The page for `results`.
pub fn render(results: &[CaseResult], locate: Locate<'_>) -> String {
    let mut out = String::from(HEAD);
    let seed = results.first().map(|r| r.seed);
    let _ = write!(
        out,
        "<h1>gantry run</h1><p class=meta>gantry {} · {} cases{}</p>",
        env!("CARGO_PKG_VERSION"),
        results.len(),
        seed.map_or_else(String::new, |s| format!(" · seed {s}")),
    );
    summary(&mut out, results);
    let (failed, others): (Vec<_>, Vec<_>) =
        results.iter().enumerate().partition(|(_, r)| r.failed());
    failures(&mut out, &failed, locate);
    plot_section(&mut out, results);
    if !others.is_empty() {
        out += if failed.is_empty() {
            "<h2>Cases</h2>"
        } else {
            "<h2>Other cases</h2>"
        };
    }
    for (i, r) in others {
        case(&mut out, i, r, locate);
    }
    out += "</body></html>\n";
    out
}

/// Writes `dir/index.html`, creating `dir`.
pub fn write(dir: &Path, results: &[CaseResult]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("index.html"), render(results, &locate_in_file))
}

const HEAD: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gantry report</title>
<style>
body{font-family:sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
.pass{color:#1a7f37}.fail{color:#cf222e;font-weight:bold}.skip{color:#9a6700}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;white-space:pre-wrap}
details{margin:.3em 0}.meta{color:#666}figure{margin:1em 0}
</style></head><body>
"#;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn verdict(r: &CaseResult) -> (&'static str, &'static str) {
    match r.outcome {
        CaseOutcome::Skipped(_) => ("skip", "skip"),
        CaseOutcome::Passed => ("pass", "pass"),
        CaseOutcome::Failed(_) => ("fail", "FAIL"),
    }
}

fn summary(out: &mut String, results: &[CaseResult]) {
    let mut by: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    for r in results {
        let row = by
            .entry(format!("{}@{}", r.id.mode, r.backend))
            .or_default();
        match verdict(r).0 {
            "pass" => row[0] += 1,
            "fail" => row[1] += 1,
            _ => row[2] += 1,
        }
    }
    out.push_str(
        "<h2>Summary</h2><table id=summary><tr><th>mode @ backend</th><th>passed</th>\
         <th>failed</th><th>skipped</th></tr>",
    );
    for (k, [p, f, s]) in by {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=pass>{p}</td><td class={}>{f}</td><td class=skip>{s}</td></tr>",
            escape(&k),
            if f > 0 { "fail" } else { "pass" }
        );
    }
    out.push_str("</table>");
}

/// The failed cases, before the plots: a list linking to each (with where its first failed
/// check is), then each case open with its checks and error.
fn failures(out: &mut String, failed: &[(usize, &CaseResult)], locate: Locate<'_>) {
    if failed.is_empty() {
        return;
    }
    let _ = write!(out, "<h2 id=failures>Failures ({})</h2><ul>", failed.len());
    for (i, r) in failed {
        let at = (r.checks.iter())
            .find_map(|c| failed_at(r, c, locate))
            .map_or_else(String::new, |at| format!(" at {}", escape(&at)));
        let _ = write!(
            out,
            "<li><a href=\"#{}\">{}</a> <span class=meta>({}{at})</span></li>",
            anchor(*i),
            escape(&r.id.to_string()),
            escape(&r.backend),
        );
    }
    out.push_str("</ul>");
    for (i, r) in failed {
        case(out, *i, r, locate);
    }
}

/// The id of the `i`th result's case on the page.
fn anchor(i: usize) -> String {
    format!("case-{i}")
}

fn figure(out: &mut String, svg: Option<String>) {
    if let Some(svg) = svg {
        let _ = write!(out, "<figure>{svg}</figure>");
    }
}

fn plot_section(out: &mut String, results: &[CaseResult]) {
    out.push_str("<h2>Plots</h2>");
    let mut latency: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in results {
        let samples = latency.entry(&r.id.mode).or_default();
        samples.extend(r.timings.iter().filter_map(|t| t.applied_ms));
        for c in &r.checks {
            if let Some(m) = c.measurements.measured() {
                samples.extend(m.sync_samples());
            }
        }
    }
    for (mode, samples) in &latency {
        figure(
            out,
            plots::histogram(
                &format!(
                    "sync latency, {mode}: admin 2xx → gateway applied ({} changes)",
                    samples.len()
                ),
                "ms",
                samples,
            ),
        );
    }
    for r in results {
        for c in &r.checks {
            if let Some(shares) = c.measurements.measured().and_then(|m| m.shares()) {
                let title = format!("{}: {}{}", r.id, c.name, shares.note);
                figure(out, plots::shares(&title, &shares.categories));
            }
        }
    }
    let mut converge: BTreeMap<&str, Vec<(String, f64)>> = BTreeMap::new();
    for r in results {
        if let Some(ms) = r.converge_ms {
            converge
                .entry(&r.id.mode)
                .or_default()
                .push((r.id.case.clone(), ms as f64));
        }
    }
    for (mode, rows) in &converge {
        figure(
            out,
            plots::horizontal_bars(
                &format!("setup live (the wait's probes pass), {mode}"),
                "ms after the admin's 2xx",
                rows,
            ),
        );
    }
}

fn case(out: &mut String, i: usize, r: &CaseResult, locate: Locate<'_>) {
    let (class, word) = verdict(r);
    let _ = write!(
        out,
        "<details id={}{}><summary><span class={class}>{word}</span> {}@{} <span class=meta>({}, {} · {:.1} s{})</span></summary>",
        anchor(i),
        if class == "fail" { " open" } else { "" },
        escape(&r.id.case),
        escape(&r.id.mode),
        escape(&r.file),
        escape(&r.backend),
        r.duration_ms / 1000.0,
        r.converge_ms
            .map_or_else(String::new, |c| format!(" · setup live in {c} ms")),
    );
    if let Some(why) = r.outcome.skipped() {
        let _ = write!(out, "<p class=skip>skipped: {}</p>", escape(why));
    }
    if !r.checks.is_empty() {
        out.push_str("<table><tr><th>check</th><th>kind</th><th>result</th><th>measured</th></tr>");
        for c in &r.checks {
            check(out, r, c, locate);
        }
        out.push_str("</table>");
    }
    if let Some(error) = r.outcome.error() {
        let _ = write!(out, "<pre>{}</pre>", escape(error));
    }
    out.push_str("</details>");
}

fn check(out: &mut String, r: &CaseResult, c: &CheckReport, locate: Locate<'_>) {
    let (class, result) = match &c.outcome {
        CheckOutcome::Passed => ("pass", "pass".to_owned()),
        CheckOutcome::Skipped(why) => ("skip", format!("skipped: {}", escape(why))),
        CheckOutcome::Failed(why) => {
            let at = failed_at(r, c, locate).unwrap_or_default();
            (
                "fail",
                format!(
                    "FAIL at {}<br>{}",
                    escape(&at),
                    escape(&why.join("\n")).replace('\n', "<br>")
                ),
            )
        }
    };
    let _ = write!(
        out,
        "<tr><td>{}{}</td><td>{}</td><td class={class}>{result}</td><td>{}</td></tr>",
        c.step
            .as_ref()
            .map_or_else(String::new, |s| format!("step `{}`: ", escape(s))),
        escape(&c.name),
        c.kind,
        escape(&c.measurements.summary()),
    );
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::judge::Measurements;
    use crate::judge::distribution::Stats;
    use crate::report::{CaseId, ChangeTiming};

    /// Results with every kind of content the page shows.
    pub(crate) fn sample() -> Vec<CaseResult> {
        let mut ok = CaseResult::bare(
            CaseId::new("balance_random", "websocket"),
            "cases/scenarios/balance/random.yaml".into(),
            "host".into(),
            7,
            CaseOutcome::Passed,
        );
        ok.converge_ms = Some(12);
        ok.timings = vec![
            ChangeTiming {
                change: "setup".into(),
                applied_ms: Some(0.8),
                probe_ms: 10.0,
                converged_ms: 11.0,
            },
            ChangeTiming {
                change: "teardown".into(),
                applied_ms: Some(1.4),
                probe_ms: 1.9,
                converged_ms: 2.5,
            },
        ];
        ok.checks = vec![CheckReport {
            name: "3:1".into(),
            path: "checks[0]".into(),
            step: None,
            kind: "distribution",
            outcome: CheckOutcome::Passed,
            elapsed_ms: 800.0,
            measurements: Measurements::Distribution(Stats {
                requests: 2000,
                observed: [("alpha".into(), 1503), ("beta".into(), 497)].into(),
                observed_shares: [("alpha".into(), 0.7515), ("beta".into(), 0.2485)].into(),
                expected_shares: [("alpha".into(), 0.75), ("beta".into(), 0.25)].into(),
                chi_square: Some(0.02),
                degrees_of_freedom: 1,
                p_value: Some(0.877),
                alpha: 1e-6,
                seed: None,
                unseeded: None,
            }),
        }];
        let mut bad = CaseResult::bare(
            CaseId::new("uri_equal", "http"),
            "cases/scenarios/divide/uri_equal.yaml".into(),
            "host".into(),
            7,
            CaseOutcome::Passed,
        );
        bad.converge_ms = Some(30);
        bad.outcome =
            CaseOutcome::Failed("uri_equal@http failed at checks: <1 check> & more".into());
        bad.checks = vec![CheckReport {
            name: "trailing slash".into(),
            path: "checks[1]".into(),
            step: None,
            kind: "probe",
            outcome: CheckOutcome::Failed(vec!["route: expected absent".into()]),
            elapsed_ms: 2.0,
            measurements: Measurements::Probe { sent: 1, passed: 0 },
        }];
        vec![ok, bad]
    }

    #[test]
    fn the_page_has_summary_plots_cases_and_located_failures() {
        let page = render(&sample(), &|file, path| {
            (file.ends_with("uri_equal.yaml") && path == "checks[1]").then_some(42)
        });
        assert!(page.contains("<table id=summary>"));
        assert!(page.contains("<td>http@host</td><td class=pass>0</td><td class=fail>1</td>"));
        // One latency histogram (the http case timed no change), one shares chart, two
        // convergence charts.
        assert_eq!(page.matches("<svg").count(), 4);
        assert!(page.contains("FAIL at cases/scenarios/divide/uri_equal.yaml:42"));
        // The failures before the plots, linked from a list at the top; the rest after.
        let at = |what: &str| page.find(what).unwrap_or_else(|| panic!("no {what}"));
        assert!(at("<h2 id=failures>Failures (1)</h2>") < at("<h2>Plots</h2>"));
        assert!(at("<a href=\"#case-1\">uri_equal@http</a>") < at("<details id=case-1 open>"));
        assert!(at("<details id=case-1 open>") < at("<h2>Plots</h2>"));
        assert!(at("<h2>Plots</h2>") < at("<h2>Other cases</h2>"));
        assert!(at("<h2>Other cases</h2>") < at("<details id=case-0>"));
        assert!(page.contains("setup live in 30 ms"));
        assert!(
            page.contains("&lt;1 check&gt; &amp; more"),
            "errors are escaped"
        );
        for fetch in ["src=\"http", "href=\"http", "<link", "@import", "url("] {
            assert!(!page.contains(fetch), "no network fetch: {fetch}");
        }
    }

    #[test]
    fn a_run_without_failures_has_no_failure_section() {
        let page = render(&sample()[..1], &|_, _| None);
        assert!(!page.contains("id=failures"));
        assert!(page.contains("<h2>Cases</h2>"));
    }

    #[test]
    fn page_snapshot() {
        insta::assert_snapshot!(render(&sample(), &|file, path| {
            (file.ends_with("uri_equal.yaml") && path == "checks[1]").then_some(42)
        }));
    }
}
