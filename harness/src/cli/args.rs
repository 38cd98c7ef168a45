//! The `gantry` command line (clap derive), converted to the library's [`RunOptions`].

use std::path::PathBuf;
use std::time::Duration;

use crate::{BackendKind, Env, RunOptions};
use clap::{Parser, Subcommand, ValueEnum};
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
    /// List every scenario × mode × backend `run` with the same arguments would report, and
    /// why a case would be skipped.
    List(RunArgs),
    /// Build the release binaries and the `gantry/*:dev` images (only those that changed).
    Images(ImagesArgs),
    /// Serve one echo upstream (what the `gantry/upstream:dev` image runs).
    Upstream(UpstreamArgs),
    /// Serve one fault proxy with its control API (what the `gantry/proxy:dev` image runs
    /// for the docker backend's network faults).
    #[command(hide = true)]
    FaultProxy(FaultProxyArgs),
    /// Print the compose file for a sync mode (`compose/<mode>.yml` is this output).
    Compose(ComposeArgs),
    /// Print Kubernetes manifests for a sync mode (`deploy/k8s/<mode>.yaml` is this output).
    K8s(K8sArgs),
    /// Reports of runs made elsewhere: `merge` joins the shards of one run.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Print the scenario files' JSON Schema (docs/scenario.schema.json is this output).
    Schema,
    /// Check scenario files without running them: every problem, each at its line and column.
    Validate(ValidateArgs),
    /// Benchmarks (release binaries; each prints a table and writes `--report-json`).
    Bench(BenchArgs),
    /// The convergence property (docs/convergence.md): random admin histories with faults,
    /// every route checked on every gateway after the last heal; replays a seed.
    Check(CheckArgs),
    /// Deterministic simulation (docs/simulation.md): the admin and the gateways on a
    /// simulated network and clock, a seed's operations and faults, every applied config
    /// checked; a seed replays its run exactly.
    Sim(SimArgs),
}

/// `gantry sim` arguments.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("seeds_given").required(true).args(["seed", "seeds"])))]
pub(crate) struct SimArgs {
    /// The sync mode: websocket or http (ZooKeeper and etcd are not simulated: see
    /// docs/simulation.md).
    #[arg(long, default_value = "websocket")]
    pub(crate) mode: SyncMode,
    /// Gateways (1 to 8).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub(crate) gateways: u8,
    /// Operations per seed's history.
    #[arg(long, default_value_t = 50)]
    pub(crate) ops: usize,
    /// Run this one seed.
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Run this many seeds, from `--start`.
    #[arg(long)]
    pub(crate) seeds: Option<u64>,
    /// The first seed of `--seeds`.
    #[arg(long, default_value_t = 0, requires = "seeds")]
    pub(crate) start: u64,
    /// Only these steps of the seed's plan (a shrunk failure's replay), by index: `3,7,12`.
    #[arg(long, value_delimiter = ',', requires = "seed")]
    pub(crate) keep: Option<Vec<usize>>,
    /// A planted bug for the gateways to emulate (a checker must catch it).
    #[arg(long, value_enum)]
    pub(crate) emulate_bug: Option<gateway::EmulatedBug>,
    /// Print the whole trace of each seed run (what every host did, and when).
    #[arg(long)]
    pub(crate) trace: bool,
    /// Do not shrink a failing seed.
    #[arg(long)]
    pub(crate) no_shrink: bool,
    /// Seeds run at once (default: one per core).
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
}

/// `gantry check` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {
    /// The sync mode.
    #[arg(long, default_value = "websocket")]
    pub(crate) sync: SyncMode,
    /// The seed (default: random; printed, and named by a failure).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// At most this many steps (operations or faults) per history.
    #[arg(long, default_value_t = 8)]
    pub(crate) ops: usize,
    /// Faults in the histories: `on` or `off`.
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub(crate) faults: String,
    /// Histories to generate.
    #[arg(long, default_value_t = 100)]
    pub(crate) cases: u32,
    /// How long after the last heal every route must be stable.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub(crate) bound: Duration,
    /// Gateways in the topology (1 to 4; more than one: host backend only).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=4))]
    pub(crate) gateways: u8,
    /// An extra argument for the gateway (repeat it; e.g.
    /// `--gateway-arg=--emulate-bug --gateway-arg=drop-deletes`).
    #[arg(long = "gateway-arg", allow_hyphen_values = true)]
    pub(crate) gateway_args: Vec<String>,
    /// Do not run `cargo build --workspace --bins` first.
    #[arg(long)]
    pub(crate) no_build: bool,
}

