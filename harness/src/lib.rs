//! gantry's e2e engine: runs scenario files (docs/scenarios.md) against a fresh admin +
//! gateway + echo upstreams per sync mode, and reports per case.
//!
//! Entry points: [`discover`] finds and parses scenario files, [`prepare`] builds and locates
//! the binaries, [`run_case`] runs one scenario under one mode, and [`run_paths`] does all of it
//! for the `gantry` CLI. Layers: [`scenario`] (parse, validate) → `topology` on a `backend`
//! → `runner` (with `probe` verdicts and `wait` convergence) → [`report`].
//!
//! In a test of your own, [`Gantry`] starts a topology and hands out its admin client and
//! gateway address (`harness/examples/own_test.rs`).

// The library surface: what a user's own test or tool writes against, documented and kept
// stable: the facade ([`Gantry`]), the scenario format ([`scenario`]), running cases
// ([`run_paths`], [`run_case`] and their options, plan and results) and the reports
// ([`report`]), with their errors ([`error`]).
pub mod error;
pub mod report;
pub mod scenario;

// The engine's rooms: public for the `gantry` binary (`src/main.rs`) and the engine's own
// white-box tests (`tests/it`), not a promise to anyone else, so hidden from the docs.
#[doc(hidden)]
pub mod backend;
#[doc(hidden)]
pub mod bench;
#[doc(hidden)]
pub mod client;
#[doc(hidden)]
pub mod compose;
#[doc(hidden)]
pub mod converge;
#[doc(hidden)]
pub mod fault;
#[doc(hidden)]
pub mod images;
#[doc(hidden)]
pub mod judge;
#[doc(hidden)]
pub mod lower;
#[doc(hidden)]
pub mod probe;
#[doc(hidden)]
pub mod reference;
#[doc(hidden)]
pub mod target;
#[doc(hidden)]
pub mod topology;
#[doc(hidden)]
pub mod upstream;
#[doc(hidden)]
pub mod wait;

// Private rooms; what of them belongs to the surface is re-exported below.
mod gantry;
mod json_path;
mod options;
mod plan;
mod run;
mod runner;

use std::path::{Path, PathBuf};

pub use backend::{Backend, BackendKind};
pub use error::{BackendError, RunError, ScenarioError};
pub use gantry::{Gantry, GantryBuilder};
pub use options::{Env, ProcessEnv, RunOptions, external_target};
pub use plan::{NotRun, Planned, count_cases, not_run, plan};
pub use report::{CaseId, CaseOutcome, CaseResult, Event};
pub use run::{RunSetupError, case_result, prepare, run_paths};
pub use runner::{ExpectedSkip, expected_skips, run_case};
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
