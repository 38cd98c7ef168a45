//! `gantry bench fanout`: how many subscribers one admin keeps up with.
//!
//! Per subscriber kind and count (default 1,000 and 10,000), a fresh admin (`--sync websocket`
//! or `--sync http`, SQLite) and that many lightweight simulated subscribers in this process,
//! each on its own TCP connection:
//!
//! - `websocket`: connect to `/websocket` with the run's `X-Shenyu-Sync-Token`, send `MYSELF`,
//!   read the five full-sync frames, then read increment frames.
//! - `http`: as the gateway's long-poll subscriber does (docs/interfaces.md): one login (the
//!   token is shared), `GET /configs/fetch` of the five groups, then `POST /configs/listener`
//!   with the form body `GROUP=md5%2ClastModifyTime&…`; a non-empty answer → fetch those groups
//!   → listen again.
//!
//! Subscribers connect (and fully sync) at most [`FanoutOptions::connect_concurrency`] at a
//! time. Then `changes` selectors are created, one at a time; a subscriber holds change `k` when
//! a frame (websocket) or a fetched group (http) carries the selector `fanout-change-<k>`. Per
//! change: the time from the admin's 2xx until each subscriber holds it (p50, p99, all), and
//! the admin's CPU time (from `/proc/<pid>/stat`) spent on it; per run the admin's RSS and peak
//! RSS (`/proc/<pid>/status`) and this process's CPU time (the simulated subscribers share the
//! machine with the admin). A run keeps up when every subscriber connected, none was lost,
//! and the median time until all hold a change is within `keep_up_ms`.
//!
//! 10,000 sockets need that many file descriptors here and in the admin: the bench raises its
//! own `RLIMIT_NOFILE` (soft, and hard when it must and may) before starting the admin, which
//! inherits it; the report says what it found and did.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use model::SyncMode;
use serde::Serialize;
use tokio::sync::{Semaphore, mpsc};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::procstat;
use super::{Header, RawAdmin, median, ms, table};
use crate::backend::Backend;

/// The selector name of change `k` is this plus `k`.
pub const MARKER: &str = "fanout-change-";
/// Descriptors kept free beside the sockets.
const FD_MARGIN: u64 = 1024;
/// The groups a long-poll subscriber follows (the gateway's).
const GROUPS: [&str; 5] = ["PLUGIN", "SELECTOR", "RULE", "META_DATA", "APP_AUTH"];
/// What a long-poll subscriber sends for a group it holds nothing of.
const NO_MD5: &str = "00000000000000000000000000000000";

/// A subscriber kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FanoutKind {
    /// Websocket sessions.
    Websocket,
    /// HTTP long polling.
    Http,
}

impl FanoutKind {
    fn mode(self) -> SyncMode {
        match self {
            FanoutKind::Websocket => SyncMode::Websocket,
            FanoutKind::Http => SyncMode::Http,
        }
    }