/// `gantry images` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ImagesArgs {
    /// Rebuild every image even when its content hash is unchanged.
    #[arg(long)]
    pub(crate) force: bool,
    /// Use the binaries already in this directory instead of running the release build.
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
    /// How it answers besides echoing: a JSON list of a case file's `behave` entries
    /// (docs/scenarios.md, "Upstream behaviour"), e.g. `[{"path":"/fail","status":503}]`.
    #[arg(long, value_parser = parse_behave)]
    pub(crate) behave: Option<Behaviours>,
}

/// `gantry fault-proxy`: one fault proxy and its control API (`fault::container`).
#[derive(Debug, clap::Args)]
pub(crate) struct FaultProxyArgs {
    /// Where it relays from.
    #[arg(long, default_value_t = std::net::SocketAddr::from(([0, 0, 0, 0], crate::fault::container::LISTEN_PORT)))]
    pub(crate) listen: std::net::SocketAddr,
    /// Where it relays to: `host:port`, resolved when it starts.
    #[arg(long)]
    pub(crate) target: String,
    /// Where its control API listens.
    #[arg(long, default_value_t = std::net::SocketAddr::from(([0, 0, 0, 0], crate::fault::container::CONTROL_PORT)))]
    pub(crate) control: std::net::SocketAddr,
}

/// The `--behave` list, checked like a case file's.
#[derive(Debug, Clone)]
pub(crate) struct Behaviours(pub(crate) Vec<crate::upstream::Behaviour>);

fn parse_behave(text: &str) -> Result<Behaviours, String> {
    let list: Vec<crate::upstream::Behaviour> =
        serde_json::from_str(text).map_err(|e| format!("not a behave list: {e}"))?;
    match crate::upstream::list_problems(&list).first() {
        Some((at, message)) => Err(format!("behave{at}: {message}")),
        None => Ok(Behaviours(list)),
    }
}

/// `gantry compose` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ComposeArgs {
    /// The sync mode.
    #[arg(long, default_value = "websocket")]
    pub(crate) sync: SyncMode,
}

/// `gantry k8s` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct K8sArgs {
    /// The sync mode.
    #[arg(long, default_value = "websocket")]
    pub(crate) sync: SyncMode,
    /// Gateway pods.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) gateways: u32,
    /// Shards of the scenario Job (its completions and parallelism).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) shards: u32,
}

/// The reports a run (or a merge of runs) writes.
#[derive(Debug, clap::Args)]
pub(crate) struct ReportOutputs {
    /// Also write a JSON report here.
    #[arg(long)]
    pub(crate) report_json: Option<PathBuf>,
    /// Write a JUnit XML report (one testsuite per mode × backend) to this file.
    #[arg(long)]
    pub(crate) report_junit: Option<PathBuf>,
    /// Write an HTML report (a self-contained `index.html` with plots) into this directory.
    #[arg(long)]
    pub(crate) report_html: Option<PathBuf>,
}

/// `gantry report` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ReportCommand {
    /// Join the JSON reports of the shards of one run (`gantry run --partition K/N`) and
    /// write the reports one unsharded run would: exit 1 when a case failed, 5 when none ran.
    Merge(MergeArgs),
}

/// `gantry report merge` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct MergeArgs {
    /// The shards' JSON reports (`--report-json` of each `gantry run --partition`).
    #[arg(required = true)]
    pub(crate) shards: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) reports: ReportOutputs,
}

/// `gantry validate` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ValidateArgs {
    /// Scenario files or directories (searched recursively for *.yaml; default: the
    /// workspace's cases/scenarios).
    pub(crate) paths: Vec<PathBuf>,
}

impl ValidateArgs {
    /// The paths, defaulting to the workspace's scenarios (shown relative to the current
    /// directory when they are under it).
    pub(crate) fn paths(&self) -> Vec<PathBuf> {
        if !self.paths.is_empty() {
            return self.paths.clone();
        }
        let dir = crate::default_scenario_dir();
        let shown = std::env::current_dir()
            .and_then(|cwd| Ok((cwd.canonicalize()?, dir.canonicalize()?)))
            .ok()
            .and_then(|(cwd, dir)| dir.strip_prefix(cwd).ok().map(PathBuf::from))
            .filter(|r| !r.as_os_str().is_empty());
        vec![shown.unwrap_or(dir)]
    }
}

