//! The HTML report in a real browser: headless Chromium loads a report page and the test checks
//! from the rendered DOM that the summary and the plots are there with their data (SVG
//! rectangles for the bars). Ignored, with a note, where no Chromium is installed, unless
//! `GANTRY_REQUIRE` names `chromium` (`.ci/run` sets it and installs Debian's `chromium`).

use std::path::PathBuf;
use std::process::Command;

use harness::judge::Measurements;
use harness::judge::distribution::Stats;
use harness::report::{
    CaseId, CaseOutcome, CaseResult, ChangeTiming, CheckOutcome, CheckReport, html,
};
use libtest_mimic::{Failed, Trial};

/// The Chromium binary, if one is installed.
fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| {
            std::env::var_os("PATH")
                .into_iter()
                .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                .map(move |dir| dir.join(name))
        })
        .find(|p| p.is_file())
}

fn required() -> bool {
    std::env::var("GANTRY_REQUIRE").is_ok_and(|r| r.split(',').any(|m| m.trim() == "chromium"))
}

/// Two cases: a passed distribution check with its shares, and a failed probe.
fn results() -> Vec<CaseResult> {
    let mut ok = CaseResult::bare(
        CaseId::new("balance_random", "websocket"),
        "cases/scenarios/balance/random.yaml".into(),
        "host".into(),
        7,
        CaseOutcome::Passed,
    );
    ok.converge_ms = Some(12);
    ok.timings = (1..=30)
        .map(|i| ChangeTiming {
            change: format!("step {i}"),
            applied_ms: Some(f64::from(i) * 0.1),
            probe_ms: f64::from(i) * 0.2,
            converged_ms: f64::from(i) * 0.3,
        })
        .collect();
    ok.checks = vec![CheckReport {
        name: "3:1 by weight".into(),
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
        CaseId::new("uri_equal", "websocket"),
        "cases/scenarios/divide/uri_equal.yaml".into(),
        "host".into(),
        7,
        CaseOutcome::Passed,
    );
    bad.converge_ms = Some(30);
    bad.outcome =
        CaseOutcome::Failed("uri_equal@websocket failed at checks: 1 check failed".into());
    vec![ok, bad]
}

fn renders_in_chromium(browser: &PathBuf) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    html::write(dir.path(), &results())?;
    let page = dir.path().join("index.html");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "chromium failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let dom = String::from_utf8_lossy(&out.stdout);
    let mut missing = Vec::new();
    if !dom.contains("<table id=\"summary\">") {
        missing.push("the summary table");
    }
    // The latency histogram, the shares chart and the convergence bars, each drawn.
    if dom.matches("<svg").count() < 3 {
        missing.push("three plots");
    }
    if dom.matches("<rect").count() < 10 {
        missing.push("the plots' bars");
    }
    for text in [
        "alpha",
        "observed",
        "expected",
        "sync latency, websocket",
        "balance_random",
    ] {
        if !dom.contains(text) {
            missing.push(text);
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("the rendered page lacks: {}\n{dom}", missing.join(", ")).into())
    }
}

/// The one trial, `html_report_renders_in_chromium`: ignored with a note on stderr when no
/// Chromium is on `PATH`, unless `GANTRY_REQUIRE` names `chromium` (then it fails).
pub(crate) fn trials() -> Vec<Trial> {
    let browser = chromium();
    let ignored = browser.is_none() && !required();
    if ignored {
        eprintln!(
            "note: html_report is ignored: no chromium on PATH (GANTRY_REQUIRE=chromium makes this a failure)"
        );
    }
    let trial = Trial::test("html_report_renders_in_chromium", move || match &browser {
        Some(b) => renders_in_chromium(b),
        None => Err("GANTRY_REQUIRE names chromium, but no chromium is on PATH".into()),
    })
    .with_ignored_flag(ignored);
    vec![trial]
}
