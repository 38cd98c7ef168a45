//! gantry's reference gateway: it subscribes to an admin's config sync, keeps the config as an
//! immutable compiled snapshot, and routes every request through ShenYu's divide semantics to
//! an upstream.
//!
//! Entry point: [`serve`] with a bound listener, a [`Config`] and a shutdown future (the
//! `gantry-gateway` binary is a thin wrapper around it).
//!
//! Module map:
//! - `sync/`: subscribers (`websocket.rs`) and `SyncState`, which applies events by building a
//!   new `snapshot::Snapshot` and swapping it in (`arc_swap`); requests never lock.
//! - `router/`: compiled conditions, judges, Spring's AntPath and PathPattern matchers, and
//!   selector → rule selection. Pure code.
//! - `plugin/`: the chain (`divide` only), `balance/` (weighted random), `proxy.rs` (pooled
//!   hyper client), `actuator.rs` (inspection endpoints).
//!
//! Endpoints: `/actuator/{health,digest,plugins,pluginData,selectorData,ruleData,metadata}`;
//! everything else goes through the plugin chain (see `docs/interfaces.md`).

mod actuator;
mod balance;
mod plugin;
mod proxy;
mod router;
mod snapshot;
mod sync;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, bail};
use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use model::SyncMode;

use crate::plugin::Chain;
use crate::proxy::Proxy;
use crate::router::RequestView;
use crate::sync::websocket::WebsocketSubscriber;
use crate::sync::{Subscriber, SyncState};

/// What the gateway needs besides its listener.
#[derive(Debug, Clone)]
pub struct Config {
    /// How config arrives; only [`SyncMode::Websocket`] is implemented.
    pub sync: SyncMode,
    /// Admin base URLs (`http://host:port`); the first is used, the next ones after failures.
    pub admin_urls: Vec<String>,
}

impl Config {
    /// Whether the gateway can run with this config (a supported sync mode, an admin URL);
    /// the binary calls it before binding so a bad flag fails fast.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.sync != SyncMode::Websocket {
            bail!(
                "sync mode `{}` is not supported by gantry-gateway yet (supported: websocket)",
                self.sync
            );
        }
        if self.admin_urls.iter().all(|u| u.trim().is_empty()) {
            bail!("at least one admin URL is needed");
        }
        Ok(())
    }
}

/// Shared request-handling state.
#[derive(Debug)]
struct App {
    sync: Arc<SyncState>,
    chain: Chain,
    proxy: Proxy,
}

/// Runs the gateway on `listener` until `shutdown` completes, then drains connections and
/// stops the sync subscriber.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    config.check()?;
    let sync = Arc::new(SyncState::new(config.sync));
    let subscriber = tokio::spawn(WebsocketSubscriber::new(&config.admin_urls).run(sync.clone()));
    let app = Arc::new(App {
        sync,
        chain: Chain::standard(),
        proxy: Proxy::new(),
    });
    let router = Router::new()
        .route("/actuator/health", get(actuator::health))
        .route("/actuator/digest", get(actuator::digest))
        .route("/actuator/plugins", get(actuator::plugins))
        .route("/actuator/pluginData", get(actuator::plugin_data))
        .route("/actuator/selectorData", get(actuator::selector_data))
        .route("/actuator/ruleData", get(actuator::rule_data))
        .route("/actuator/metadata", get(actuator::metadata))
        .fallback(route)
        .with_state(app);
    let result = axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
    .context("gateway server failed");
    subscriber.abort();
    result
}

/// Every non-actuator request: the plugin chain, then the proxy.
async fn route(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request<Body>,
) -> Response {
    let decision = {
        let snapshot = app.sync.snapshot();
        let uri = req.uri();
        let view = RequestView {
            method: req.method(),
            path: if uri.path().is_empty() {
                "/"
            } else {
                uri.path()
            },
            query: uri.query(),
            authority: uri.authority().map(|a| a.as_str()),
            headers: req.headers(),
            peer: peer.ip(),
        };
        app.chain.run(&snapshot, &view)
    };
    match decision {
        Ok(forward) => app.proxy.forward(req, forward, peer.ip()).await,
        Err(rejection) => rejection.into_response(),
    }
}