/// `gantry run` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// Scenario files or directories (searched recursively for *.yaml).
    pub(crate) paths: Vec<PathBuf>,
    /// Sync modes to run: `all` or a comma-separated list.
    #[arg(long, default_value = "websocket", value_parser = parse_modes)]
    pub(crate) sync: Modes,
    /// How the gateways take a change: `incremental` (as it arrives) or `full` (a signal to
    /// resync in full: the conformance matrix's incremental-off axis; gateways of gantry's
    /// own only).
    #[arg(long, env = "GANTRY_SYNC_STYLE", default_value = "incremental")]
    pub(crate) sync_style: model::SyncStyle,
    /// Where the services run.
    #[arg(long, value_enum, default_value_t = BackendArg::Host)]
    pub(crate) backend: BackendArg,
    #[command(flatten)]
    pub(crate) reports: ReportOutputs,
    /// Do not run `cargo build --workspace --bins` first.
    #[arg(long)]
    pub(crate) no_build: bool,
    /// Only scenarios whose name contains this text.
    #[arg(long)]
    pub(crate) filter: Option<String>,
    /// Only one shard of the cases, for N runners that each run one (then `gantry report
    /// merge` joins their JSON reports): `hash:K/N` (or `K/N`) by a hash of each case's name,
    /// `count:K/N` every N-th; every shard must get the same other arguments.
    #[arg(long, value_name = "SPLIT:K/N")]
    pub(crate) partition: Option<crate::Partition>,
    /// An extra argument for every gateway started (repeat it; e.g.
    /// `--gateway-arg=--emulate-bug --gateway-arg=drop-deletes`).
    #[arg(long = "gateway-arg", allow_hyphen_values = true)]
    pub(crate) gateway_args: Vec<String>,
    /// An extra argument for every admin started (repeat it; e.g.
    /// `--admin-arg=--emulate-bug --admin-arg=no-peer-watch`).
    #[arg(long = "admin-arg", allow_hyphen_values = true)]
    pub(crate) admin_args: Vec<String>,
    /// Seed of the harness's random choices (default: `GANTRY_SEED`, else random; every
    /// result reports the one used).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// List every case's checks and change timings, and show the service logs of every
    /// failure (by default only when a process died).
    #[arg(long, short)]
    pub(crate) verbose: bool,
    /// Run every case another way too (README "Run modes"): `slice[:MS]` (every link through
    /// a slicer writing one byte at a time, 1 ms or MS apart, `slice:0` unpaced; the case's
    /// waits and `converge` bounds stretched ×(1 + 3·MS)), `restart` (the gateways restarted between every two steps), `leak[:N]`
    /// (each case N times on one topology, default 5: the admin's and gateways' RSS and open
    /// fds must not grow), `repeat:N` (each case N times; any failed run fails it).
    #[arg(long, value_name = "MODE")]
    pub(crate) run_mode: Option<crate::RunMode>,
    /// Do not judge the admins' and gateways' WARN and ERROR lines against each case's
    /// `expectLogs` (for a noisy build under investigation; the check is reported skipped)
    #[arg(long)]
    pub(crate) allow_logs: bool,
    #[command(flatten)]
    pub(crate) conformance: ConformanceArgs,
    #[command(flatten)]
    pub(crate) external: ExternalArgs,
}

