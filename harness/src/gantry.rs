//! gantry as a library, for a test of your own: [`Gantry`] starts a topology (echo upstreams,
//! the store of the sync mode, an admin, a gateway) on the host or docker backend, hands out
//! the admin client and the gateway's address, makes routes, waits for the gateway to hold
//! the admin's config, and removes everything when dropped.
//!
//! ```no_run
//! use harness::{BackendKind, Gantry};
//! use model::SyncMode;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let gantry = Gantry::builder(SyncMode::Websocket)
//!     .backend(BackendKind::Host)
//!     .upstreams(["alpha", "beta"])
//!     .start()
//!     .await?;
//! let admin = gantry.admin().await?;
//! gantry.route(&admin, "hello", "/hello/", "alpha").await?;
//! gantry.converged().await?;
//! let answer = reqwest::get(format!("{}/hello/world", gantry.gateway_url())).await?;
//! assert_eq!(answer.headers()["x-gantry-upstream"], "alpha");
//! # Ok(())
//! # }
//! ```
//!
//! Scenario files run through [`crate::run_paths`] (each case starts its own topology). The
//! binaries come from `cargo build --workspace` (`cargo test` and `cargo run --example` build
//! them); the docker backend needs `gantry images`. A container of your own joins
//! [`Gantry::docker_networks`] to sit beside gantry's: with the [`testcontainers`] gantry
//! re-exports (the version its docker backend runs on), `.with_network(upstream_network)`,
//! and [`Gantry::route_to_address`] sends a path prefix to it.
//!
//! Errors: [`GantryBuilder::start`] and [`Topology::fault`] fail with a [`BackendError`], the
//! admin calls ([`Gantry::admin`], [`Gantry::route`], ...) with a [`ClientError`], and
//! [`Gantry::converged`] with a [`WaitTimeout`]; each is a `std::error::Error` whose `Display`
//! is the message for people, so `?` into `Box<dyn std::error::Error>` works in a test.
//! `docs/library.md` is the chapter: the `Cargo.toml` lines, where the binaries come from, a
//! `#[tokio::test]` skeleton (tokio's default test runtime is enough), a fault, a container of
//! your own.
//!
//! [`GantryBuilder::external`] runs against an admin and a gateway someone else runs (a real
//! ShenYu): only the upstreams start, the selectors made through [`Gantry::route`] and
//! [`Gantry::create_selector`] carry the run's name prefix, and dropping the [`Gantry`]
//! deletes them (README, "Testing your own ShenYu").

use std::time::Duration;

use model::SyncMode;

use crate::backend::{Backend, BackendKind, DockerBackend, ExternalTarget};
use crate::client::admin::{ADMIN_PASSWORD, ADMIN_USER};
use crate::client::{AdminClient, GatewayClient};
use crate::error::{BackendError, ClientError};
use crate::lower;
use crate::scenario::ast::{SelectorSpec, UpstreamDecl};
use crate::target::external;
use crate::target::route::prefix_route;
use crate::topology::Topology;
use crate::wait::{Converged, WaitPolicy, WaitTimeout, await_convergence};

/// How [`Gantry::converged`] waits: every 20 ms, until the digests agree, within 10 s.
const CONVERGE: WaitPolicy = WaitPolicy {
    consecutive: 1,
    interval: Duration::from_millis(20),
    timeout: Duration::from_secs(10),
};

/// A running topology for one sync mode; dropping it stops and removes everything.
#[derive(Debug)]
pub struct Gantry {
    // Dropped first: the external target's sweep, the services, then the backend they ran on.
    sweep: Option<Sweep>,
    topology: Topology,
    backend: Backend,
}

/// What [`Gantry::builder`] starts.
#[derive(Debug, Clone)]
pub struct GantryBuilder {
    mode: SyncMode,
    backend: BackendKind,
    upstreams: Vec<String>,
    keep: bool,
    external: Option<ExternalTarget>,
    gateway_args: Vec<String>,
}

impl GantryBuilder {
    /// The backend (default: host processes).
    pub fn backend(mut self, backend: BackendKind) -> Self {
        self.backend = backend;
        self
    }

    /// Runs against `target`'s admin and gateway instead of starting them (the external
    /// backend): the mode is the one the target syncs with.
    pub fn external(mut self, target: ExternalTarget) -> Self {
        self.backend = BackendKind::External;
        self.external = Some(target);
        self
    }

