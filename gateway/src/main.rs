//! `gantry-gateway`: the reference gateway binary. Parses flags, starts tracing on stderr,
//! binds, prints `listening on http://ip:port` and runs [`gateway::serve_workers`] (one
//! single-threaded runtime per worker thread; the sync subscriber on the main thread's) until
//! SIGINT, SIGTERM or (with `--exit-on-stdin-eof`) the end of stdin.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroUsize;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use model::{SyncMode, SyncStyle};

/// mimalloc instead of glibc malloc: allocation showed in the profiles of both hot paths
/// (requests, sync fan-out), and mimalloc's per-thread free lists avoid glibc's arena work.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// gantry's reference gateway (ShenYu-compatible divide routing).
#[derive(Debug, Parser)]
#[command(name = "gantry-gateway", version)]
struct Args {
    /// Address to bind.
    #[arg(long, env = "GANTRY_GATEWAY_BIND", default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Port to bind (0 picks a free one).
    #[arg(long, env = "GANTRY_GATEWAY_PORT", default_value_t = 9195)]
    port: u16,
    /// Sync mode: websocket, http (long polling), zookeeper or etcd.
    #[arg(long, env = "GANTRY_GATEWAY_SYNC", default_value = "websocket")]
    sync: SyncMode,
    /// How a change is taken: `incremental` (applied as it arrives, ShenYu's way) or `full`
    /// (a signal to read the whole config again: websocket sends `MYSELF`, long polling
    /// fetches every group, ZooKeeper and etcd read the tree), the conformance matrix's
    /// incremental-off axis.
    #[arg(long, env = "GANTRY_GATEWAY_SYNC_STYLE", default_value = "incremental")]
    sync_style: SyncStyle,
    /// Admin base URLs, comma-separated.
    #[arg(
        long,
        env = "GANTRY_GATEWAY_ADMIN_URL",
        default_value = "http://127.0.0.1:9095",
        value_delimiter = ','
    )]
    admin_url: Vec<String>,
    /// Admin user name (HTTP long polling logs in with it): best a sync-only user (the
    /// admin's `--sync-user`), whose failed logins are counted apart from the dashboard's.
    #[arg(long, env = "GANTRY_GATEWAY_USERNAME", default_value = "admin")]
    username: String,
    /// Admin password (HTTP long polling).
    #[arg(long, env = "GANTRY_GATEWAY_PASSWORD", default_value = "123456")]
    password: String,
    /// Sent as header `X-Shenyu-Sync-Token` on the websocket upgrade, for an admin started
    /// with `--sync-token` (unset or empty: none is sent).
    #[arg(long, env = "GANTRY_GATEWAY_SYNC_TOKEN", hide_env_values = true)]
    sync_token: Option<String>,
    /// ZooKeeper connect string (`host:port[,host:port]`), for `--sync zookeeper`.
    #[arg(long, env = "GANTRY_GATEWAY_ZOOKEEPER_URL")]
    zookeeper_url: Option<String>,
    /// etcd endpoints (`http://host:port[,...]`), for `--sync etcd`.
    #[arg(long, env = "GANTRY_GATEWAY_ETCD_URL")]
    etcd_url: Option<String>,
    /// Behave like a known ShenYu gateway bug or a small balancer/limiter bug, to prove a test
    /// catches it (never in production): `drop-deletes` ignores deletes and merges full syncs
    /// (#6611, #6731); `clear-before-refill` empties a group for 250 ms before a full sync
    /// refills it (#7034); the others are listed in docs/interfaces.md.
    #[arg(long, env = "GANTRY_GATEWAY_EMULATE_BUG", value_enum)]
    emulate_bug: Option<gateway::EmulatedBug>,
    /// Answer like a ShenYu gateway: no `/actuator/digest`, no `x-gantry-*` response headers,
    /// error bodies with HTTP 200 (to test gantry's fallbacks for external targets).
    #[arg(long, env = "GANTRY_GATEWAY_HIDE_EXTRAS")]
    hide_extras: bool,
    /// The proxy address (`host:port`) the gateway's sync confirmations advertise to the
    /// admin's `GET /gantry/sync-status` (default: the address it listens on). None is sent
    /// with `--hide-extras`.
    #[arg(long, env = "GANTRY_GATEWAY_ADVERTISE")]
    advertise: Option<String>,
    /// Shut down gracefully when stdin reaches EOF or fails.
    #[arg(long, env = "GANTRY_GATEWAY_EXIT_ON_STDIN_EOF")]
    exit_on_stdin_eof: bool,
    /// Close a client connection whose request head is not complete this many milliseconds
    /// after the accept (or after the first byte of a next request).
    #[arg(
        long,
        env = "GANTRY_GATEWAY_HEADER_READ_TIMEOUT_MS",
        value_parser = clap::value_parser!(u64).range(1..),
        default_value_t = netserve::Timeouts::DEFAULT_HEADER_READ.as_millis() as u64
    )]
    header_read_timeout_ms: u64,
    /// Close a kept-alive client connection that sends no next request for this many
    /// milliseconds.
    #[arg(
        long,
        env = "GANTRY_GATEWAY_IDLE_TIMEOUT_MS",
        value_parser = clap::value_parser!(u64).range(1..),
        default_value_t = netserve::Timeouts::DEFAULT_IDLE.as_millis() as u64
    )]
    idle_timeout_ms: u64,
    /// Give up on a sync connection that carries nothing for this many milliseconds, report
    /// the subscriber disconnected and reconnect (websocket: pings every third of it;
    /// ZooKeeper: the session timeout; etcd: keep-alive; long polling: added to the hold).
    #[arg(
        long,
        env = "GANTRY_GATEWAY_SYNC_SILENCE_MS",
        value_parser = clap::value_parser!(u64).range(1..),
        default_value_t = gateway::SyncTimeouts::DEFAULT_SILENCE.as_millis() as u64
    )]
    sync_silence_ms: u64,
    /// The admin's long-poll hold in milliseconds (HTTP sync): a listener answer slower than
    /// this plus `--sync-silence-ms` is a silent admin.
    #[arg(
        long,
        env = "GANTRY_GATEWAY_LONG_POLL_HOLD_MS",
        default_value_t = gateway::SyncTimeouts::DEFAULT_LONG_POLL_HOLD.as_millis() as u64
    )]
    long_poll_hold_ms: u64,
    /// Peers (CIDR blocks or addresses, comma-separated) whose `X-Forwarded-For` & co. the
    /// rate limiter's `REMOTE_ADDRESS_KEY_RESOLVER` believes: the proxies in front of the
    /// gateway. Empty (the default): every client is keyed on its socket address.
    #[arg(long, env = "GANTRY_GATEWAY_TRUSTED_PROXIES", default_value = "")]
    trusted_proxies: gateway::TrustedProxies,
    /// Worker threads serving requests, each with a runtime of its own (default: the CPUs
    /// this process may run on).
    #[arg(long, env = "GANTRY_GATEWAY_WORKERS")]
    workers: Option<NonZeroUsize>,
}