/// Which cases a run takes by their features, and the conformance report
/// (conformance/README.md).
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Conformance")]
pub(crate) struct ConformanceArgs {
    /// Only the cases of a conformance profile (every feature a case names is in it): `core`
    /// (the core features of every area), `extended` (every feature), an area (`routing`,
    /// `balance`, `sync`, `faults`, `registration`, `rateLimiting`, `adminApi`: its core and
    /// extended features), or `<area>.core` / `<area>.extended`. The admin REST API version
    /// is `--shenyu-version`.
    #[arg(long, value_name = "PROFILE")]
    pub(crate) profile: Option<crate::conformance::ProfileName>,
    /// The features the implementation offers, comma-separated (default: all); a case needing
    /// another is skipped, naming it.
    #[arg(long, value_name = "FEATURES", value_parser = crate::conformance::selection::parse_feature_list)]
    pub(crate) supported_features: Option<std::collections::BTreeSet<String>>,
    /// Features not to test, comma-separated; a case needing one is skipped, naming it.
    #[arg(long, value_name = "FEATURES", value_parser = crate::conformance::selection::parse_feature_list)]
    pub(crate) exempt_features: Option<std::collections::BTreeSet<String>>,
    /// Write a conformance report (YAML, after the Gateway API's ConformanceReport) here; the
    /// run must have one `--sync` mode.
    #[arg(long, value_name = "FILE")]
    pub(crate) report_conformance: Option<PathBuf>,
    /// The report's implementation organisation (default for gantry's own pair: `gantry`).
    #[arg(long, value_name = "TEXT")]
    pub(crate) implementation_organization: Option<String>,
    /// The report's implementation project (default for gantry's own pair: `gantry reference
    /// pair`; required with `--backend external`).
    #[arg(long, value_name = "TEXT")]
    pub(crate) implementation_project: Option<String>,
    /// The report's implementation URL.
    #[arg(long, value_name = "URL")]
    pub(crate) implementation_url: Option<String>,
    /// The report's implementation version (default for gantry's own pair: gantry's; required
    /// with `--backend external`).
    #[arg(long, value_name = "VERSION")]
    pub(crate) implementation_version: Option<String>,
    /// A contact for the report's implementation (repeat it).
    #[arg(long, value_name = "CONTACT")]
    pub(crate) implementation_contact: Vec<String>,
}

impl ConformanceArgs {
    /// The run's feature selection.
    pub(crate) fn selection(&self) -> crate::conformance::FeatureSelection {
        crate::conformance::FeatureSelection {
            profile: self.profile,
            supported: self.supported_features.clone(),
            exempt: self.exempt_features.clone().unwrap_or_default(),
        }
    }

    /// The implementation the report names: gantry's own pair on the host, docker and swarm
    /// backends (the flags override it); an external target must be named by the flags.
    pub(crate) fn implementation(
        &self,
        external: bool,
    ) -> Result<crate::conformance::Implementation, String> {
        let mut i = crate::conformance::Implementation::gantry_pair();
        if external {
            let (Some(project), Some(version)) =
                (&self.implementation_project, &self.implementation_version)
            else {
                return Err("--report-conformance against an external target needs \
                     --implementation-project and --implementation-version (and \
                     --implementation-organization, --implementation-url, \
                     --implementation-contact to fill the report)"
                    .into());
            };
            i = crate::conformance::Implementation {
                organization: String::new(),
                project: project.clone(),
                url: String::new(),
                version: version.clone(),
                contact: Vec::new(),
            };
        }
        let set = |field: &mut String, value: &Option<String>| {
            if let Some(v) = value {
                field.clone_from(v);
            }
        };
        set(&mut i.organization, &self.implementation_organization);
        set(&mut i.project, &self.implementation_project);
        set(&mut i.url, &self.implementation_url);
        set(&mut i.version, &self.implementation_version);
        if !self.implementation_contact.is_empty() {
            i.contact.clone_from(&self.implementation_contact);
            i.contact.sort();
        }
        Ok(i)
    }
}

/// Where `--backend external` finds its target (README, "Testing your own ShenYu").
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "External target (--backend external)")]
pub(crate) struct ExternalArgs {
    /// The admin's base URL, e.g. `http://shenyu-admin:9095`.
    #[arg(long, env = "GANTRY_ADMIN_URL")]
    pub(crate) admin_url: Option<String>,
    /// The gateway's base URL, e.g. `http://shenyu-gateway:9195`.
    #[arg(long, env = "GANTRY_GATEWAY_URL")]
    pub(crate) gateway_url: Option<String>,
    /// The admin user.
    #[arg(long, env = "GANTRY_ADMIN_USER", default_value = "admin")]
    pub(crate) admin_user: String,
    /// The admin password.
    #[arg(
        long,
        env = "GANTRY_ADMIN_PASSWORD",
        default_value = "123456",
        hide_env_values = true,
        hide_default_value = true
    )]
    pub(crate) admin_password: String,
    /// The address the echo upstreams listen on (each on a free port).
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) upstream_bind: std::net::IpAddr,
    /// The host the gateway reaches the upstreams at (default: the bind address).
    #[arg(long)]
    pub(crate) upstream_advertise: Option<String>,
    /// The admin's REST API version: `2.6` (gantry's target) or `2.7` (namespaces, divide
    /// upstreams through discovery); docs/profiles.md. (Was `--profile`, which now selects
    /// conformance profiles.)
    #[arg(long = "shenyu-version", value_name = "VERSION", default_value = "2.6")]
    pub(crate) shenyu_version: crate::client::Profile,
}

