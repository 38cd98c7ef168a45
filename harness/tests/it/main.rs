//! The harness's integration tests, one binary with a module per area (each test binary links
//! the whole harness). It is a libtest-mimic main (`harness = false`): every module builds its
//! own trials (probing Docker, Chromium or the middleware servers first, and printing a note on
//! stderr for what it ignores), and this runs them together.
//!
//! Trial names are those of the former separate binaries, so filters still select an area:
//! `cargo test --workspace --test it -- docker::`, `-- predicates`, `-- html_report`, or
//! `-- @zookeeper` (the middleware faults and the zookeeper property), `-- admin_cluster::`,
//! `-- redis::` (the Redis component on the host backend), `-- convergence`, `-- external::`
//! (`gantry run --backend external` against a hand-started admin and gateway), `-- port_race::`
//! (a middleware server started on a taken port moves to a fresh one), `-- selector_choice`
//! (the gateway's choice among selectors and rules against the reference model),
//! `-- seeded_distribution` (a seeded distribution check replays), `-- sim_cli`
//! (`gantry sim`'s lines, exit codes and replays), `-- bench_cli` (`gantry bench` on debug binaries),
//! `-- shard_cli` (`gantry run --partition` and `gantry report merge`), `-- swarm::` (the swarm
//! backend's services, faults and cleanup).

mod admin_cluster;
mod bench_cli;
mod conformance;
mod convergence;
mod docker;
mod docker_postgres;
mod external;
mod html_report;
mod live;
mod middleware_faults;
mod port_race;
mod properties;
mod redis;
mod seeded_distribution;
mod selector_choice;
mod shard_cli;
mod sim_cli;
mod swarm;

use libtest_mimic::{Arguments, Failed, Trial};
use model::SyncMode;

/// Collects every module's trials and runs those the command line selects.
fn main() {
    let args = Arguments::from_args();
    let mut trials = docker::trials();
    trials.extend(docker_postgres::trials());
    trials.extend(admin_cluster::trials());
    trials.extend(conformance::trials());
    trials.extend(convergence::trials());
    trials.extend(external::trials());
    trials.extend(html_report::trials());
    trials.extend(middleware_faults::trials());
    trials.extend(port_race::trials());
    trials.extend(properties::trials());
    trials.extend(redis::trials());
    trials.extend(seeded_distribution::trials());
    trials.extend(selector_choice::trials());
    trials.extend(sim_cli::trials());
    trials.extend(shard_cli::trials());
    trials.extend(bench_cli::trials());
    trials.extend(swarm::trials());
    libtest_mimic::run(&args, trials).exit();
}

/// The `gantry` binary: where `cargo nextest run --archive-file` extracted it
/// (`NEXTEST_BIN_EXE_gantry`, on a CI runner that did not build it), else where cargo built it.
fn gantry_exe() -> std::path::PathBuf {
    std::env::var_os("NEXTEST_BIN_EXE_gantry")
        .map_or_else(|| env!("CARGO_BIN_EXE_gantry").into(), Into::into)
}

/// `<name>@<mode>` for every sync mode, each running `test(mode)`; a mode whose server is not
/// installed is ignored (with a note on stderr) unless `GANTRY_REQUIRE` names it.
fn per_mode(name: &'static str, test: fn(SyncMode) -> Result<(), Failed>) -> Vec<Trial> {
    [
        SyncMode::Websocket,
        SyncMode::Http,
        SyncMode::Zookeeper,
        SyncMode::Etcd,
    ]
    .into_iter()
    .map(|mode| {
        let skip = harness::internals::backend::component::skip_reason(&harness::ProcessEnv, mode);
        if let Some(reason) = &skip {
            eprintln!("note: `{name}@{mode}` is ignored: {reason}");
        }
        Trial::test(format!("{name}@{mode}"), move || test(mode)).with_ignored_flag(skip.is_some())
    })
    .collect()
}

/// What a planted-bug trial asserts of the failure it provoked: every `(holds, what)` must
/// hold; else the ones that do not, with the failure's `message`.
fn all_hold(checks: &[(bool, &str)], message: &str) -> Result<(), Failed> {
    let failed: Vec<&str> = checks
        .iter()
        .filter(|(ok, _)| !ok)
        .map(|(_, what)| *what)
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("{}; the message was:\n{message}", failed.join("; ")).into())
    }
}