// The main thread's runtime runs the sync subscriber only; requests are served by the
// workers' own runtimes.
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();

    let config = gateway::Config {
        sync: args.sync,
        sync_style: args.sync_style,
        admin_urls: args
            .admin_url
            .into_iter()
            .filter(|u| !u.trim().is_empty())
            .collect(),
        username: args.username,
        password: args.password,
        sync_token: args.sync_token.filter(|t| !t.is_empty()),
        zookeeper_url: args.zookeeper_url,
        etcd_url: args.etcd_url,
        emulate_bug: args.emulate_bug,
        hide_extras: args.hide_extras,
        timeouts: netserve::Timeouts {
            header_read: Duration::from_millis(args.header_read_timeout_ms),
            idle: Duration::from_millis(args.idle_timeout_ms),
        },
        sync_timeouts: gateway::SyncTimeouts {
            silence: Duration::from_millis(args.sync_silence_ms),
            long_poll_hold: Duration::from_millis(args.long_poll_hold_ms),
        },
        trusted_proxies: args.trusted_proxies,
        on_apply: None,
    };
    config.check()?;
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .await
        .with_context(|| format!("cannot bind {}:{}", args.bind, args.port))?;
    let addr = listener.local_addr()?;
    if !args.hide_extras {
        gateway::confirm_sync(args.advertise.clone().unwrap_or_else(|| addr.to_string()));
    }
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{addr}")?;
        stdout.flush()?;
    }
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN));
    gateway::serve_workers(
        listener.into_std()?,
        workers,
        config,
        netserve::shutdown_signal(args.exit_on_stdin_eof),
    )
    .await
}
