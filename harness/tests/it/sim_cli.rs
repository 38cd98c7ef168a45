//! `gantry sim` as a user runs it: one line per seed, the summary line, the exit codes, the
//! same trace for the same seed in two processes, and a planted bug's failure with its
//! replay command (docs/simulation.md).

use std::process::{Command, Output};

use libtest_mimic::{Failed, Trial};

pub(crate) fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "sim_cli::seeds_pass_with_one_line_each_and_a_summary",
            seeds_pass,
        ),
        Trial::test("sim_cli::a_seed_replays_in_another_process", replays),
        Trial::test(
            "sim_cli::http_long_polling_seeds_replay_in_another_process",
            replays_over_http,
        ),
        Trial::test(
            "sim_cli::a_planted_bug_fails_with_its_replay_command",
            planted_bug,
        ),
        Trial::test("sim_cli::an_unsimulated_mode_is_refused", unsimulated_mode),
        Trial::test(
            "sim_cli::keeping_a_step_the_plan_lacks_is_refused",
            keep_out_of_range,
        ),
    ]
}

fn sim(args: &[&str]) -> Result<Output, Failed> {
    Ok(Command::new(crate::gantry_exe())
        .arg("sim")
        .args(args)
        .output()?)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn seeds_pass() -> Result<(), Failed> {
    let out = sim(&["--seeds", "3", "--start", "10", "--ops", "20"])?;
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    if out.status.code() != Some(0) || lines.len() != 4 {
        return Err(format!("exit {:?}, output:\n{text}", out.status.code()).into());
    }
    for (i, seed) in (10..13).enumerate() {
        let line = lines[i];
        let hash = line
            .strip_prefix(&format!("seed {seed}: ok trace "))
            .ok_or(format!("line {i}: {line}"))?;
        if hash.len() < 16 || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("not a trace hash: {line}").into());
        }
    }
    if !(lines[3].starts_with("3 seeds, 0 failed, ") && lines[3].ends_with(" seeds/hour")) {
        return Err(format!("summary: {}", lines[3]).into());
    }
    Ok(())
}

fn replays() -> Result<(), Failed> {
    let first = stdout(&sim(&["--seed", "5"])?);
    let again = stdout(&sim(&["--seed", "5"])?);
    let line = |text: &str| text.lines().next().unwrap_or_default().to_owned();
    if line(&first) != line(&again) || !line(&first).starts_with("seed 5: ok trace ") {
        return Err(format!("{}\nvs\n{}", line(&first), line(&again)).into());
    }
    Ok(())
}

fn replays_over_http() -> Result<(), Failed> {
    let args = [
        "--mode", "http", "--seeds", "2", "--start", "3", "--ops", "20",
    ];
    let first = sim(&args)?;
    let again = stdout(&sim(&args)?);
    let text = stdout(&first);
    if first.status.code() != Some(0)
        || text.lines().take(2).ne(again.lines().take(2))
        || !text.starts_with("seed 3: ok trace ")
    {
        return Err(format!("exit {:?}:\n{text}\nvs\n{again}", first.status.code()).into());
    }
    Ok(())
}

fn planted_bug() -> Result<(), Failed> {
    let out = sim(&[
        "--seed",
        "0",
        "--emulate-bug",
        "skip-rule-full-sync",
        "--no-shrink",
    ])?;
    let text = stdout(&out);
    let checks = [
        (out.status.code() == Some(1), "exit code 1"),
        (text.contains("seed 0: FAIL trace "), "the FAIL line"),
        (text.contains("seed 0 failed: "), "what broke"),
        (
            text.contains(
                "replay: gantry sim --mode websocket --gateways 3 --ops 50 --seed 0 \
                 --emulate-bug skip-rule-full-sync",
            ),
            "the replay command",
        ),
        (text.contains("1 seeds, 1 failed, "), "the summary"),
    ];
    super::all_hold(&checks, &text)
}

fn unsimulated_mode() -> Result<(), Failed> {
    let out = sim(&["--mode", "zookeeper", "--seed", "1"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(2) || !err.contains("zookeeper is not simulated yet") {
        return Err(format!("exit {:?}: {err}", out.status.code()).into());
    }
    Ok(())
}

fn keep_out_of_range() -> Result<(), Failed> {
    let out = sim(&["--seed", "1", "--ops", "5", "--keep", "0,400"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(2)
        || !err.contains("--keep names step(s) 400 that this plan does not have")
        || stdout(&out).contains(": ok")
    {
        return Err(format!("exit {:?}: {err}", out.status.code()).into());
    }
    Ok(())
}