impl ExternalArgs {
    /// The target, when both URLs are given (a fresh name prefix per run).
    pub(crate) fn target(&self) -> Option<crate::backend::ExternalTarget> {
        let trim = |u: &String| u.trim_end_matches('/').to_owned();
        Some(crate::backend::ExternalTarget {
            admin_url: trim(self.admin_url.as_ref()?),
            gateway_url: trim(self.gateway_url.as_ref()?),
            user: self.admin_user.clone(),
            password: self.admin_password.clone(),
            upstream_bind: self.upstream_bind,
            upstream_advertise: self.upstream_advertise.clone().unwrap_or_else(|| {
                match self.upstream_bind {
                    std::net::IpAddr::V6(ip) => format!("[{ip}]"),
                    ip => ip.to_string(),
                }
            }),
            profile: self.shenyu_version,
            prefix: crate::backend::ExternalTarget::fresh_prefix(),
        })
    }
}

/// `gantry bench` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    pub(crate) bench: Bench,
}

/// The benches.
#[derive(Debug, Subcommand)]
pub(crate) enum Bench {
    /// The gateway (1, 100, 10,000 selectors) against nginx and a direct connection:
    /// closed-loop throughput, open-loop latency, upstream connection reuse.
    Proxy(ProxyBenchArgs),
    /// Per sync mode: admin 2xx → gateway applied → probe over N toggles, and the burst figure.
    Sync(SyncBenchArgs),
    /// Thousands of simulated websocket / long-poll subscribers on one admin.
    Fanout(FanoutBenchArgs),
}

impl Bench {
    /// The flags every bench has.
    pub(crate) fn common(&self) -> &BenchCommon {
        match self {
            Bench::Proxy(a) => &a.common,
            Bench::Sync(a) => &a.common,
            Bench::Fanout(a) => &a.common,
        }
    }
}

/// Flags of every bench.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchCommon {
    /// Write the JSON report here.
    #[arg(long)]
    pub(crate) report_json: Option<PathBuf>,
    /// Do not run `cargo build --workspace --bins` first.
    #[arg(long)]
    pub(crate) no_build: bool,
}

impl BenchCommon {
    /// The engine options: environment defaults (`GANTRY_BIN_DIR`, `GANTRY_KEEP`), host backend.
    pub(crate) fn options(&self, env: &dyn Env) -> RunOptions {
        let mut opts = RunOptions::from_env(env);
        opts.build &= !self.no_build;
        opts
    }
}

/// `gantry bench proxy` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ProxyBenchArgs {
    #[command(flatten)]
    pub(crate) common: BenchCommon,
    /// Load-generator connections.
    #[arg(long, default_value_t = 16)]
    pub(crate) connections: usize,
    /// Duration of each pass.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub(crate) duration: Duration,
    /// Warm-up per target and upstream kind.
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    pub(crate) warmup: Duration,
    /// Open-loop rates (requests per second), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000,5000")]
    pub(crate) rates: Vec<u32>,
    /// Rounds; every figure is the median over them.
    #[arg(long, default_value_t = 5)]
    pub(crate) rounds: u32,
    /// Selector counts, one gateway each, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,100,10000")]
    pub(crate) selectors: Vec<usize>,
    /// Upstream kinds, comma-separated.
    #[arg(long, value_delimiter = ',', value_enum, default_value = "whole,split")]
    pub(crate) upstreams: Vec<crate::bench::upstream::UpstreamKind>,
    /// Do not measure nginx even when it is installed.
    #[arg(long)]
    pub(crate) no_nginx: bool,
    /// TCP_NODELAY on the upstream's sockets (`false` shows what a missing one costs).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub(crate) upstream_nodelay: bool,
    /// Concurrent admin writers loading the selectors.
    #[arg(long, default_value_t = 8)]
    pub(crate) writers: usize,
    /// Also measure the gateway and admin of this git revision (built in a worktree under
    /// `target/gantry-baseline/`), as `baseline-<selectors>` in the same rounds; prints the
    /// current build's ratios to it and exits 1 when a throughput ratio is below
    /// `--baseline-threshold`.
    #[arg(long, value_name = "REV")]
    pub(crate) baseline: Option<String>,
    /// The throughput ratio to the baseline below which the bench fails.
    #[arg(long, default_value_t = crate::bench::proxy::DEFAULT_BASELINE_THRESHOLD,
          value_parser = parse_threshold)]
    pub(crate) baseline_threshold: f64,
}

