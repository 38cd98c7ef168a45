//! gantry's reference admin: a ShenYu-compatible REST API over SQLite or PostgreSQL,
//! publishing every committed change to gateways through sync publishers (websocket, HTTP long
//! polling, ZooKeeper, etcd).
//!
//! [`serve`] runs the whole admin on a listener until a shutdown future completes; [`app`]
//! builds the router alone for in-process tests.

mod api;
mod audit;
mod auth;
mod dto;
mod emulate;
mod error;
mod id;
mod login_throttle;
mod openapi;
mod service;
mod store;
mod sync;
mod validate;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::FromRef;
use model::{DataEvent, SyncMode};
use tokio::sync::{broadcast, watch};

pub use auth::{PasswordError, PasswordWork, SyncUser};
pub use emulate::EmulatedBug;
pub use login_throttle::LoginThrottle;
pub use store::StoreError;

use crate::auth::Auth;
use crate::service::Admin;
pub use crate::service::SharedEvent;
use crate::sync::Publisher;

/// ShenYu's well-known default password; using it is logged loudly.
pub const DEFAULT_PASSWORD: &str = "123456";

/// The default [`Config::body_read_timeout`]: the admin's requests are small JSON bodies
/// (at most 2 MiB), which even a slow link sends well within it.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The default [`Config::full_sync_rate`]: a fleet of gateways resyncing at once after a
/// restart is served within a second or two, while sessions looping `MYSELF` cannot load
/// the database more than ten full reads a second.
pub const FULL_SYNC_RATE: u32 = 10;

/// The default [`Config::max_websocket_sessions`]: far more gateways than one admin serves,
/// far fewer sockets than its file descriptor limit.
pub const MAX_WEBSOCKET_SESSIONS: usize = 256;

/// The default [`Config::sync_stale_after`].
pub const SYNC_STALE_AFTER: Duration = sync::status::DEFAULT_STALE_AFTER;

/// How the admin runs.
#[derive(Clone)]
pub struct Config {
    /// A PostgreSQL URL (`postgres://...`), a SQLite file path (created if missing) or
    /// `:memory:`.
    pub db: String,
    /// Sync publishers to run.
    pub sync: Vec<SyncMode>,
    /// The admin user's name (a dashboard user, created at start if missing).
    pub username: String,
    /// The admin user's password, clear or as an Argon2 PHC hash. When set, it is stored (as
    /// an Argon2id hash) at start, replacing the stored one. When unset, the stored one is
    /// kept; a user that does not exist yet gets ShenYu's default [`DEFAULT_PASSWORD`].
    pub password: Option<String>,
    /// A credential for sync clients only (HTTP long polling's login), apart from the
    /// dashboard users: its tokens open only the sync endpoints.
    pub sync_user: Option<SyncUser>,
    /// How long a login token stays valid.
    pub token_ttl: Duration,
    /// ZooKeeper connect string (`host:port[,host:port]`), for `--sync zookeeper`.
    pub zookeeper_url: Option<String>,
    /// etcd endpoints (`http://host:port[,...]`), for `--sync etcd`.
    pub etcd_url: Option<String>,
    /// When set, a `/websocket` upgrade needs header `X-Shenyu-Sync-Token` equal to it.
    pub sync_token: Option<String>,
    /// How long `POST /configs/listener` holds a request when nothing changed (http sync).
    pub long_poll_hold: Duration,
    /// How often the http sync cache is rebuilt from the database regardless of events.
    pub long_poll_refresh: Duration,
    /// Client connection limits: request head read time, keep-alive idle time.
    pub timeouts: netserve::Timeouts,
    /// How long a request body may take to arrive after its head; then 408.
    pub body_read_timeout: Duration,
    /// The least time between two full syncs (`MYSELF` answers) on one websocket session.
    pub full_sync_interval: Duration,
    /// Full syncs per second over all websocket sessions, in bursts of up to as many (0: no
    /// limit).
    pub full_sync_rate: u32,
    /// Websocket sessions open at once; an upgrade beyond gets 503.
    pub max_websocket_sessions: usize,
    /// How often a SQLite database is read for commits of other admins sharing it (a
    /// PostgreSQL one notifies at once); `None` turns noticing them off, leaving only a
    /// comparison every minute. Their changes are published like this admin's own.
    pub peer_watch: Option<Duration>,
    /// How failed logins are throttled.
    pub login_throttle: LoginThrottle,
    /// Tests only: serve `POST /test-only/sync-fault`, which arms protocol faults on the
    /// sync channel (`sync::fault`). Off by default.
    pub test_sync_faults: bool,
    /// How much work password hashes take and where they are computed:
    /// [`PasswordWork::Standard`] unless `gantry sim` runs the admin.
    pub password_work: PasswordWork,
    /// `GET /gantry/sync-status`: how long after the admin sent its current config to a
    /// gateway that has not confirmed it the gateway is STALE ([`SYNC_STALE_AFTER`]).
    pub sync_stale_after: Duration,
    /// A known admin bug to behave like (none normally; tests only): lets a named regression
    /// prove that its case fails when the bug is back.
    pub emulate_bug: Option<EmulatedBug>,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("db", &self.db)
            .field("sync", &self.sync)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("sync_user", &self.sync_user)
            .field("token_ttl", &self.token_ttl)
            .field("zookeeper_url", &self.zookeeper_url)
            .field("etcd_url", &self.etcd_url)
            .field(
                "sync_token",
                &self.sync_token.as_ref().map(|_| "<redacted>"),
            )
            .field("long_poll_hold", &self.long_poll_hold)
            .field("long_poll_refresh", &self.long_poll_refresh)
            .field("timeouts", &self.timeouts)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("full_sync_interval", &self.full_sync_interval)
            .field("full_sync_rate", &self.full_sync_rate)
            .field("max_websocket_sessions", &self.max_websocket_sessions)
            .field("peer_watch", &self.peer_watch)
            .field("login_throttle", &self.login_throttle)
            .field("test_sync_faults", &self.test_sync_faults)
            .field("password_work", &self.password_work)
            .field("sync_stale_after", &self.sync_stale_after)
            .field("emulate_bug", &self.emulate_bug)
            .finish()
    }
}