    /// The echo upstreams to start, by name (each answers with `x-gantry-upstream: <name>`).
    pub fn upstreams<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.upstreams = names.into_iter().map(Into::into).collect();
        self
    }

    /// Adds `args` to the gateway's command line (see [`Backend::with_gateway_args`]), e.g.
    /// `--emulate-bug drop-deletes` to see a test catch a known ShenYu bug. Not for the
    /// external backend, whose gateway gantry does not start.
    pub fn gateway_args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.gateway_args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Keeps the logs and files (and, on docker, the containers) after the drop, as
    /// `GANTRY_KEEP=1` does for scenario runs.
    pub fn keep(mut self, keep: bool) -> Self {
        self.keep = keep;
        self
    }

    /// Starts the upstreams, the store of the mode, the admin and the gateway, and returns
    /// once they answer. The binaries are the workspace's, next to the running executable
    /// (or in `GANTRY_BIN_DIR`); on docker, the `gantry/*:dev` images `gantry images` built
    /// (checked, never built here: they need static binaries).
    pub async fn start(self) -> Result<Gantry, BackendError> {
        let backend = match self.backend {
            // The images `gantry images` built (from static binaries), only checked here.
            BackendKind::Docker => Backend::Docker(DockerBackend::open(None)?),
            BackendKind::Swarm => Backend::Docker(DockerBackend::open_swarm(None)?),
            BackendKind::Host => {
                let dir = crate::backend::host::bin_dir_from_env()?;
                Backend::new(BackendKind::Host, dir)?
            }
            BackendKind::External => {
                let target = self.external.ok_or_else(|| BackendError::External {
                    what: "starting a Gantry".into(),
                    detail: "the external backend needs a target: GantryBuilder::external".into(),
                })?;
                Backend::External(external::connect(target).await?)
            }
        };
        let backend = backend.with_gateway_args(self.gateway_args);
        let upstreams: Vec<UpstreamDecl> = self
            .upstreams
            .iter()
            .map(|n| UpstreamDecl::echo(n))
            .collect();
        let topology = Topology::start(&backend, self.mode, &upstreams, &[], self.keep).await?;
        let sweep = topology
            .external()
            .map(|external| Sweep(external.target.clone()));
        Ok(Gantry {
            sweep,
            topology,
            backend,
        })
    }
}

impl Gantry {
    /// A topology for `mode` on the host backend with the upstream `alpha`, to adjust.
    pub fn builder(mode: SyncMode) -> GantryBuilder {
        GantryBuilder {
            mode,
            backend: BackendKind::Host,
            upstreams: vec!["alpha".to_owned()],
            keep: false,
            external: None,
            gateway_args: Vec::new(),
        }
    }

    /// The admin's base URL (`http://127.0.0.1:<port>`).
    pub fn admin_url(&self) -> &str {
        self.topology.admin().url()
    }

    /// The gateway's base URL, where traffic goes.
    pub fn gateway_url(&self) -> &str {
        self.topology.gateway().url()
    }

    /// An admin client logged in with the built-in user (an external target's user).
    pub async fn admin(&self) -> Result<AdminClient, ClientError> {
        match self.topology.external() {
            Some(e) => e.target.login().await,
            None => AdminClient::login(self.admin_url(), ADMIN_USER, ADMIN_PASSWORD).await,
        }
    }

    /// A client of the gateway (requests as case files send them, digest, health), reading
    /// its answers in gantry's terms (`crate::probe::ProbeResponse::in_gantry_terms`).
    pub fn gateway(&self) -> GatewayClient {
        GatewayClient::new(self.gateway_url())
            .errors_with_200(self.backend.capabilities().errors_with_200)
    }

    /// Where upstream `name` listens as the gateway reaches it (`host:port`, a divide
    /// `upstreamUrl`).
    pub fn upstream_address(&self, name: &str) -> Option<String> {
        self.topology.upstream_address(name)
    }

    /// The docker run's networks (upstream, sync), on the docker backend.
    pub fn docker_networks(&self) -> Option<(String, String)> {
        self.topology.docker_networks()
    }

    /// Stops and removes everything, as dropping does, but a docker topology's containers
    /// are removed all at once (dropping removes them one after another).
    pub async fn close(self) {
        let Gantry {
            sweep, topology, ..
        } = self;
        drop(sweep);
        topology.close().await;
    }

