//! The harness's integration tests, one binary with a module per area (each test binary links
//! the whole harness). It is a libtest-mimic main (`harness = false`): every module builds its
//! own trials (probing Docker, Chromium or the middleware servers first, and printing a note on
//! stderr for what it ignores), and this runs them together.
//!
//! Trial names are those of the former separate binaries, so filters still select an area:
//! `cargo test --workspace --test it -- docker::`, `-- predicates`, `-- html_report`, or
//! `-- @zookeeper` (the middleware faults and the zookeeper property), `-- admin_cluster::`,
//! `-- redis::` (the Redis component on the host backend), `-- convergence`.

mod admin_cluster;
mod convergence;
mod docker;
mod html_report;
mod middleware_faults;
mod properties;
mod redis;

use libtest_mimic::Arguments;

/// Collects every module's trials and runs those the command line selects.
fn main() {
    let args = Arguments::from_args();
    let mut trials = docker::trials();
    trials.extend(admin_cluster::trials());
    trials.extend(convergence::trials());
    trials.extend(html_report::trials());
    trials.extend(middleware_faults::trials());
    trials.extend(properties::trials());
    trials.extend(redis::trials());
    libtest_mimic::run(&args, trials).exit();
}