/// A ratio in (0, 10].
fn parse_threshold(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 10.0 => Ok(v),
        _ => Err(format!(
            "`{text}` is not a ratio between 0 (excluded) and 10"
        )),
    }
}

impl ProxyBenchArgs {
    /// The bench options.
    pub(crate) fn options(&self, keep: bool) -> crate::bench::ProxyOptions {
        crate::bench::ProxyOptions {
            connections: self.connections,
            duration: self.duration,
            warmup: self.warmup,
            rates: self.rates.clone(),
            rounds: self.rounds.max(1),
            selectors: self.selectors.clone(),
            kinds: self.upstreams.clone(),
            nginx: !self.no_nginx,
            upstream_nodelay: self.upstream_nodelay,
            writers: self.writers,
            keep,
            // Built by the command, which knows the workspace.
            baseline: None,
            baseline_threshold: self.baseline_threshold,
        }
    }
}

/// `gantry bench sync` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct SyncBenchArgs {
    #[command(flatten)]
    pub(crate) common: BenchCommon,
    /// Sync modes: `all` or a comma-separated list.
    #[arg(long, default_value = "all", value_parser = parse_modes)]
    pub(crate) sync: Modes,
    /// Timed selector toggles per mode.
    #[arg(long, default_value_t = 200)]
    pub(crate) changes: u32,
    /// Selectors (with a rule each) held before the burst.
    #[arg(long, default_value_t = 1000)]
    pub(crate) held: usize,
    /// Selector creates, then rule creates, in the burst.
    #[arg(long, default_value_t = 1000)]
    pub(crate) burst: usize,
    /// Concurrent writers.
    #[arg(long, default_value_t = 8)]
    pub(crate) writers: usize,
}

impl SyncBenchArgs {
    /// The bench options.
    pub(crate) fn options(&self, keep: bool) -> crate::bench::SyncOptions {
        crate::bench::SyncOptions {
            modes: self.sync.0.clone(),
            changes: self.changes,
            held: self.held,
            burst: self.burst,
            writers: self.writers,
            keep,
        }
    }
}

/// `gantry bench fanout` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct FanoutBenchArgs {
    #[command(flatten)]
    pub(crate) common: BenchCommon,
    /// Subscriber counts, comma-separated (each on a fresh admin).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    pub(crate) subscribers: Vec<usize>,
    /// Subscriber kinds, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "websocket,http"
    )]
    pub(crate) kinds: Vec<crate::bench::fanout::FanoutKind>,
    /// Changes timed per run.
    #[arg(long, default_value_t = 5)]
    pub(crate) changes: u32,
    /// A run keeps up when all subscribers hold a change within this (median over changes).
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub(crate) keep_up: Duration,
    /// Subscribers connecting at once.
    #[arg(long, default_value_t = 256)]
    pub(crate) connect_concurrency: usize,
    /// Deadline for everyone to connect, and for everyone to hold one change.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub(crate) timeout: Duration,
    /// `host`: simulated subscribers in this process on one admin; `swarm`: real gateways,
    /// the tasks of one Swarm service, per `--shapes` (the images must exist: `gantry
    /// images`).
    #[arg(long, value_enum, default_value = "host")]
    pub(crate) backend: FanoutBackend,
    /// With `--backend swarm`: admins × gateway tasks per run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1x20,3x10")]
    pub(crate) shapes: Vec<crate::bench::fanout::tasks::Shape>,
}

