//! gantry's e2e engine: runs scenario files (docs/scenarios.md) against a fresh admin +
//! gateway + echo upstreams per sync mode, and reports per case.
//!
//! Entry points: [`discover`] finds and parses scenario files, [`prepare`] builds and locates
//! the binaries, [`run_case`] runs one scenario under one mode, and [`run_paths`] does all of it
//! for the `gantry` CLI. Layers: [`scenario`] (parse, validate) → [`topology`] on a [`backend`]
//! → [`runner`] (with [`probe`] verdicts and [`wait`] convergence) → [`report`].
//!
//! In a test of your own, [`Gantry`] starts a topology and hands out its admin client and
//! gateway address (`harness/examples/own_test.rs`).

pub mod backend;
pub mod bench;
pub mod client;
pub mod compose;
pub mod converge;
pub mod error;
pub mod fault;
pub mod gantry;
pub mod images;
pub mod json_path;
pub mod judge;
pub mod lower;
pub mod options;
pub mod plan;
pub mod probe;
pub mod reference;
pub mod report;
pub mod run;
pub mod runner;
pub mod scenario;
pub mod target;
pub mod topology;
pub mod upstream;
pub mod wait;

use std::path::{Path, PathBuf};

pub use backend::{Backend, BackendKind};
pub use error::{BackendError, RunError, ScenarioError};
pub use gantry::{Gantry, GantryBuilder};
pub use options::{Env, ProcessEnv, RunOptions, external_target};
pub use plan::{NotRun, Planned, count_cases, not_run, plan};
pub use report::{CaseResult, Event};
pub use run::{RunSetupError, case_result, prepare, run_paths};
pub use runner::{CaseOutcome, ExpectedSkip, expected_skips, run_case};
pub use scenario::{CaseFile, Scenario, discover};
/// The testcontainers the docker backend runs on, for a container of your own beside a
/// [`Gantry`]'s (same version, same engine).
pub use testcontainers;

/// The workspace root this harness was built in.
pub const WORKSPACE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The default scenario directory: the workspace's `cases/scenarios`, else `./cases/scenarios`.
pub fn default_scenario_dir() -> PathBuf {
    let built_in = Path::new(WORKSPACE_DIR).join("cases/scenarios");
    if built_in.is_dir() {
        built_in
    } else {
        PathBuf::from("cases/scenarios")
    }
}
