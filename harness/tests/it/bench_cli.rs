//! `gantry bench` as a user runs it, on debug binaries (the figures mean nothing here; what
//! is checked is that the bench measures what it says it measures).

use std::process::Command;

use libtest_mimic::{Failed, Trial};

pub(crate) fn trials() -> Vec<Trial> {
    vec![Trial::test(
        "bench_cli::fanout_connects_more_subscribers_than_the_admins_default_session_limit",
        fanout_past_the_session_limit,
    )]
}

/// The admin refuses websocket sessions beyond 256 by default (a limit against hostile
/// clients): the bench must lift it for its own subscribers, or it measures 256 of them.
fn fanout_past_the_session_limit() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let report = dir.path().join("fanout.json");
    let out = Command::new(crate::gantry_exe())
        .args(["bench", "fanout", "--no-build", "--kinds", "websocket"])
        .args(["--subscribers", "300", "--changes", "2", "--report-json"])
        .arg(&report)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "exit {:?}\n{}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report)?)?;
    let run = &json["runs"][0];
    if run["connected"] != 300 || run["changes"][1]["holders"] != 300 {
        return Err(format!("not every subscriber connected and held the change: {run}").into());
    }
    Ok(())
}
