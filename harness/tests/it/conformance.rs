//! The committed conformance report of gantry's own pair in the websocket mode
//! (`conformance/reports/gantry/<version>/websocket.yaml`) is what a run gives today: the core
//! profile is run again with `--report-conformance` and the two reports must be equal but for
//! `date` and `gantry.commit`; a difference fails, listing the lines.

use std::path::Path;
use std::process::Command;

use libtest_mimic::{Failed, Trial};

pub(crate) fn trials() -> Vec<Trial> {
    vec![Trial::test(
        "conformance::the_committed_websocket_report_is_what_a_run_gives",
        websocket_report,
    )]
}

/// The command that regenerates the committed report (conformance/README.md, "Reproduce").
fn reproduce(report: &str) -> String {
    format!(
        "target/release/gantry run --no-build --profile core --sync websocket \
         --report-conformance {report}"
    )
}

fn websocket_report() -> Result<(), Failed> {
    let relative = format!(
        "conformance/reports/gantry/{}/websocket.yaml",
        env!("CARGO_PKG_VERSION")
    );
    let committed_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(&relative);
    let committed = std::fs::read_to_string(&committed_path).map_err(|e| {
        format!(
            "{}: {e}; generate it with `{}`",
            committed_path.display(),
            reproduce(&relative)
        )
    })?;
    let dir = tempfile::tempdir()?;
    let generated_path = dir.path().join("websocket.yaml");
    let out = Command::new(crate::gantry_exe())
        .args([
            "run",
            "--no-build",
            "--profile",
            "core",
            "--sync",
            "websocket",
        ])
        .arg("--report-conformance")
        .arg(&generated_path)
        .output()?;
    let generated = std::fs::read_to_string(&generated_path).map_err(|e| {
        format!(
            "the run wrote no report ({e}); exit {:?}\n{}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    let differences = harness::conformance::report::differences(&committed, &generated);
    if differences.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{relative} differs from what a run gives now (besides date and commit):\n{}\n\
         the run said (exit {:?}):\n{}\nregenerate it with `{}` if the change is meant",
        differences.join("\n"),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        reproduce(&relative)
    )
    .into())
}
