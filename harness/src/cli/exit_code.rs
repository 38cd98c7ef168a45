//! The `gantry` command's exit codes besides 0 (success), named in one place (nextest's
//! `nextest-metadata/src/exit_codes.rs`) and listed in README ("Exit codes").

/// Something was judged and failed: a scenario file is invalid (`gantry validate`), a case
/// failed (`gantry run`, where a file that does not parse is a failed case), or a bench's
/// verdict failed (`gantry bench`).
pub(crate) const FAILED: u8 = 1;

/// Nothing could be judged: the paths given cannot be read (`RunSetupError::Discover` in
/// `gantry run`), the async runtime or a bench cannot start, `gantry upstream` cannot bind.
/// clap's usage errors exit with 2 as well.
pub(crate) const SETUP: u8 = 2;

/// The backend could not start: binaries or images missing or stale, no Docker engine; or
/// `gantry images` could not build them.
pub(crate) const BACKEND: u8 = 3;

/// A report could not be written.
pub(crate) const REPORT: u8 = 4;

/// `gantry run` ran no case at all (every one skipped, or none selected): a job that tests
/// nothing must not pass.
pub(crate) const NOTHING_RAN: u8 = 5;

/// Interrupted (Ctrl-C): 128 + SIGINT, as shells report it.
pub(crate) const INTERRUPTED: u8 = 130;
