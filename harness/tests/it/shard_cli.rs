//! `gantry run --partition` and `gantry report merge` as CI uses them: the cases run in four
//! shards, whose JSON reports merged give the verdicts of one unsharded run, in its order, and
//! its exit code; a merge of overlapping shards is refused.

use std::path::Path;
use std::process::{Command, Output};

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

pub(crate) fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "shard_cli::four_shards_merged_give_the_unsharded_verdicts",
            four_shards,
        ),
        Trial::test(
            "shard_cli::overlapping_shards_are_not_merged",
            overlapping_shards,
        ),
    ]
}

/// The cases: the `method` scenarios (five, `cookie_and_method` too) under two modes, and a
/// broken file whose stem the filter also selects (a failed `parse` result, so the run fails
/// as a whole).
fn case_paths(dir: &Path) -> Result<Vec<String>, Failed> {
    let broken = dir.join("cases/method_broken.yaml");
    std::fs::create_dir_all(broken.parent().ok_or("no parent")?)?;
    std::fs::write(&broken, "name: [not, a, name\n")?;
    let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/../cases/scenarios");
    Ok(vec![
        scenarios.to_owned(),
        broken.parent().ok_or("no parent")?.display().to_string(),
    ])
}

fn gantry(args: &[&str]) -> Result<Output, Failed> {
    Ok(Command::new(crate::gantry_exe()).args(args).output()?)
}

fn said(out: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `gantry run` over `paths` (fixed seed, websocket and http, the `method` filter), its JSON
/// report written to `json`, with `extra` arguments.
fn run(paths: &[String], json: &Path, extra: &[&str]) -> Result<Output, Failed> {
    let json = json.display().to_string();
    let mut args = vec![
        "run",
        "--no-build",
        "--sync",
        "websocket,http",
        "--filter",
        "method",
        "--seed",
        "7",
        "--report-json",
        &json,
    ];
    args.extend(paths.iter().map(String::as_str));
    args.extend(extra);
    gantry(&args)
}

/// Per result, in order: `case@mode@backend`, and passed / skipped / failed.
fn verdicts(json: &Path) -> Result<Vec<(String, &'static str)>, Failed> {
    let report: Value = serde_json::from_slice(&std::fs::read(json)?)?;
    let results = report["results"]
        .as_array()
        .ok_or_else(|| format!("{}: no results", json.display()))?;
    Ok(results
        .iter()
        .map(|r| {
            let name = format!("{}@{}@{}", r["case"], r["mode"], r["backend"]).replace('"', "");
            let verdict = if r["passed"] == Value::Bool(true) {
                "passed"
            } else if r.get("skipped").is_some() {
                "skipped"
            } else {
                "failed"
            };
            (name, verdict)
        })
        .collect())
}

fn four_shards() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let paths = case_paths(dir.path())?;
    let whole_json = dir.path().join("whole.json");
    let whole = run(&paths, &whole_json, &[])?;
    let expected = verdicts(&whole_json)?;
    if whole.status.code() != Some(1) || expected.len() < 9 {
        return Err(format!(
            "the unsharded run: {} results {expected:?}\n{}",
            expected.len(),
            said(&whole)
        )
        .into());
    }
    let mut shards = Vec::new();
    let mut sizes = Vec::new();
    for k in 1..=4 {
        let json = dir.path().join(format!("shard-{k}.json"));
        let partition = format!("hash:{k}/4");
        let out = run(&paths, &json, &["--partition", &partition])?;
        let held = verdicts(&json)?;
        // A shard with the broken file fails; one whose cases all ran passes; an empty one
        // (or one of skips only) passes with a note.
        let wanted = if held.iter().any(|(_, v)| *v == "failed") {
            1
        } else {
            0
        };
        if out.status.code() != Some(wanted) {
            return Err(format!("shard {partition}: {held:?}\n{}", said(&out)).into());
        }
        sizes.push(held.len());
        shards.push(json.display().to_string());
    }
    let merged_json = dir.path().join("merged.json");
    let merged_junit = dir.path().join("merged.xml");
    let mut args = vec!["report", "merge"];
    args.extend(shards.iter().map(String::as_str));
    let (json_arg, junit_arg) = (
        merged_json.display().to_string(),
        merged_junit.display().to_string(),
    );
    args.extend(["--report-json", &json_arg, "--report-junit", &junit_arg]);
    let merged = gantry(&args)?;
    let got = verdicts(&merged_json)?;
    if got != expected || merged.status.code() != whole.status.code() {
        return Err(format!(
            "shards of {sizes:?} merged to {got:?}\nunsharded: {expected:?}\n{}",
            said(&merged)
        )
        .into());
    }
    let junit = std::fs::read_to_string(&merged_junit)?;
    if junit.matches("<testcase").count() != expected.len() {
        return Err(format!("the merged JUnit report:\n{junit}").into());
    }
    Ok(())
}

fn overlapping_shards() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let paths = case_paths(dir.path())?;
    let json = dir.path().join("shard.json");
    run(&paths, &json, &["--partition", "count:1/2"])?;
    let copy = dir.path().join("again.json");
    std::fs::copy(&json, &copy)?;
    let (a, b) = (json.display().to_string(), copy.display().to_string());
    let out = gantry(&["report", "merge", &a, &b])?;
    let text = said(&out);
    if out.status.code() != Some(2) || !text.contains("shard.json") || !text.contains("again.json")
    {
        return Err(format!("merging a shard with itself: {text}").into());
    }
    Ok(())
}
