//! What the engine needs to run cases: [`RunOptions`], read from the environment through
//! [`Env`].

use std::path::PathBuf;

use model::{SyncMode, SyncStyle};

use crate::backend::{self, BackendKind};
use crate::error::BackendError;

/// Reads environment variables; a trait so option parsing is testable.
pub trait Env {
    /// The variable's value, if set.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

/// A fixed environment, for tests of option parsing.
#[cfg(test)]
pub(crate) struct FakeEnv(pub(crate) std::collections::HashMap<&'static str, &'static str>);

#[cfg(test)]
impl Env for FakeEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|v| (*v).to_owned())
    }
}

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// What the engine needs to run cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// The backend.
    pub backend: BackendKind,
    /// Requested sync modes; a scenario runs under its own modes ∩ these.
    pub modes: Vec<SyncMode>,
    /// Where the binaries are (`GANTRY_BIN_DIR`); `None` locates them next to the harness.
    pub bin_dir: Option<PathBuf>,
    /// Run `cargo build --workspace --bins` first (off with `--no-build` or `GANTRY_BIN_DIR`).
    pub build: bool,
    /// Keep the temp dirs (`GANTRY_KEEP=1`).
    pub keep: bool,
    /// Seed of the harness's random choices (the hash judge's client addresses); from
    /// `GANTRY_SEED`, else drawn at start. Every result reports it, so a run can be repeated.
    pub seed: u64,
    /// Extra arguments for every gateway started (`--gateway-arg`).
    pub gateway_args: Vec<String>,
    /// Extra arguments for every admin started (`--admin-arg`).
    pub admin_args: Vec<String>,
    /// How the gateways take a change (`--sync-style`): [`SyncStyle::Full`] starts every
    /// gateway with `--sync-style full`.
    pub sync_style: SyncStyle,
    /// Only scenarios whose name contains this (`--filter`).
    pub filter: Option<String>,
    /// Only this shard of the plan (`--partition`).
    pub partition: Option<crate::Partition>,
    /// Show the service logs of every failure, not only when a process died (`--verbose`).
    pub verbose: bool,
    /// Do not judge the service logs against `expectLogs` (`--allow-logs`): the log check is
    /// reported skipped.
    pub allow_logs: bool,
    /// The admin and gateway of `--backend external`.
    pub external: Option<backend::ExternalTarget>,
    /// Which cases the run takes by their features (`--profile`, `--supported-features`,
    /// `--exempt-features`).
    pub features: crate::conformance::FeatureSelection,
    /// How every case runs besides its sync mode (`--run-mode`); `None` runs each once, as
    /// written.
    pub run_mode: Option<crate::RunMode>,
}

impl RunOptions {
    /// Defaults (host backend, websocket, incremental sync, build first) adjusted by
    /// `GANTRY_BIN_DIR`, `GANTRY_KEEP`, `GANTRY_SEED` and `GANTRY_SYNC_STYLE`.
    pub fn from_env(env: &dyn Env) -> Self {
        let bin_dir = env
            .var("GANTRY_BIN_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from);
        Self {
            backend: BackendKind::Host,
            modes: vec![SyncMode::Websocket],
            build: bin_dir.is_none(),
            bin_dir,
            keep: env.var("GANTRY_KEEP").is_some_and(|v| v == "1"),
            seed: env
                .var("GANTRY_SEED")
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(rand::random),
            gateway_args: Vec::new(),
            admin_args: Vec::new(),
            sync_style: env
                .var("GANTRY_SYNC_STYLE")
                .and_then(|s| s.parse().ok())
                .unwrap_or(SyncStyle::Incremental),
            filter: None,
            partition: None,
            verbose: false,
            allow_logs: false,
            external: None,
            features: crate::conformance::FeatureSelection::default(),
            run_mode: None,
        }
    }
}

impl RunOptions {
    /// The arguments every gateway gets besides its own: `--gateway-arg`s, then
    /// `--sync-style full` when [`RunOptions::sync_style`] asks for it.
    pub fn gateway_command_args(&self) -> Vec<String> {
        let mut args = self.gateway_args.clone();
        if self.sync_style == SyncStyle::Full {
            args.extend(["--sync-style".to_owned(), SyncStyle::Full.to_string()]);
        }
        args
    }

    /// The arguments every admin gets besides its own: `--admin-arg`s, then under
    /// [`SyncStyle::Full`] no limit on websocket full syncs (`--full-sync-interval-ms 0
    /// --full-sync-rate 0`), since every change then asks for one and the limit (a guard
    /// against `MYSELF` storms) would add up to its interval to every change.
    pub fn admin_command_args(&self) -> Vec<String> {
        let mut args = self.admin_args.clone();
        if self.sync_style == SyncStyle::Full {
            args.extend(
                ["--full-sync-interval-ms", "0", "--full-sync-rate", "0"].map(str::to_owned),
            );
        }
        args
    }
}

/// The target of `--backend external`, or why there is none.
pub fn external_target(opts: &RunOptions) -> Result<&backend::ExternalTarget, BackendError> {
    opts.external
        .as_ref()
        .ok_or_else(|| BackendError::External {
            what: "choosing the target".into(),
            detail: "--backend external needs --admin-url and --gateway-url".into(),
        })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn env_sets_bin_dir_and_keep() {
        let o = RunOptions::from_env(&FakeEnv(HashMap::new()));
        assert!(o.build && !o.keep && o.bin_dir.is_none());
        let o = RunOptions::from_env(&FakeEnv(HashMap::from([
            ("GANTRY_BIN_DIR", "/x"),
            ("GANTRY_KEEP", "1"),
        ])));
        assert_eq!(
            (o.build, o.keep, o.bin_dir),
            (false, true, Some(PathBuf::from("/x")))
        );
    }
}
