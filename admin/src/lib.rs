//! gantry's reference admin: a ShenYu-compatible REST API over SQLite, publishing every
//! committed change to gateways through sync publishers (websocket for now).
//!
//! [`serve`] runs the whole admin on a listener until a shutdown future completes; [`app`]
//! builds the router alone for in-process tests.

mod api;
mod auth;
mod error;
mod id;
mod service;
mod store;
mod sync;
mod validate;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::FromRef;
use axum::middleware;
use axum::routing::{delete, get, post};
use model::{DataEvent, SyncMode};
use tokio::sync::{broadcast, watch};

pub use store::StoreError;

use crate::auth::Auth;
use crate::error::ApiError;
use crate::service::Admin;
use crate::store::{SqliteStore, Store};
use crate::sync::Publisher;

/// ShenYu's well-known default password; using it is logged loudly.
pub const DEFAULT_PASSWORD: &str = "123456";

/// How the admin runs.
#[derive(Clone)]
pub struct Config {
    /// SQLite file path (created if missing) or `:memory:`.
    pub db: String,
    /// Sync publishers to run.
    pub sync: Vec<SyncMode>,
    /// The admin user's name.
    pub username: String,
    /// The admin user's password.
    pub password: String,
    /// How long a login token stays valid.
    pub token_ttl: Duration,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("db", &self.db)
            .field("sync", &self.sync)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("token_ttl", &self.token_ttl)
            .finish()
    }
}

impl Config {
    /// Defaults (websocket sync, `admin` / `123456`, one-day tokens) on the database `db`.
    pub fn new(db: impl Into<String>) -> Self {
        Self {
            db: db.into(),
            sync: vec![SyncMode::Websocket],
            username: "admin".to_owned(),
            password: DEFAULT_PASSWORD.to_owned(),
            token_ttl: Duration::from_millis(86_400_000),
        }
    }
}

/// Why the admin could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A `--sync` name is not a sync mode.
    #[error("--sync: {0}")]
    UnknownSync(model::UnknownName),
    /// A sync mode gantry-admin has no publisher for.
    #[error("--sync: sync mode `{0}` is not implemented by gantry-admin (available: websocket)")]
    UnsupportedSync(String),
    /// No sync mode given.
    #[error("--sync: at least one sync mode is required")]
    NoSync,
    /// The database could not be opened or migrated.
    #[error("cannot open the database")]
    Store(#[from] StoreError),
}

/// Parses a comma-separated `--sync` list (`websocket`).
pub fn parse_sync_modes(list: &str) -> Result<Vec<SyncMode>, StartError> {
    let modes = list
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| name.parse::<SyncMode>().map_err(StartError::UnknownSync))
        .collect::<Result<Vec<_>, _>>()?;
    if modes.is_empty() {
        return Err(StartError::NoSync);
    }
    for mode in &modes {
        sync::publisher(*mode)?;
    }
    Ok(modes)
}

/// Everything the handlers share.
#[derive(Clone, Debug)]
pub struct AppState {
    admin: Arc<Admin>,
    auth: Arc<Auth>,
    publishers: Arc<[Box<dyn Publisher>]>,
    closing: Arc<watch::Sender<bool>>,
}

impl FromRef<AppState> for Arc<Admin> {
    fn from_ref(state: &AppState) -> Self {
        Arc::clone(&state.admin)
    }
}

impl FromRef<AppState> for Arc<Auth> {
    fn from_ref(state: &AppState) -> Self {
        Arc::clone(&state.auth)
    }
}

impl AppState {
    /// Opens the database (migrating it and seeding the built-in plugins) and sets up the
    /// publishers.
    pub async fn new(config: &Config) -> Result<Self, StartError> {
        if config.sync.is_empty() {
            return Err(StartError::NoSync);
        }
        let publishers = config
            .sync
            .iter()
            .map(|mode| sync::publisher(*mode))
            .collect::<Result<Vec<_>, _>>()?;
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&config.db).await?);
        let admin = Admin::new(store).await?;
        if config.password == DEFAULT_PASSWORD {
            tracing::warn!(
                "!!! the admin user `{}` has the well-known default password; set --password \
                 or GANTRY_ADMIN_PASSWORD !!!",
                config.username
            );
        }
        let auth = Auth::new(
            config.username.clone(),
            config.password.clone(),
            config.token_ttl,
        );
        let (closing, _) = watch::channel(false);
        Ok(Self {
            admin: Arc::new(admin),
            auth: Arc::new(auth),
            publishers: publishers.into(),
            closing: Arc::new(closing),
        })
    }

    /// A subscription to every committed change, as the publishers see them.
    pub fn subscribe(&self) -> broadcast::Receiver<DataEvent> {
        self.admin.subscribe()
    }

    /// Tells long-lived sessions (websocket) to end.
    pub fn close_sessions(&self) {
        self.closing.send_replace(true);
    }
}

/// The admin's router: REST API (behind the token check), login, actuator and the sync
/// publishers' endpoints.
pub fn app(state: AppState) -> Router {
    let protected = Router::new()
        .route("/plugin", get(api::plugin::list))
        .route("/plugin/all", get(api::plugin::all))
        .route("/plugin/enabled", post(api::plugin::enabled))
        .route("/plugin/{id}", get(api::plugin::detail))
        .route(
            "/selector",
            get(api::selector::list).post(api::selector::create),
        )
        .route("/selector/batch", delete(api::selector::delete_batch))
        .route(
            "/selector/{id}",
            get(api::selector::detail).put(api::selector::update),
        )
        .route("/rule", get(api::rule::list).post(api::rule::create))
        .route("/rule/batch", delete(api::rule::delete_batch))
        .route("/rule/{id}", get(api::rule::detail).put(api::rule::update))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ));
    let mut router = Router::new()
        .merge(protected)
        .route("/platform/login", post(auth::login))
        .route("/actuator/health", get(api::actuator::health))
        .route("/actuator/digest", get(api::actuator::digest));
    for publisher in state.publishers.iter() {
        tracing::debug!(mode = %publisher.mode(), "sync publisher enabled");
        router = router.merge(publisher.routes());
    }
    router
        .fallback(|| async { ApiError::NotFound("no such endpoint".to_owned()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .with_state(state)
}

/// Runs the admin on `listener` until `shutdown` completes, then shuts down gracefully
/// (websocket sessions are closed).
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let state = AppState::new(&config).await?;
    let closing = state.clone();
    tracing::info!(addr = %listener.local_addr()?, db = %config.db, "gantry-admin serving");
    axum::serve(listener, app(state))
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down");
            closing.close_sessions();
        })
        .await?;
    Ok(())
}