    /// The running topology: its services, and the faults a case file's steps inject
    /// ([`Topology::fault`], [`Topology::partition`]).
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The backend the topology runs on.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Creates a divide selector `name` whose requests start with `prefix`, with one rule
    /// over the same condition, to `upstream`, as a case file's setup would; returns the
    /// selector id. For anything else, build a [`SelectorSpec`] (the case files' `setup`
    /// vocabulary) and call [`Gantry::create_selector`].
    pub async fn route(
        &self,
        admin: &AdminClient,
        name: &str,
        prefix: &str,
        upstream: &str,
    ) -> Result<String, ClientError> {
        self.create_selector(admin, &prefix_route(name, prefix, upstream))
            .await
    }

    /// Like [`Gantry::route`], to an upstream gantry did not start: `address` is `host:port`
    /// as the gateway reaches it, such as a container of your own on the network
    /// [`Gantry::docker_networks`] names, under its container name.
    pub async fn route_to_address(
        &self,
        admin: &AdminClient,
        name: &str,
        prefix: &str,
        address: &str,
    ) -> Result<String, ClientError> {
        let spec = prefix_route(name, prefix, name);
        let addrs = lower::Addresses::from([(name.to_owned(), address.to_owned())]);
        self.create_with(admin, &spec, &addrs).await
    }

    /// Creates the selector `spec` and its rules through `admin`; returns the selector id.
    /// Its upstreams must be names given to [`GantryBuilder::upstreams`].
    pub async fn create_selector(
        &self,
        admin: &AdminClient,
        spec: &SelectorSpec,
    ) -> Result<String, ClientError> {
        let addrs: lower::Addresses = spec
            .upstreams
            .iter()
            .map(|u| {
                let addr = self
                    .upstream_address(&u.upstream)
                    .ok_or_else(|| ClientError::Body {
                        what: format!("selector `{}`", spec.name),
                        detail: format!("no upstream `{}` was started", u.upstream),
                        body: String::new(),
                    })?;
                Ok((u.upstream.clone(), addr))
            })
            .collect::<Result<_, ClientError>>()?;
        self.create_with(admin, spec, &addrs).await
    }

    /// Creates `spec` and its rules, its upstreams at `addrs`.
    async fn create_with(
        &self,
        admin: &AdminClient,
        spec: &SelectorSpec,
        addrs: &lower::Addresses,
    ) -> Result<String, ClientError> {
        let plugin_id = admin
            .plugin_id(&spec.plugin)
            .await?
            .ok_or_else(|| ClientError::Body {
                what: format!("selector `{}`", spec.name),
                detail: format!("the admin has no plugin `{}`", spec.plugin),
                body: String::new(),
            })?;
        let mut dto = lower::selector_dto(spec, &plugin_id, addrs);
        dto.name = Some(self.topology.selector_name(&spec.name));
        let id = admin.create_selector(&dto).await?;
        for rule in &spec.rules {
            admin.create_rule(&lower::rule_dto(rule, &id)).await?;
        }
        Ok(id)
    }

    /// Waits (within 10 s) until the gateway's config digest equals the admin's: every
    /// change made so far is live on the gateway. A target without the digest
    /// (`crate::backend::Capabilities::digest`) never converges here: wait on answers.
    pub async fn converged(&self) -> Result<Converged, WaitTimeout> {
        let gateway = self.gateway();
        let admin_url = self.admin_url().to_owned();
        let admin = self.admin().await;
        await_convergence(CONVERGE, || async {
            let admin = admin
                .as_ref()
                .map_err(|e| format!("logging in to {admin_url}: {e}"))?;
            let a = admin.digest().await.map_err(|e| e.to_string())?;
            let g = gateway.digest().await.map_err(|e| e.to_string())?;
            if a.digest == g.report.digest {
                Ok(())
            } else {
                Err(format!("admin {a:?}, gateway {:?}", g.report))
            }
        })
        .await
    }
}

/// On an external target, deletes the selectors the run made (its prefix's) when dropped,
/// from a thread of its own (a drop cannot await); a failure is logged.
#[derive(Debug)]
struct Sweep(ExternalTarget);

impl Drop for Sweep {
    fn drop(&mut self) {
        let target = self.0.clone();
        let swept = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async {
                let admin = target.login().await.map_err(|e| e.to_string())?;
                external::sweep(&admin, &target.prefix)
                    .await
                    .map_err(|e| e.to_string())
            })
        })
        .join();
        match swept {
            Ok(Ok(n)) => {
                tracing::info!(removed = n, "external target: the run's selectors removed")
            }
            Ok(Err(e)) => tracing::error!("external target: removing the run's selectors: {e}"),
            Err(_) => {
                tracing::error!("external target: the removal of the run's selectors panicked")
            }
        }
    }
}