impl Config {
    /// Whether the admin emulates `bug`.
    pub fn emulates(&self, bug: EmulatedBug) -> bool {
        self.emulate_bug == Some(bug)
    }

    /// Defaults (websocket sync, user `admin` keeping its stored password, or `123456` when
    /// new, one-day tokens, 60 s long-poll hold, 5 min long-poll refresh, one full sync per
    /// second per websocket session, other admins' commits noticed within 100 ms,
    /// [`LoginThrottle::default`], the default
    /// [`netserve::Timeouts`]) on the database `db`; [`BODY_READ_TIMEOUT`],
    /// [`FULL_SYNC_RATE`] and [`MAX_WEBSOCKET_SESSIONS`].
    pub fn new(db: impl Into<String>) -> Self {
        Self {
            db: db.into(),
            sync: vec![SyncMode::Websocket],
            username: "admin".to_owned(),
            password: None,
            sync_user: None,
            token_ttl: Duration::from_millis(86_400_000),
            zookeeper_url: None,
            etcd_url: None,
            sync_token: None,
            long_poll_hold: Duration::from_millis(60_000),
            long_poll_refresh: Duration::from_millis(300_000),
            timeouts: netserve::Timeouts::default(),
            body_read_timeout: BODY_READ_TIMEOUT,
            full_sync_interval: Duration::from_millis(1000),
            full_sync_rate: FULL_SYNC_RATE,
            max_websocket_sessions: MAX_WEBSOCKET_SESSIONS,
            peer_watch: Some(Duration::from_millis(100)),
            login_throttle: LoginThrottle::default(),
            test_sync_faults: false,
            password_work: PasswordWork::Standard,
            sync_stale_after: SYNC_STALE_AFTER,
            emulate_bug: None,
        }
    }
}

/// Why the admin could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A `--sync` name is not a sync mode.
    #[error("--sync: {0}")]
    UnknownSync(model::UnknownName),
    /// No sync mode given.
    #[error("--sync: at least one sync mode is required")]
    NoSync,
    /// A sync mode that writes to an external store was given without its address.
    #[error("--sync {mode} needs {flag}")]
    MissingSyncUrl {
        /// The sync mode.
        mode: SyncMode,
        /// The flag that names the store.
        flag: &'static str,
    },
    /// The admin password is unusable.
    #[error(transparent)]
    Password(#[from] auth::PasswordError),
    /// The sync user is unusable.
    #[error("--sync-user: {0}")]
    SyncUser(String),
    /// The database could not be opened or migrated.
    #[error("cannot open the database")]
    Store(#[from] StoreError),
}

/// Parses a comma-separated `--sync` list (`websocket`, `http`).
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
    Ok(modes)
}