    fn name(self) -> &'static str {
        match self {
            FanoutKind::Websocket => "websocket",
            FanoutKind::Http => "http",
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FanoutOptions {
    /// Subscriber counts, each on a fresh admin.
    pub sizes: Vec<usize>,
    /// Subscriber kinds.
    pub kinds: Vec<FanoutKind>,
    /// Changes timed per run.
    pub changes: u32,
    /// A run keeps up when the median time until all hold a change is at most this, ms.
    pub keep_up_ms: u64,
    /// Subscribers connecting at once.
    pub connect_concurrency: usize,
    /// How long to wait for everyone to connect, and for everyone to hold one change.
    pub timeout: Duration,
    /// Keep the temp dirs.
    pub keep: bool,
}

impl Default for FanoutOptions {
    fn default() -> Self {
        Self {
            sizes: vec![1000, 10_000],
            kinds: vec![FanoutKind::Websocket, FanoutKind::Http],
            changes: 5,
            keep_up_ms: 1000,
            connect_concurrency: 256,
            timeout: Duration::from_secs(60),
            keep: false,
        }
    }
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct FanoutReport {
    /// Version, profile, machine.
    #[serde(flatten)]
    pub header: Header,
    /// What ran.
    pub settings: Settings,
    /// The descriptor limit.
    pub fd_limit: FdLimit,
    /// Per kind and count.
    pub runs: Vec<RunResult>,
    /// Per kind: where one admin stops keeping up.
    pub verdict: Vec<String>,
}

/// The settings as reported.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// Subscriber counts.
    pub sizes: Vec<usize>,
    /// Changes per run.
    pub changes: u32,
    /// The keep-up bound, ms.
    pub keep_up_ms: u64,
    /// Concurrent connects.
    pub connect_concurrency: usize,
}

/// `RLIMIT_NOFILE` before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FdLimit {
    /// Descriptors wanted (largest count + margin).
    pub needed: u64,
    /// (soft, hard) found; `null` is unlimited.
    pub before: (Option<u64>, Option<u64>),
    /// (soft, hard) after.
    pub after: (Option<u64>, Option<u64>),
    /// What was done.
    pub action: String,
}

/// One kind × count.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// Subscriber kind.
    pub kind: FanoutKind,
    /// Subscribers run.
    pub subscribers: usize,
    /// Subscribers asked for (more than run when the fd limit could not be raised enough).
    pub requested: usize,
    /// Subscribers connected and fully synced.
    pub connected: usize,
    /// Time until all connected and synced, ms.
    pub connect_ms: f64,
    /// The admin's CPU time while they connected, ms.
    pub connect_admin_cpu_ms: u64,
    /// Per change.
    pub changes: Vec<ChangeResult>,
    /// Median over the changes of the time until all held it, ms (`null` when one never
    /// reached everyone).
    pub all_hold_ms: Option<f64>,
    /// Admin CPU time per change (all changes' CPU time over their count), ms.
    pub admin_cpu_ms_per_change: f64,
    /// Admin CPU per change per subscriber, µs.
    pub admin_cpu_us_per_subscriber: f64,
    /// The admin's RSS at the end, KiB.
    pub admin_rss_kib: u64,
    /// The admin's peak RSS, KiB.
    pub admin_rss_peak_kib: u64,
    /// This process's CPU time over the run (the subscribers), ms.
    pub bench_cpu_ms: u64,
    /// Subscribers whose connection failed (connecting, or later).
    pub lost: usize,
    /// Whether one admin kept up.
    pub keeps_up: bool,
    /// Why not.
    pub why: Option<String>,
}

/// One change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangeResult {
    /// Change number.
    pub change: u32,
    /// Subscribers that held it within the timeout.
    pub holders: usize,
    /// Admin 2xx → a subscriber holds it: median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Until the last subscriber held it, ms (`null` if some never did).
    pub all_ms: Option<f64>,
    /// The admin's CPU time from the request until all held it, ms.
    pub admin_cpu_ms: u64,
}

/// What a subscriber tells the bench.
#[derive(Debug)]
enum Note {
    /// Connected and fully synced.
    Synced,
    /// Holds change `k`.
    Holds(u32, Instant),
    /// Its connection failed or closed.
    Lost(String),
}

