//! `gantry-admin`: the admin binary. Parses flags, starts tracing, binds, prints the
//! `listening on` line and runs [`admin::serve`] until SIGINT, SIGTERM or (optionally) stdin EOF.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context;
use clap::Parser;

/// mimalloc instead of glibc malloc: allocation showed in the profiles of both hot paths
/// (requests, sync fan-out), and mimalloc's per-thread free lists avoid glibc's arena work.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// gantry's reference admin: ShenYu-compatible REST API, SQLite storage, sync publishers.
#[derive(Debug, Parser)]
#[command(name = "gantry-admin", version)]
struct Cli {
    /// Address to bind.
    #[arg(long, env = "GANTRY_ADMIN_BIND", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// Port to listen on (0 picks a free port).
    #[arg(long, env = "GANTRY_ADMIN_PORT", default_value_t = 9095)]
    port: u16,
    /// PostgreSQL URL (`postgres://user:pw@host/db`), SQLite database file (created if
    /// missing) or `:memory:`.
    #[arg(long, env = "GANTRY_ADMIN_DB", default_value = "gantry-admin.db")]
    db: String,
    /// Comma-separated sync publishers (`websocket`, `http`, `zookeeper`, `etcd`), all fed by
    /// one dispatcher.
    #[arg(long, env = "GANTRY_ADMIN_SYNC", default_value = "websocket")]
    sync: String,
    /// ZooKeeper connect string (`host:port[,host:port]`), for `--sync zookeeper`.
    #[arg(long, env = "GANTRY_ADMIN_ZOOKEEPER_URL")]
    zookeeper_url: Option<String>,
    /// etcd endpoints (`http://host:port[,...]`), for `--sync etcd`.
    #[arg(long, env = "GANTRY_ADMIN_ETCD_URL")]
    etcd_url: Option<String>,
    /// Admin user name (a dashboard user in the database, created if missing).
    #[arg(long, env = "GANTRY_ADMIN_USERNAME", default_value = "admin")]
    username: String,
    /// Admin password (clear, or an Argon2 PHC hash), stored as a hash at start, replacing
    /// the stored one. Unset: the stored password is kept; a new user gets ShenYu's default
    /// `123456` (logged loudly).
    #[arg(long, env = "GANTRY_ADMIN_PASSWORD", hide_env_values = true)]
    password: Option<String>,
    /// A credential for sync clients only, `name:password` (password clear or an Argon2 PHC
    /// hash): HTTP long-polling gateways log in with it; its tokens open only the sync
    /// endpoints, and its failed logins are counted apart from the dashboard users'. Kept in
    /// memory only; the name must not be a dashboard user's.
    #[arg(long, env = "GANTRY_ADMIN_SYNC_USER", hide_env_values = true)]
    sync_user: Option<admin::SyncUser>,
    /// Login token lifetime in milliseconds.
    #[arg(long, env = "GANTRY_ADMIN_TOKEN_TTL_MS", default_value_t = 86_400_000)]
    token_ttl_ms: u64,
    /// When set, `/websocket` upgrades need header `X-Shenyu-Sync-Token` equal to it (unset:
    /// open, as ShenYu 2.6).
    #[arg(long, env = "GANTRY_ADMIN_SYNC_TOKEN", hide_env_values = true)]
    sync_token: Option<String>,
    /// How long `POST /configs/listener` holds a request when nothing changed (http sync).
    #[arg(long, env = "GANTRY_ADMIN_LONG_POLL_HOLD_MS", default_value_t = 60_000)]
    long_poll_hold_ms: u64,
    /// How often the http sync cache is rebuilt from the database regardless of events.
    #[arg(
        long,
        env = "GANTRY_ADMIN_LONG_POLL_REFRESH_MS",
        default_value_t = 300_000
    )]
    long_poll_refresh_ms: u64,
    /// The least time between two full syncs (`MYSELF` answers) on one websocket session; a
    /// `MYSELF` arriving sooner is answered when the interval ends (0: no limit).
    #[arg(
        long,
        env = "GANTRY_ADMIN_FULL_SYNC_INTERVAL_MS",
        default_value_t = 1000
    )]
    full_sync_interval_ms: u64,
    /// Full syncs per second over all websocket sessions, in bursts of up to as many; one
    /// beyond is answered when the rate allows (0: no limit).
    #[arg(
        long,
        env = "GANTRY_ADMIN_FULL_SYNC_RATE",
        default_value_t = admin::FULL_SYNC_RATE
    )]
    full_sync_rate: u32,
    /// Websocket sync sessions open at once; an upgrade beyond is refused with 503.
    #[arg(
        long,
        env = "GANTRY_ADMIN_MAX_WEBSOCKET_SESSIONS",
        value_parser = clap::value_parser!(u64).range(1..),
        default_value_t = admin::MAX_WEBSOCKET_SESSIONS as u64
    )]
    max_websocket_sessions: u64,
    /// How often a SQLite database is checked for commits of other admins sharing it, in
    /// milliseconds (PostgreSQL notifies instead); their changes are then published like this
    /// admin's own. 0 turns noticing them off, leaving a comparison every minute (a switch
    /// for tests that prove the notification is needed).
    #[arg(long, env = "GANTRY_ADMIN_PEER_WATCH_MS", default_value_t = 100)]
    peer_watch_ms: u64,
    /// Failed logins allowed per user name and client address before that pair is locked
    /// out, and per user name or per client address before attempts are delayed (0: no
    /// throttling).
    #[arg(long, env = "GANTRY_ADMIN_LOGIN_MAX_FAILURES", default_value_t = 5)]
    login_max_failures: u32,
    /// The first login lockout in milliseconds; each further failure doubles it.
    #[arg(long, env = "GANTRY_ADMIN_LOGIN_LOCKOUT_MS", default_value_t = 1000)]
    login_lockout_ms: u64,
    /// The longest login lockout in milliseconds; failures older than this are forgotten.
    #[arg(
        long,
        env = "GANTRY_ADMIN_LOGIN_LOCKOUT_MAX_MS",
        default_value_t = 300_000
    )]
    login_lockout_max_ms: u64,
    /// The longest delay of a login attempt, in milliseconds, for failed logins of its user
    /// name from other addresses or of its address for other names (never a refusal).
    #[arg(long, env = "GANTRY_ADMIN_LOGIN_MAX_DELAY_MS", default_value_t = 1000)]
    login_max_delay_ms: u64,
    /// Tests only (hidden; no environment variable): serve `POST /test-only/sync-fault`, which
    /// arms protocol faults on the sync channel (dropped, duplicated, reordered increments...).
    #[arg(long, hide = true)]
    test_only_sync_faults: bool,
    /// Tests only (no environment variable): behave like a known admin bug (e.g.
    /// `no-peer-watch`, ShenYu #3900), so that a named regression can show its case fails on it.
    #[arg(long, value_enum)]
    emulate_bug: Option<admin::EmulatedBug>,
    /// `GET /gantry/sync-status`: a gateway the admin sent its current config to is STALE
    /// when it has not confirmed it within this many milliseconds (SENT until then).
    #[arg(
        long,
        env = "GANTRY_ADMIN_SYNC_STALE_AFTER_MS",
        default_value_t = admin::SYNC_STALE_AFTER.as_millis() as u64
    )]
    sync_stale_after_ms: u64,
    /// Shut down gracefully when stdin reaches EOF (for supervised children).
    #[arg(long, env = "GANTRY_ADMIN_EXIT_ON_STDIN_EOF")]
    exit_on_stdin_eof: bool,
    /// Close a client connection whose request head is not complete this many milliseconds
    /// after the accept (or after the first byte of a next request).
    #[arg(
        long,
        env = "GANTRY_ADMIN_HEADER_READ_TIMEOUT_MS",
        value_parser = clap::value_parser!(u64).range(1..),
        default_value_t = netserve::Timeouts::DEFAULT_HEADER_READ.as_millis() as u64
    )]
    header_read_timeout_ms: u64,
    /// Close a kept-alive client connection that sends no next request for this many
    /// milliseconds.
    #[arg(
        long,
        env = "GANTRY_ADMIN_IDLE_TIMEOUT_MS",
        value_parser = clap::value_parser!(u64).range(1..),
        default_value_t = netserve::Timeouts::DEFAULT_IDLE.as_millis() as u64
    )]
    idle_timeout_ms: u64,
    /// Answer 408 to a request whose body has not all arrived this many milliseconds after
    /// its head.
    #[arg(
        long,
        env = "GANTRY_ADMIN_BODY_READ_TIMEOUT_MS",
        value_parser = clap::value_parser!(u64).range(1..),
        default_value_t = admin::BODY_READ_TIMEOUT.as_millis() as u64
    )]
    body_read_timeout_ms: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let config = admin::Config {
        db: cli.db,
        sync: admin::parse_sync_modes(&cli.sync)?,
        username: cli.username,
        password: cli.password,
        sync_user: cli.sync_user,
        token_ttl: Duration::from_millis(cli.token_ttl_ms),
        zookeeper_url: cli.zookeeper_url,
        etcd_url: cli.etcd_url,
        sync_token: cli.sync_token,
        long_poll_hold: Duration::from_millis(cli.long_poll_hold_ms),
        long_poll_refresh: Duration::from_millis(cli.long_poll_refresh_ms.max(1)),
        timeouts: netserve::Timeouts {
            header_read: Duration::from_millis(cli.header_read_timeout_ms),
            idle: Duration::from_millis(cli.idle_timeout_ms),
        },
        body_read_timeout: Duration::from_millis(cli.body_read_timeout_ms),
        full_sync_interval: Duration::from_millis(cli.full_sync_interval_ms),
        full_sync_rate: cli.full_sync_rate,
        max_websocket_sessions: usize::try_from(cli.max_websocket_sessions).unwrap_or(usize::MAX),
        peer_watch: (cli.peer_watch_ms > 0).then(|| Duration::from_millis(cli.peer_watch_ms)),
        login_throttle: admin::LoginThrottle {
            max_failures: cli.login_max_failures,
            lockout: Duration::from_millis(cli.login_lockout_ms),
            max_lockout: Duration::from_millis(cli.login_lockout_max_ms),
            max_delay: Duration::from_millis(cli.login_max_delay_ms),
        },
        test_sync_faults: cli.test_only_sync_faults,
        password_work: admin::PasswordWork::Standard,
        sync_stale_after: Duration::from_millis(cli.sync_stale_after_ms),
        emulate_bug: cli.emulate_bug,
    };
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(cli.bind, cli.port))
        .await
        .with_context(|| format!("cannot bind {}:{}", cli.bind, cli.port))?;
    let addr = listener.local_addr()?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on http://{addr}")?;
    stdout.flush()?;
    drop(stdout);
    admin::serve(
        listener,
        config,
        netserve::shutdown_signal(cli.exit_on_stdin_eof),
    )
    .await
}