/// What is unsafe in `config`, one warning each, logged at start.
fn config_warnings(config: &Config) -> Vec<&'static str> {
    let mut warnings = Vec::new();
    let open_websocket = config.sync.contains(&SyncMode::Websocket)
        && config.sync_token.as_deref().is_none_or(str::is_empty);
    if open_websocket {
        warnings.push(
            "!!! /websocket is open to anyone: every full sync hands out the app-auth \
             appSecrets in clear; set --sync-token or GANTRY_ADMIN_SYNC_TOKEN !!!",
        );
    }
    warnings
}

/// Everything the handlers share.
#[derive(Clone, Debug)]
pub struct AppState {
    admin: Arc<Admin>,
    auth: Arc<Auth>,
    publishers: Arc<[Box<dyn Publisher>]>,
    /// The test-only protocol fault hook, when on.
    sync_faults: Option<Arc<sync::fault::SyncFaults>>,
    /// The gateways synced, for `GET /gantry/sync-status`.
    sync_status: Arc<sync::status::SyncStatus>,
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

/// An opened admin database: what outlives an admin process. [`AppState::new`] opens one from
/// [`Config::db`]; `gantry sim` keeps one [`Database::memory`] across an admin's crashes and
/// restarts.
#[derive(Debug, Clone)]
pub struct Database(Arc<store::Store>);

impl Database {
    /// Opens (and migrates) the database `db` names (see [`Config::db`]).
    pub async fn open(db: &str) -> Result<Database, StartError> {
        Ok(Database(store::open(db).await?))
    }

    /// An empty database kept in this process's memory, for deterministic simulation: no
    /// file, no SQL engine, no thread of its own. SQLite and PostgreSQL stay the real ones.
    pub fn memory() -> Database {
        Database(Arc::new(store::Store::memory()))
    }
}

/// The dashboard users' and the sync user's login, set up over a [`Database`]: provisioning
/// hashes passwords (Argon2, on tokio's blocking pool), so `gantry sim` sets it up once, out
/// of simulated time, and hands the same one to every incarnation of its admin.
#[derive(Debug, Clone)]
pub struct Login(Arc<Auth>);

impl Login {
    /// Provisions [`Config::username`] with [`Config::password`] and the sync user in `db`.
    pub async fn start(db: &Database, config: &Config) -> Result<Login, StartError> {
        let auth = Auth::start(
            Arc::clone(&db.0),
            &config.username,
            config.password.as_deref(),
            config.sync_user.as_ref(),
            config.token_ttl,
            config.login_throttle,
            config.password_work,
        )
        .await?;
        Ok(Login(Arc::new(auth)))
    }
}

impl AppState {
    /// Opens the database (migrating it and seeding the built-in plugins), sets up the login
    /// and the publishers.
    pub async fn new(config: &Config) -> Result<Self, StartError> {
        Self::check(config)?;
        let db = Database::open(&config.db).await?;
        audit::warn_stored_handles(&db.0).await?;
        let login = Login::start(&db, config).await?;
        Self::assemble(config, &db, login).await
    }