/// The change numbers named in `text` (`fanout-change-<k>` followed by a non-digit).
pub fn markers(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(MARKER) {
        rest = &rest[i + MARKER.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(k) = digits.parse() {
            out.push(k);
        }
    }
    out
}

/// The listener form body for what a long-poll subscriber holds.
pub fn listener_form(held: &HashMap<String, (String, i64)>) -> String {
    GROUPS
        .iter()
        .map(|g| match held.get(*g) {
            Some((md5, t)) => format!("{g}={md5}%2C{t}"),
            None => format!("{g}={NO_MD5}%2C0"),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Raises `RLIMIT_NOFILE` to `needed` if it is lower: the hard limit first when it is lower
/// too (which needs `CAP_SYS_RESOURCE`; a container's root often lacks it), then the soft
/// limit, as far as the hard limit allows.
pub fn raise_fd_limit(needed: u64) -> FdLimit {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let before = getrlimit(Resource::Nofile);
    let pair = |r: &Rlimit| (r.current, r.maximum);
    let enough = |v: Option<u64>| v.is_none_or(|v| v >= needed);
    let mut action = Vec::new();
    if enough(before.current) {
        action.push("none: the soft limit was enough".to_owned());
    } else {
        let mut hard = before.maximum;
        if !enough(hard) {
            let raised = Rlimit {
                current: Some(needed),
                maximum: Some(needed),
            };
            match setrlimit(Resource::Nofile, raised) {
                Ok(()) => {
                    action.push(format!(
                        "raised the soft and hard limits to {needed} (setrlimit)"
                    ));
                    hard = Some(needed);
                }
                Err(e) => action.push(format!(
                    "the hard limit {} is below {needed} and raising it failed ({e}; \
                     run `ulimit -Hn {needed}` as root with CAP_SYS_RESOURCE first)",
                    hard.unwrap_or(0)
                )),
            }
        }
        let soft = hard.map_or(needed, |h| h.min(needed));
        if getrlimit(Resource::Nofile)
            .current
            .is_some_and(|c| c < soft)
        {
            let raised = Rlimit {
                current: Some(soft),
                maximum: hard,
            };
            action.push(match setrlimit(Resource::Nofile, raised) {
                Ok(()) => format!("raised the soft limit to {soft} (setrlimit)"),
                Err(e) => format!("raising the soft limit to {soft} failed: {e}"),
            });
        }
    }
    FdLimit {
        needed,
        before: pair(&before),
        after: pair(&getrlimit(Resource::Nofile)),
        action: action.join("; "),
    }
}

/// Runs the bench; `progress` gets a line per step.
pub async fn run(
    backend: &Backend,
    opts: &FanoutOptions,
    progress: &(dyn Fn(String) + Sync),
) -> anyhow::Result<FanoutReport> {
    let started = Instant::now();
    let largest = opts.sizes.iter().copied().max().unwrap_or(0) as u64;
    let fd_limit = raise_fd_limit(largest + FD_MARGIN);
    progress(format!(
        "fd limit: needed {}, found {:?}, now {:?}: {}",
        fd_limit.needed, fd_limit.before, fd_limit.after, fd_limit.action
    ));
    let usable = fd_limit.after.0.map_or(usize::MAX, |s| {
        usize::try_from(s.saturating_sub(FD_MARGIN)).unwrap_or(usize::MAX)
    });
    let mut runs = Vec::new();
    for &kind in &opts.kinds {
        for &requested in &opts.sizes {
            let size = if requested > usable {
                progress(format!(
                    "{}: {requested} subscribers do not fit the fd limit; running {usable}",
                    kind.name()
                ));
                usable
            } else {
                requested
            };
            progress(format!("{}: {size} subscribers", kind.name()));
            let mut r = one_run(backend, kind, size, opts, progress).await?;
            r.requested = requested;
            progress(format!(
                "{}: {size} subscribers: connected {} in {:.0} ms; all hold a change in {} ms \
                 (median); admin {} ms CPU per change, RSS {} MiB (peak {} MiB){}",
                kind.name(),
                r.connected,
                r.connect_ms,
                r.all_hold_ms.map_or_else(|| "n/a".to_owned(), ms),
                r.admin_cpu_ms_per_change,
                r.admin_rss_kib / 1024,
                r.admin_rss_peak_kib / 1024,
                r.why
                    .as_ref()
                    .map_or_else(String::new, |w| format!("; does not keep up: {w}"))
            ));
            runs.push(r);
        }
    }
    let verdict = opts
        .kinds
        .iter()
        .map(|&k| verdict(k, &runs, opts.keep_up_ms))
        .collect();
    Ok(FanoutReport {
        header: Header::new("fanout", started.elapsed()),
        settings: Settings {
            sizes: opts.sizes.clone(),
            changes: opts.changes,
            keep_up_ms: opts.keep_up_ms,
            connect_concurrency: opts.connect_concurrency,
        },
        fd_limit,
        runs,
        verdict,
    })
}

/// Where one admin stops keeping up with `kind`, with an extrapolation from its CPU cost.
pub fn verdict(kind: FanoutKind, runs: &[RunResult], keep_up_ms: u64) -> String {
    let mine: Vec<&RunResult> = runs.iter().filter(|r| r.kind == kind).collect();
    let kept = mine
        .iter()
        .filter(|r| r.keeps_up)
        .map(|r| r.subscribers)
        .max();
    let failed = mine
        .iter()
        .filter(|r| !r.keeps_up)
        .min_by_key(|r| r.subscribers);
    let cost = mine
        .iter()
        .rev()
        .find(|r| r.admin_cpu_us_per_subscriber > 0.0)
        .map(|r| r.admin_cpu_us_per_subscriber);
    let mut v = match (kept, failed) {
        (Some(k), None) => format!(
            "{}: one admin keeps up with {k} subscribers (every change held by all within {keep_up_ms} ms)",
            kind.name()
        ),
        (kept, Some(f)) => format!(
            "{}: one admin stops keeping up at {} subscribers ({}){}",
            kind.name(),
            f.subscribers,
            f.why.as_deref().unwrap_or("too slow"),
            kept.map_or_else(String::new, |k| format!("; it kept up with {k}"))
        ),
        (None, None) => format!("{}: not run", kind.name()),
    };
    for r in mine.iter().filter(|r| r.requested > r.subscribers) {
        v += &format!(
            "; {} subscribers did not fit the fd limit, {} ran",
            r.requested, r.subscribers
        );
    }
    if let Some(us) = cost {
        let at = (keep_up_ms as f64 * 1000.0 / us).round();
        v += &format!(
            "; at {us:.1} µs of admin CPU per subscriber and change, one core spends \
             {keep_up_ms} ms on a change at about {at:.0} subscribers"
        );
    }
    v
}

async fn one_run(
    backend: &Backend,
    kind: FanoutKind,
    size: usize,
    opts: &FanoutOptions,
    progress: &(dyn Fn(String) + Sync),
) -> anyhow::Result<RunResult> {
    let mut dir = tempfile::Builder::new().prefix("gantry-bench-").tempdir()?;
    dir.disable_cleanup(opts.keep);
    let run = backend.begin(kind.mode(), opts.keep).await?;
    let before: Vec<u32> = procstat::children_named("gantry-admin");
    let admin = run.start_admin(kind.mode(), None, dir.path()).await?;
    let pid = procstat::children_named("gantry-admin")
        .into_iter()
        .find(|p| !before.contains(p))
        .ok_or_else(|| anyhow::anyhow!("cannot find the admin's pid under /proc"))?;
    let read = || procstat::sample(pid).unwrap_or_default();
    let me0 = procstat::sample_self().unwrap_or_default();
    let raw = RawAdmin::login(admin.url()).await?;
    let addr: SocketAddr = admin.url().trim_start_matches("http://").parse()?;
    let plugin =
        crate::client::AdminClient::login(admin.url(), super::ADMIN_USER, super::ADMIN_PASSWORD)
            .await?
            .plugin_id("divide")
            .await?
            .ok_or_else(|| anyhow::anyhow!("the admin has no divide plugin"))?;

    // Connect everyone.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(opts.connect_concurrency.max(1)));
    let token: Arc<str> = Arc::from(raw.token());
    let sync_token: Arc<str> = Arc::from(
        run.sync_token()
            .expect("the fanout bench runs on the host backend")
            .as_str(),
    );
    let cpu0 = read();
    let t = Instant::now();
    let tasks = AbortOnDrop(
        (0..size)
            .map(|_| {
                let (tx, gate, token) = (tx.clone(), Arc::clone(&gate), Arc::clone(&token));
                let sync_token = Arc::clone(&sync_token);
                tokio::spawn(async move {
                    match kind {
                        FanoutKind::Websocket => {
                            websocket_subscriber(addr, &sync_token, gate, tx).await
                        }
                        FanoutKind::Http => long_poll_subscriber(addr, token, gate, tx).await,
                    }
                })
            })
            .collect(),
    );
    drop(tx);
    let mut connected = 0;
    let mut lost = 0;
    let mut first_loss = None;
    let deadline = tokio::time::Instant::now() + opts.timeout;
    while connected + lost < size {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(Note::Synced)) => connected += 1,
            Ok(Some(Note::Lost(why))) => {
                lost += 1;
                first_loss.get_or_insert(why);
            }
            Ok(Some(Note::Holds(..))) => {}
            Ok(None) | Err(_) => break,
        }
    }
    let connect_ms = t.elapsed().as_secs_f64() * 1000.0;
    let connect_admin_cpu_ms = read().cpu_ms.saturating_sub(cpu0.cpu_ms);
    progress(format!(
        "  {connected}/{size} synced in {connect_ms:.0} ms ({lost} failed{})",
        first_loss
            .as_ref()
            .map_or_else(String::new, |w| format!(", first: {w}"))
    ));
    let mut alive = connected;

    // The changes.
    let mut changes = Vec::new();
    for k in 1..=opts.changes {
        let (s, _) = super::divide_selector(
            &format!("{MARKER}{k}"),
            &format!("/fanout/{k}/"),
            "127.0.0.1:9",
            &plugin,
        );
        let cpu = read();
        raw.create_selector(&s).await?;
        let committed = Instant::now();
        let mut got: Vec<f64> = Vec::with_capacity(alive);
        let deadline = tokio::time::Instant::now() + opts.timeout;
        while got.len() < alive {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(Note::Holds(n, at))) if n == k => {
                    got.push(at.saturating_duration_since(committed).as_secs_f64() * 1000.0);
                }
                Ok(Some(Note::Lost(why))) => {
                    alive -= 1;
                    lost += 1;
                    first_loss.get_or_insert(why);
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        let admin_cpu_ms = read().cpu_ms.saturating_sub(cpu.cpu_ms);
        got.sort_by(f64::total_cmp);
        let q = |p: f64| {
            got.get(((got.len() as f64 * p).ceil() as usize).saturating_sub(1))
                .copied()
                .unwrap_or(0.0)
        };
        let c = ChangeResult {
            change: k,
            holders: got.len(),
            p50_ms: q(0.5),
            p99_ms: q(0.99),
            all_ms: (got.len() == connected && connected > 0)
                .then(|| got.last().copied().unwrap_or(0.0)),
            admin_cpu_ms,
        };
        progress(format!(
            "  change {k}: {}/{connected} hold it; p50 {} p99 {} all {} ms; admin CPU {admin_cpu_ms} ms",
            c.holders,
            ms(c.p50_ms),
            ms(c.p99_ms),
            c.all_ms.map_or_else(|| "n/a".to_owned(), ms)
        ));
        let reached_all = c.all_ms.is_some();
        changes.push(c);
        if !reached_all {
            progress(format!(
                "  change {k} did not reach everyone: no further changes"
            ));
            break;
        }
        // Let long-poll subscribers listen again before the next change.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let end = read();
    let me1 = procstat::sample_self().unwrap_or_default();
    drop(tasks);
    drop(admin);
    let all: Vec<f64> = changes.iter().filter_map(|c| c.all_ms).collect();
    let all_hold_ms = (all.len() == changes.len() && !all.is_empty())
        .then(|| median(&all))
        .flatten();
    // Summed over the changes, then divided: /proc counts in clock ticks (10 ms), too coarse
    // for one change.
    let per_change = if changes.is_empty() {
        0.0
    } else {
        changes.iter().map(|c| c.admin_cpu_ms as f64).sum::<f64>() / changes.len() as f64
    };
    let why = if connected < size {
        Some(format!(
            "only {connected} of {size} subscribers connected within {:?}{}",
            opts.timeout,
            first_loss
                .as_ref()
                .map_or_else(String::new, |w| format!(" (first failure: {w})"))
        ))
    } else if lost > 0 {
        Some(format!(
            "{lost} subscribers lost their connection{}",
            first_loss
                .as_ref()
                .map_or_else(String::new, |w| format!(" (first: {w})"))
        ))
    } else {
        match all_hold_ms {
            None => Some(format!(
                "a change did not reach every subscriber within {:?}",
                opts.timeout
            )),
            Some(ms) if ms > opts.keep_up_ms as f64 => Some(format!(
                "all subscribers hold a change only after {ms:.0} ms (median), over {} ms",
                opts.keep_up_ms
            )),
            Some(_) => None,
        }
    };
    Ok(RunResult {
        kind,
        subscribers: size,
        requested: size,
        connected,
        connect_ms,
        connect_admin_cpu_ms,
        changes,
        all_hold_ms,
        admin_cpu_ms_per_change: per_change,
        admin_cpu_us_per_subscriber: if connected > 0 {
            per_change * 1000.0 / connected as f64
        } else {
            0.0
        },
        admin_rss_kib: end.rss_kib,
        admin_rss_peak_kib: end.rss_peak_kib,
        bench_cpu_ms: me1.cpu_ms.saturating_sub(me0.cpu_ms),
        lost,
        keeps_up: why.is_none(),
        why,
    })
}

/// Subscriber tasks, aborted when dropped (also when the run fails half-way).
struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// A websocket subscriber: connects (holding a `gate` permit until synced), sends `MYSELF`,
/// reads the five full-sync frames, then reports every change it sees.
async fn websocket_subscriber(
    addr: SocketAddr,
    sync_token: &str,
    gate: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Note>,
) {
    let permit = gate.acquire_owned().await;
    let request = format!("ws://{addr}/websocket")
        .into_client_request()
        .map_err(|e| e.to_string())
        .and_then(|mut request| {
            let token = sync_token.parse().map_err(|e| format!("sync token: {e}"))?;
            request.headers_mut().insert("X-Shenyu-Sync-Token", token);
            Ok(request)
        });
    let request = match request {
        Ok(request) => request,
        Err(e) => {
            let _ = tx.send(Note::Lost(format!("request: {e}")));
            return;
        }
    };
    let mut ws = match tokio_tungstenite::connect_async(request).await {
        Ok((ws, _)) => ws,
        Err(e) => {
            let _ = tx.send(Note::Lost(format!("connect: {e}")));
            return;
        }
    };
    if let Err(e) = ws.send(Message::text("MYSELF")).await {
        let _ = tx.send(Note::Lost(format!("send MYSELF: {e}")));
        return;
    }
    let mut permit = Some(permit);
    let mut groups = 0;
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => {
                if groups < GROUPS.len() {
                    groups += 1;
                    if groups == GROUPS.len() {
                        drop(permit.take());
                        let _ = tx.send(Note::Synced);
                    }
                    continue;
                }
                let at = Instant::now();
                for k in markers(text.as_str()) {
                    let _ = tx.send(Note::Holds(k, at));
                }
            }
            Some(Ok(Message::Close(frame))) => {
                let _ = tx.send(Note::Lost(format!("closed by the admin: {frame:?}")));
                return;
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                let _ = tx.send(Note::Lost(e.to_string()));
                return;
            }
            None => {
                let _ = tx.send(Note::Lost("connection ended".into()));
                return;
            }
        }
    }
}

/// One HTTP/1.1 keep-alive connection to the admin.
struct Http {
    addr: SocketAddr,
    token: Arc<str>,
    sender: SendRequest<Full<Bytes>>,
}

impl Http {
    async fn connect(addr: SocketAddr, token: Arc<str>) -> Result<Self, String> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Self {
            addr,
            token,
            sender,
        })
    }

    /// Sends a request; the body of a 200 answer.
    async fn call(
        &mut self,
        method: hyper::Method,
        path: &str,
        form: Option<String>,
    ) -> Result<Bytes, String> {
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, self.addr.to_string())
            .header("X-Access-Token", &*self.token);
        if form.is_some() {
            req = req.header(
                hyper::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            );
        }
        let req = req
            .body(Full::new(Bytes::from(form.unwrap_or_default())))
            .map_err(|e| e.to_string())?;
        let resp = tokio::time::timeout(Duration::from_secs(90), self.sender.send_request(req))
            .await
            .map_err(|_| format!("{path}: no answer in 90 s"))?
            .map_err(|e| format!("{path}: {e}"))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{path}: {e}"))?
            .to_bytes();
        if status != 200 {
            return Err(format!(
                "{path}: HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            ));
        }
        Ok(body)
    }

    /// Fetches `groups`; updates `held` and returns the raw answer.
    async fn fetch(
        &mut self,
        groups: &[String],
        held: &mut HashMap<String, (String, i64)>,
    ) -> Result<Bytes, String> {
        let query: Vec<String> = groups.iter().map(|g| format!("groupKeys={g}")).collect();
        let body = self
            .call(
                hyper::Method::GET,
                &format!("/configs/fetch?{}", query.join("&")),
                None,
            )
            .await?;
        let v: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| format!("fetch answer: {e}"))?;
        for g in groups {
            let group = &v["data"][g.as_str()];
            let md5 = group["md5"].as_str().unwrap_or_default().to_owned();
            let t = group["lastModifyTime"].as_i64().unwrap_or(0);
            held.insert(g.clone(), (md5, t));
        }
        Ok(body)
    }
}