/// `gantry bench fanout --backend` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FanoutBackend {
    /// Simulated subscribers in this process.
    Host,
    /// Real gateways as Swarm tasks.
    Swarm,
}

impl FanoutBenchArgs {
    /// The bench options.
    pub(crate) fn options(&self, keep: bool) -> crate::bench::FanoutOptions {
        crate::bench::FanoutOptions {
            sizes: self.subscribers.clone(),
            kinds: self.kinds.clone(),
            changes: self.changes,
            keep_up_ms: u64::try_from(self.keep_up.as_millis()).unwrap_or(u64::MAX),
            connect_concurrency: self.connect_concurrency,
            timeout: self.timeout,
            keep,
        }
    }
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
    /// Docker Swarm services of the same images on overlay networks per case (on a
    /// one-node swarm made for the run when the engine is in none).
    Swarm,
    /// An admin and a gateway already running (`--admin-url`, `--gateway-url`): only the
    /// upstreams are started.
    External,
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
            BackendArg::Swarm => BackendKind::Swarm,
            BackendArg::External => BackendKind::External,
        };
        if opts.backend == BackendKind::External {
            opts.external = self.external.target();
            opts.build = false;
        }
        opts.build &= !self.no_build;
        opts.gateway_args.clone_from(&self.gateway_args);
        opts.admin_args.clone_from(&self.admin_args);
        opts.sync_style = self.sync_style;
        opts.filter.clone_from(&self.filter);
        opts.partition = self.partition;
        opts.verbose = self.verbose;
        opts.run_mode = self.run_mode;
        opts.allow_logs = self.allow_logs;
        opts.features = self.conformance.selection();
        if let Some(seed) = self.seed {
            opts.seed = seed;
        }
        opts
    }

    /// The paths, defaulting to the workspace's scenarios.
    pub(crate) fn paths(&self) -> Vec<PathBuf> {
        if self.paths.is_empty() {
            vec![crate::default_scenario_dir()]
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
        assert_eq!(d.options(&NoEnv).run_mode, None);
        let r = run_args(&["--run-mode", "repeat:3"]).unwrap();
        assert_eq!(
            r.options(&NoEnv).run_mode,
            Some(crate::RunMode::Repeat { runs: 3 })
        );
        let e = run_args(&["--run-mode", "soak"]).unwrap_err().to_string();
        assert!(e.contains("unknown run mode `soak`"), "{e}");
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
        assert!(u.behave.is_none());
        let upstream = |behave: &str| {
            Cli::try_parse_from(["gantry", "upstream", "--name", "b", "--behave", behave])
        };
        let cli = upstream(r#"[{"path":"/fail","status":503},{"fault":"reset"}]"#).unwrap();
        let Command::Upstream(u) = cli.command else {
            panic!("{cli:?}")
        };
        assert_eq!(u.behave.unwrap().0.len(), 2);
        let e = upstream(r#"[{"status":99}]"#).unwrap_err().to_string();
        assert!(
            e.contains("behave[0].status: 99 is not a final status"),
            "{e}"
        );
        assert!(upstream(r#"[{"stauts":503}]"#).is_err());
        let cli = Cli::try_parse_from(["gantry", "compose", "--sync", "websocket"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Compose(ComposeArgs {
                sync: SyncMode::Websocket
            })
        ));
    }

    #[test]
    fn conformance_flags_select_by_features() {
        let r = run_args(&[
            "--profile",
            "routing.core",
            "--supported-features",
            "routing.uriStartsWith,routing.headers",
            "--exempt-features",
            "routing.headers",
        ])
        .unwrap();
        let f = r.options(&NoEnv).features;
        assert_eq!(f.profile.unwrap().to_string(), "routing.core");
        assert_eq!(f.supported.unwrap().len(), 2);
        assert!(f.exempt.contains("routing.headers"));
        let e = run_args(&["--exempt-features", "routing.header"]).unwrap_err();
        assert!(
            e.to_string().contains("did you mean `routing.headers`"),
            "{e}"
        );
        let e = run_args(&["--profile", "2.7"]).unwrap_err().to_string();
        assert!(e.contains("`--shenyu-version 2.7`"), "{e}");
        let r = run_args(&["--backend", "external", "--shenyu-version", "2.7"]).unwrap();
        assert_eq!(r.external.shenyu_version, crate::client::Profile::V2_7);
    }

    #[test]
    fn the_report_names_gantry_or_the_flags_implementation() {
        let r = run_args(&[]).unwrap();
        let own = r.conformance.implementation(false).unwrap();
        assert_eq!(
            (own.organization.as_str(), own.project.as_str()),
            ("gantry", "gantry reference pair")
        );
        assert!(
            r.conformance
                .implementation(true)
                .unwrap_err()
                .contains("--implementation-project")
        );
        let r = run_args(&[
            "--implementation-project",
            "shenyu",
            "--implementation-version",
            "2.6.1",
            "--implementation-contact",
            "b@x",
            "--implementation-contact",
            "a@x",
        ])
        .unwrap();
        let theirs = r.conformance.implementation(true).unwrap();
        assert_eq!(
            (theirs.project.as_str(), theirs.version.as_str()),
            ("shenyu", "2.6.1")
        );
        assert_eq!(theirs.contact, ["a@x", "b@x"]);
    }

    #[test]
    fn unknown_mode_is_a_usage_error() {
        let e = run_args(&["--sync", "pigeon"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("unknown sync mode `pigeon`"), "{e}");
    }

    #[test]
    fn schema_and_validate_parse() {
        let cli = Cli::try_parse_from(["gantry", "schema"]).unwrap();
        assert!(matches!(cli.command, Command::Schema));
        let cli = Cli::try_parse_from(["gantry", "validate", "a.yaml", "cases"]).unwrap();
        let Command::Validate(v) = cli.command else {
            panic!("{cli:?}")
        };
        assert_eq!(v.paths(), [PathBuf::from("a.yaml"), PathBuf::from("cases")]);
        let cli = Cli::try_parse_from(["gantry", "validate"]).unwrap();
        let Command::Validate(v) = cli.command else {
            panic!("{cli:?}")
        };
        let default = v.paths();
        assert_eq!(default.len(), 1);
        assert!(default[0].ends_with("cases/scenarios"), "{default:?}");
    }

    #[test]
    fn bench_flags_become_options() {
        let parse = |args: &[&str]| {
            let cli = Cli::try_parse_from([&["gantry", "bench"], args].concat()).unwrap();
            let Command::Bench(b) = cli.command else {
                panic!("{cli:?}")
            };
            b.bench
        };
        let Bench::Proxy(p) = parse(&[
            "proxy",
            "--rates",
            "100,200",
            "--no-nginx",
            "--report-json",
            "r.json",
        ]) else {
            panic!()
        };
        let o = p.options(false);
        assert_eq!(
            (o.rates, o.nginx, o.connections),
            (vec![100, 200], false, 16)
        );
        assert_eq!(o.selectors, vec![1, 100, 10_000]);
        assert_eq!((o.duration, o.rounds), (Duration::from_secs(1), 5));
        assert!(o.upstream_nodelay);
        assert_eq!(p.common.report_json, Some(PathBuf::from("r.json")));
        let Bench::Proxy(p) = parse(&[
            "proxy",
            "--upstream-nodelay",
            "false",
            "--upstreams",
            "split",
        ]) else {
            panic!()
        };
        assert!(!p.options(false).upstream_nodelay);
        assert_eq!(
            p.options(false).kinds,
            vec![crate::bench::upstream::UpstreamKind::Split]
        );
        let Bench::Sync(s) = parse(&["sync", "--sync", "websocket,http", "--no-build"]) else {
            panic!()
        };
        assert_eq!(
            s.options(false).modes,
            vec![SyncMode::Websocket, SyncMode::Http]
        );
        assert_eq!(
            (s.options(false).changes, s.options(false).burst),
            (200, 1000)
        );
        assert!(!s.common.options(&NoEnv).build);
        let Bench::Sync(s) = parse(&["sync"]) else {
            panic!()
        };
        assert_eq!(s.options(false).modes, SyncMode::ALL.to_vec());
        let Bench::Fanout(f) = parse(&["fanout", "--subscribers", "10", "--keep-up", "250ms"])
        else {
            panic!()
        };
        let o = f.options(true);
        assert_eq!((o.sizes, o.keep_up_ms, o.keep), (vec![10], 250, true));
        assert_eq!(o.kinds.len(), 2);
    }
}