    /// The admin over an opened `db` with its `login`: seeds the built-in plugins that are
    /// absent and starts the publishers. Nothing in it blocks a thread or hashes a password.
    pub async fn assemble(
        config: &Config,
        db: &Database,
        login: Login,
    ) -> Result<Self, StartError> {
        Self::check(config)?;
        let admin = Admin::new(Arc::clone(&db.0)).await?;
        let admin = Arc::new(if config.emulates(EmulatedBug::PublishBeforeCommit) {
            admin.publishing_before_commit()
        } else {
            admin
        });
        // Off: no feed, so only the periodic comparison remains.
        let peer_watch = config.peer_watch;
        let peer_watch = peer_watch.filter(|_| {
            !config.emulates(EmulatedBug::NoPeerWatch)
                && !config.emulates(EmulatedBug::PublishBeforeCommit)
        });
        service::spawn_watch(&admin, peer_watch);
        let sync_faults = config.test_sync_faults.then(|| {
            tracing::warn!(
                "test-only sync fault hook on (--test-only-sync-faults): never in production"
            );
            Arc::new(sync::fault::SyncFaults::default())
        });
        let sync_status =
            sync::status::SyncStatus::start(config.sync_stale_after, admin.subscribe());
        let mut publishers: Vec<Box<dyn Publisher>> = Vec::new();
        for mode in &config.sync {
            if !publishers.iter().any(|p| p.mode() == *mode) {
                publishers.push(sync::publisher(
                    *mode,
                    &admin,
                    config,
                    sync_faults.as_ref(),
                    &sync_status,
                )?);
            }
        }
        let (closing, _) = watch::channel(false);
        Ok(Self {
            admin,
            auth: login.0,
            publishers: publishers.into(),
            sync_faults,
            sync_status,
            closing: Arc::new(closing),
        })
    }

    /// Fails unless `config` names at least one sync mode the admin can publish (warning of
    /// what is unsafe in it).
    fn check(config: &Config) -> Result<(), StartError> {
        if config.sync.is_empty() {
            return Err(StartError::NoSync);
        }
        for warning in config_warnings(config) {
            tracing::warn!("{warning}");
        }
        for mode in &config.sync {
            sync::check_supported(*mode, config)?;
        }
        Ok(())
    }

    /// Everything committed, as the events of one full sync (what a websocket `MYSELF`
    /// is answered with): one per group, in sync order.
    pub async fn full_sync(&self) -> Result<Vec<DataEvent>, StoreError> {
        let snapshot = self.admin.snapshot().await?;
        Ok(DataEvent::full_sync(
            model::DataEventType::Myself,
            snapshot.config,
            snapshot.app_auth,
        )
        .into())
    }

    /// A subscription to every committed change, as the publishers see them.
    pub fn subscribe(&self) -> broadcast::Receiver<SharedEvent> {
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
    api::routes(state)
}

/// Runs the admin on `listener` until `shutdown` completes, then shuts down gracefully
/// (websocket sessions are closed). Client connections are served by [`netserve::serve`]
/// with `config.timeouts`, request bodies limited by `config.body_read_timeout`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let state = AppState::new(&config).await?;
    serve_on(listener, state, &config, shutdown).await
}

/// [`serve`] of an assembled `state` on any listener (`gantry sim` passes the simulator's).
pub async fn serve_on<L: netserve::Listener>(
    listener: L,
    state: AppState,
    config: &Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let closing = state.clone();
    tracing::info!(addr = %listener.local_addr()?, db = %config.db, "gantry-admin serving");
    let shutdown = async move {
        shutdown.await;
        tracing::info!("shutting down");
        closing.close_sessions();
    };
    let router = netserve::body_read_deadline(app(state), config.body_read_timeout, body_timed_out);
    netserve::serve(listener, router, config.timeouts, shutdown).await;
    Ok(())
}

/// The answer to a request whose body did not arrive within `body_read_timeout`: 408 in the
/// admin's envelope (ShenYu defines no code for it: the HTTP status).
fn body_timed_out() -> axum::response::Response {
    use axum::response::IntoResponse;
    let status = axum::http::StatusCode::REQUEST_TIMEOUT;
    let message = "request body not received in time";
    let envelope = model::AdminResult::<()>::error(i32::from(status.as_u16()), message.to_owned());
    (status, axum::Json(envelope)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_websocket_is_warned_about() {
        let websocket = Config::new(":memory:");
        let warnings = config_warnings(&websocket);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("--sync-token"), "{warnings:?}");
        let empty_token = Config {
            sync_token: Some(String::new()),
            ..Config::new(":memory:")
        };
        assert_eq!(
            config_warnings(&empty_token),
            warnings,
            "an empty token is none"
        );
        let with_token = Config {
            sync_token: Some("s3cret".to_owned()),
            ..Config::new(":memory:")
        };
        assert!(config_warnings(&with_token).is_empty());
        let no_websocket = Config {
            sync: vec![SyncMode::Http],
            ..Config::new(":memory:")
        };
        assert!(
            config_warnings(&no_websocket).is_empty(),
            "long polling needs a login token"
        );
    }
}