/// A long-poll subscriber: fetch everything (holding a `gate` permit until then), then listen,
/// fetch what changed, report the changes it now holds, listen again.
async fn long_poll_subscriber(
    addr: SocketAddr,
    token: Arc<str>,
    gate: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Note>,
) {
    let permit = gate.acquire_owned().await;
    let mut held = HashMap::new();
    let mut http = match Http::connect(addr, token).await {
        Ok(h) => h,
        Err(e) => {
            let _ = tx.send(Note::Lost(e));
            return;
        }
    };
    let all: Vec<String> = GROUPS.iter().map(|g| (*g).to_owned()).collect();
    if let Err(e) = http.fetch(&all, &mut held).await {
        let _ = tx.send(Note::Lost(e));
        return;
    }
    drop(permit);
    let _ = tx.send(Note::Synced);
    let mut seen = 0;
    loop {
        let answer = match http
            .call(
                hyper::Method::POST,
                "/configs/listener",
                Some(listener_form(&held)),
            )
            .await
        {
            Ok(a) => a,
            Err(e) => {
                let _ = tx.send(Note::Lost(e));
                return;
            }
        };
        let changed: Vec<String> = serde_json::from_slice::<serde_json::Value>(&answer)
            .ok()
            .and_then(|v| v["data"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|g| g.as_str().map(str::to_owned))
            .collect();
        if changed.is_empty() {
            continue;
        }
        match http.fetch(&changed, &mut held).await {
            Ok(body) => {
                let at = Instant::now();
                let mut ks = markers(&String::from_utf8_lossy(&body));
                ks.sort_unstable();
                for k in ks {
                    if k > seen {
                        seen = k;
                        let _ = tx.send(Note::Holds(k, at));
                    }
                }
            }
            Err(e) => {
                let _ = tx.send(Note::Lost(e));
                return;
            }
        }
    }
}

/// The report as a terminal table.
pub fn render(report: &FanoutReport) -> String {
    let mut out = format!(
        "gantry bench fanout ({} build; {}; {} changes per run; fd limit: {})\n",
        report.header.profile,
        report.header.machine.describe(),
        report.settings.changes,
        report.fd_limit.action
    );
    let mut rows = vec![
        [
            "kind",
            "subscribers",
            "connect ms",
            "all hold ms",
            "p99 ms",
            "admin CPU ms/change",
            "µs/sub",
            "admin RSS MiB",
            "peak",
            "bench CPU ms",
            "keeps up",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for r in &report.runs {
        let p99 = median(&r.changes.iter().map(|c| c.p99_ms).collect::<Vec<_>>()).unwrap_or(0.0);
        rows.push(vec![
            r.kind.name().to_owned(),
            match (r.connected == r.subscribers, r.requested == r.subscribers) {
                (true, true) => r.subscribers.to_string(),
                (true, false) => format!("{} (of {})", r.subscribers, r.requested),
                (false, _) => format!("{}/{}", r.connected, r.subscribers),
            },
            format!("{:.0}", r.connect_ms),
            r.all_hold_ms.map_or_else(|| "n/a".to_owned(), ms),
            ms(p99),
            format!("{:.0}", r.admin_cpu_ms_per_change),
            format!("{:.1}", r.admin_cpu_us_per_subscriber),
            format!("{:.0}", r.admin_rss_kib as f64 / 1024.0),
            format!("{:.0}", r.admin_rss_peak_kib as f64 / 1024.0),
            r.bench_cpu_ms.to_string(),
            if r.keeps_up { "yes" } else { "no" }.to_owned(),
        ]);
    }
    out += &table(&rows);
    out +=
        "(all hold / p99: admin 2xx → subscribers holding the change, median over the changes)\n";
    for v in &report.verdict {
        out += &format!("{v}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_read_whole() {
        let frame = r#"{"groupType":"SELECTOR","data":[{"name":"fanout-change-1"},{"name":"fanout-change-12"}]}"#;
        assert_eq!(markers(frame), vec![1, 12]);
        assert_eq!(markers("fanout-change-x"), Vec::<u32>::new());
    }

    #[test]
    fn the_listener_form_sends_every_group() {
        let mut held = HashMap::new();
        held.insert("SELECTOR".to_owned(), ("abc".to_owned(), 42));
        assert_eq!(
            listener_form(&held),
            "PLUGIN=00000000000000000000000000000000%2C0&SELECTOR=abc%2C42&\
             RULE=00000000000000000000000000000000%2C0&META_DATA=00000000000000000000000000000000%2C0&\
             APP_AUTH=00000000000000000000000000000000%2C0"
        );
    }

    fn run_result(kind: FanoutKind, n: usize, keeps_up: bool) -> RunResult {
        RunResult {
            kind,
            subscribers: n,
            requested: n,
            connected: n,
            connect_ms: 100.0,
            connect_admin_cpu_ms: 10,
            changes: vec![ChangeResult {
                change: 1,
                holders: n,
                p50_ms: 1.0,
                p99_ms: 2.0,
                all_ms: Some(3.0),
                admin_cpu_ms: 20,
            }],
            all_hold_ms: Some(if keeps_up { 3.0 } else { 3000.0 }),
            admin_cpu_ms_per_change: 20.0,
            admin_cpu_us_per_subscriber: 20_000.0 / n as f64,
            admin_rss_kib: 20480,
            admin_rss_peak_kib: 40960,
            bench_cpu_ms: 50,
            lost: 0,
            keeps_up,
            why: (!keeps_up).then(|| "too slow".to_owned()),
        }
    }

    #[test]
    fn the_verdict_names_where_the_admin_stops_keeping_up() {
        let runs = vec![
            run_result(FanoutKind::Websocket, 1000, true),
            run_result(FanoutKind::Websocket, 10_000, false),
            run_result(FanoutKind::Http, 1000, true),
        ];
        let v = verdict(FanoutKind::Websocket, &runs, 1000);
        assert!(
            v.starts_with("websocket: one admin stops keeping up at 10000 subscribers (too slow); it kept up with 1000"),
            "{v}"
        );
        assert!(v.contains("at 2.0 µs of admin CPU per subscriber"), "{v}");
        assert!(v.contains("about 500000 subscribers"), "{v}");
        let v = verdict(FanoutKind::Http, &runs, 1000);
        assert!(
            v.starts_with("http: one admin keeps up with 1000 subscribers"),
            "{v}"
        );
    }

    #[test]
    fn the_report_renders_and_serialises() {
        let report = FanoutReport {
            header: Header::new("fanout", Duration::from_secs(1)),
            settings: Settings {
                sizes: vec![1000],
                changes: 1,
                keep_up_ms: 1000,
                connect_concurrency: 256,
            },
            fd_limit: FdLimit {
                needed: 2024,
                before: (Some(1024), Some(4096)),
                after: (Some(2024), Some(4096)),
                action: "raised".into(),
            },
            runs: vec![run_result(FanoutKind::Http, 1000, true)],
            verdict: vec!["http: fine".into()],
        };
        let text = render(&report);
        let row = text.lines().find(|l| l.starts_with("http ")).unwrap();
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            [
                "http", "1000", "100", "3.000", "2.000", "20", "20.0", "20", "40", "50", "yes"
            ]
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["fd_limit"]["before"], serde_json::json!([1024, 4096]));
        assert_eq!(json["runs"][0]["kind"], "http");
        assert_eq!(json["runs"][0]["changes"][0]["all_ms"], 3.0);
    }

    #[test]
    fn a_low_soft_limit_is_raised() {
        let l = raise_fd_limit(64);
        assert!(l.after.0.is_none_or(|s| s >= 64), "{l:?}");
    }
}
