//! The `gantry` command line (clap derive), converted to the library's [`RunOptions`].

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use harness::{BackendKind, Env, RunOptions};
use model::SyncMode;

/// gantry: e2e tests for config-synced API gateways.
#[derive(Debug, Parser)]
#[command(name = "gantry", version)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run scenario files (default: the workspace's cases/scenarios).
    Run(RunArgs),
    /// Build the static binaries and the `gantry/*:dev` images (only those that changed).
    Images(ImagesArgs),
    /// Serve one echo upstream (what the `gantry/upstream:dev` image runs).
    Upstream(UpstreamArgs),
    /// Print the compose file for a sync mode (compose/<mode>.yml is this output).
    Compose(ComposeArgs),
}

/// `gantry images` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ImagesArgs {
    /// Rebuild every image even when its content hash is unchanged.
    #[arg(long)]
    pub(crate) force: bool,
    /// Use the static binaries already in this directory instead of running the static build.
    #[arg(long, env = "GANTRY_STATIC_BIN_DIR")]
    pub(crate) bin_dir: Option<PathBuf>,
}

/// `gantry upstream` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct UpstreamArgs {
    /// The upstream's name (the `x-gantry-upstream` header and `upstream` field).
    #[arg(long)]
    pub(crate) name: String,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8080)]
    pub(crate) port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) bind: std::net::IpAddr,
}

/// `gantry compose` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ComposeArgs {
    /// The sync mode.
    #[arg(long, default_value = "websocket")]
    pub(crate) sync: SyncMode,
}

/// `gantry run` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// Scenario files or directories (searched recursively for *.yaml).
    pub(crate) paths: Vec<PathBuf>,
    /// Sync modes to run: `all` or a comma-separated list.
    #[arg(long, default_value = "websocket", value_parser = parse_modes)]
    pub(crate) sync: Modes,
    /// Where the services run.
    #[arg(long, value_enum, default_value_t = BackendArg::Host)]
    pub(crate) backend: BackendArg,
    /// Also write a JSON report here.
    #[arg(long)]
    pub(crate) report_json: Option<PathBuf>,
    /// Do not run `cargo build --workspace --bins` first.
    #[arg(long)]
    pub(crate) no_build: bool,
    /// An extra argument for every gateway started (repeat it; e.g.
    /// `--gateway-arg=--emulate-bug --gateway-arg=drop-deletes`).
    #[arg(long = "gateway-arg", allow_hyphen_values = true)]
    pub(crate) gateway_args: Vec<String>,
    /// Seed of the harness's random choices (default: `GANTRY_SEED`, else random; every
    /// result reports the one used).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
}

/// A parsed `--sync` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Modes(pub(crate) Vec<SyncMode>);

/// `--backend` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackendArg {
    /// Local processes.
    Host,
    /// Containers of the `gantry/*:dev` images on a private network per case.
    Docker,
}

fn parse_modes(s: &str) -> Result<Modes, String> {
    if s == "all" {
        return Ok(Modes(SyncMode::ALL.to_vec()));
    }
    s.split(',')
        .map(|m| m.trim().parse::<SyncMode>().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()
        .map(Modes)
}

impl RunArgs {
    /// The engine options: environment defaults, then the flags.
    pub(crate) fn options(&self, env: &dyn Env) -> RunOptions {
        let mut opts = RunOptions::from_env(env);
        opts.modes = self.sync.0.clone();
        opts.backend = match self.backend {
            BackendArg::Host => BackendKind::Host,
            BackendArg::Docker => BackendKind::Docker,
        };
        opts.build &= !self.no_build;
        opts.gateway_args.clone_from(&self.gateway_args);
        if let Some(seed) = self.seed {
            opts.seed = seed;
        }
        opts
    }

    /// The paths, defaulting to the workspace's scenarios.
    pub(crate) fn paths(&self) -> Vec<PathBuf> {
        if self.paths.is_empty() {
            vec![harness::default_scenario_dir()]
        } else {
            self.paths.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoEnv;

    impl Env for NoEnv {
        fn var(&self, _: &str) -> Option<String> {
            None
        }
    }

    fn run_args(args: &[&str]) -> Result<RunArgs, clap::Error> {
        let cli = Cli::try_parse_from([&["gantry", "run"], args].concat())?;
        match cli.command {
            Command::Run(r) => Ok(r),
            other => panic!("not a run: {other:?}"),
        }
    }

    #[test]
    fn flags_become_options() {
        let r = run_args(&["--sync", "websocket,http", "--no-build", "a.yaml"]).unwrap();
        let o = r.options(&NoEnv);
        assert_eq!(o.modes, vec![SyncMode::Websocket, SyncMode::Http]);
        assert!(!o.build);
        assert_eq!(r.paths(), vec![PathBuf::from("a.yaml")]);
        assert_eq!(
            run_args(&["--sync", "all"]).unwrap().options(&NoEnv).modes,
            SyncMode::ALL.to_vec()
        );
        let d = run_args(&[]).unwrap();
        assert_eq!(d.options(&NoEnv).modes, vec![SyncMode::Websocket]);
        assert!(d.options(&NoEnv).build);
    }

    #[test]
    fn docker_backend_and_the_other_subcommands_parse() {
        let r = run_args(&["--backend", "docker"]).unwrap();
        assert_eq!(r.options(&NoEnv).backend, BackendKind::Docker);
        let cli = Cli::try_parse_from([
            "gantry", "upstream", "--name", "alpha", "--port", "8080", "--bind", "0.0.0.0",
        ])
        .unwrap();
        let Command::Upstream(u) = cli.command else {
            panic!("{cli:?}")
        };
        assert_eq!((u.name.as_str(), u.port), ("alpha", 8080));
        assert_eq!(u.bind.to_string(), "0.0.0.0");
        let cli = Cli::try_parse_from(["gantry", "compose", "--sync", "websocket"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Compose(ComposeArgs {
                sync: SyncMode::Websocket
            })
        ));
    }

    #[test]
    fn unknown_mode_is_a_usage_error() {
        let e = run_args(&["--sync", "pigeon"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("unknown sync mode `pigeon`"), "{e}");
    }
}
