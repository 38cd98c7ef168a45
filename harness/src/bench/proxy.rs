//! `gantry bench proxy`: what the gateway adds to a request, against nginx and against no
//! proxy at all.
//!
//! Set-up: one upstream runtime ([`super::upstream`]) with a listener per target, so each
//! target's upstream connections are counted apart; per selector count (default 1, 100,
//! 10,000) an admin (websocket sync, SQLite) loaded through its REST API with one routing
//! selector (`uri startsWith /bench/`, with its rule) and decoys (`uri startsWith /decoy/<i>/`,
//! distinct), then a gateway started on it (one full sync; the time to the equal digest is
//! reported); and nginx ([`super::nginx`]) with `worker_processes` = this machine's CPUs (the
//! gateway's tokio worker count) when its binary is installed (else skipped with a note).
//!
//! Per upstream kind (`whole`, `split`), every target is warmed up, then `rounds` rounds run,
//! each target in turn (direct, nginx, gantry per selector count) getting the same passes from
//! one load generator ([`super::load`]): a closed-loop pass (`connections` connections for
//! `duration`: max throughput) and an open-loop pass per rate (coordinated-omission-corrected
//! latency). Each figure is the median over the rounds; added latency is the target's p50
//! minus direct's p50 in the same round (median over rounds); the gantry/nginx ratios are
//! ratios of those medians. The upstream counts the connections and requests each target
//! brought; a target with fewer than two requests per connection is flagged as opening a
//! connection per request.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures_util::{StreamExt, TryStreamExt};
use model::SyncMode;
use serde::Serialize;

use super::load::{self, Pass, Summary, Target};
use super::nginx::{self, Nginx};
use super::upstream::{KIND_HEADER, UpstreamKind, Upstreams};
use super::{Header, RawAdmin, divide_selector, median, ms, table};
use crate::backend::{Backend, Run, Service};
use crate::client::{AdminClient, GatewayClient};

/// The path every target is asked for.
pub const PATH: &str = "/bench/echo";
/// How long a loaded gateway may take to sync its admin's config.
const SYNC_TIMEOUT: Duration = Duration::from_secs(180);

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyOptions {
    /// Load-generator connections per pass.
    pub connections: usize,
    /// Each pass's duration.
    pub duration: Duration,
    /// Warm-up per target and upstream kind (closed loop, not recorded).
    pub warmup: Duration,
    /// Open-loop rates, requests per second.
    pub rates: Vec<u32>,
    /// Rounds (medians are taken over them).
    pub rounds: u32,
    /// Selector counts the gateway is measured with (one gateway each).
    pub selectors: Vec<usize>,
    /// Upstream kinds.
    pub kinds: Vec<UpstreamKind>,
    /// Measure nginx when installed.
    pub nginx: bool,
    /// TCP_NODELAY on the upstream's sockets (off only to see what a missing one costs).
    pub upstream_nodelay: bool,
    /// Concurrent admin writers loading the selectors.
    pub writers: usize,
    /// Keep the temp dirs (`GANTRY_KEEP=1`).
    pub keep: bool,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        Self {
            connections: 16,
            duration: Duration::from_millis(1000),
            warmup: Duration::from_millis(500),
            rates: vec![1000, 5000],
            rounds: 5,
            selectors: vec![1, 100, 10_000],
            kinds: vec![UpstreamKind::Whole, UpstreamKind::Split],
            nginx: true,
            upstream_nodelay: true,
            writers: 8,
            keep: false,
        }
    }
}

/// The settings as reported.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// Load-generator connections.
    pub connections: usize,
    /// Pass duration, ms.
    pub duration_ms: u64,
    /// Warm-up, ms.
    pub warmup_ms: u64,
    /// Open-loop rates.
    pub rates: Vec<u32>,
    /// Rounds.
    pub rounds: u32,
    /// Gateway selector counts.
    pub selectors: Vec<usize>,
    /// nginx `worker_processes` (= CPUs = the gateway's worker threads).
    pub nginx_workers: usize,
    /// nginx `keepalive` (idle upstream connections per worker).
    pub nginx_keepalive: usize,
    /// The nginx binary, when measured.
    pub nginx: Option<String>,
    /// TCP_NODELAY on the upstream's sockets.
    pub upstream_nodelay: bool,
    /// The request path.
    pub path: &'static str,
}

/// One gateway's set-up.
#[derive(Debug, Clone, Serialize)]
pub struct GatewaySetup {
    /// Divide selectors it holds.
    pub selectors: usize,
    /// Time to create them through the admin, ms.
    pub load_ms: f64,
    /// From the gateway's start to its digest equal to the admin's, ms.
    pub sync_ms: f64,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct ProxyReport {
    /// Version, profile, machine.
    #[serde(flatten)]
    pub header: Header,
    /// What ran.
    pub settings: Settings,
    /// Skips and warnings.
    pub notes: Vec<String>,
    /// Per gateway.
    pub setup: Vec<GatewaySetup>,
    /// Per upstream kind.
    pub results: Vec<KindResult>,
}

/// The results for one upstream kind.
#[derive(Debug, Clone, Serialize)]
pub struct KindResult {
    /// The kind.
    pub kind: UpstreamKind,
    /// Per target.
    pub targets: Vec<TargetResult>,
    /// gantry against nginx, per selector count (when nginx ran).
    pub ratios: Vec<Ratio>,
    /// Targets whose open-loop p99 looks like a ~40 ms delayed-ACK stall.
    pub stalls: Vec<String>,
}

/// One open-loop rate's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Open {
    /// Requests per second asked.
    pub rate: u32,
    /// Medians over the rounds.
    #[serde(flatten)]
    pub summary: Summary,
}

/// A pass's added latency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Added {
    /// The pass: `closed` or the open-loop rate.
    pub pass: PassName,
    /// p50 minus direct's p50 in the same round, median over the rounds, ms.
    pub p50_ms: f64,
}

/// Names a pass: `closed`, or `open@<rate>` in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassName {
    /// The closed loop.
    Closed,
    /// The open loop at this rate.
    Open(u32),
}

impl std::fmt::Display for PassName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PassName::Closed => f.write_str("closed"),
            PassName::Open(rate) => write!(f, "open@{rate}"),
        }
    }
}

impl Serialize for PassName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// gantry's added latency over nginx's for one pass.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AddedRatio {
    /// The pass.
    pub pass: PassName,
    /// gantry's added p50 over nginx's (`null` when nginx added nothing measurable).
    pub ratio: Option<f64>,
}

/// How a target used the upstream during the measured passes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpstreamUse {
    /// Connections the upstream accepted from it during the measured passes.
    pub connections: u64,
    /// Connections it accepted from it since the bench started (warm-ups and earlier kinds).
    pub connections_since_start: u64,
    /// Requests the upstream answered for it.
    pub requests: u64,
    /// Requests per accepted connection (`null` when none was opened: all reused).
    pub requests_per_connection: Option<f64>,
    /// Set when it looks like a connection per request.
    pub warning: Option<String>,
}

/// One target's results for one upstream kind.
#[derive(Debug, Clone, Serialize)]
pub struct TargetResult {
    /// `direct`, `nginx`, `gantry-<n>`.
    pub target: String,
    /// The gateway's selector count.
    pub selectors: Option<usize>,
    /// Closed loop, medians over the rounds.
    pub closed: Summary,
    /// Open loop per rate, medians over the rounds.
    pub open: Vec<Open>,
    /// Over direct (absent for direct).
    pub added: Vec<Added>,
    /// Upstream connection reuse.
    pub upstream: UpstreamUse,
    /// Every round's figures: the closed pass, then each rate.
    pub rounds: Vec<Vec<Summary>>,
}

/// gantry against nginx for one selector count.
#[derive(Debug, Clone, Serialize)]
pub struct Ratio {
    /// The gateway's selector count.
    pub selectors: usize,
    /// gantry's closed-loop rps over nginx's.
    pub throughput: f64,
    /// gantry's added p50 over nginx's, per pass.
    pub added_latency: Vec<AddedRatio>,
}

/// A gateway loaded with selectors; stopped on drop (gateway first).
#[derive(Debug)]
struct Gantry {
    gateway: Service,
    _admin: Service,
    _run: Run,
    _dir: tempfile::TempDir,
}

fn temp_dir(keep: bool) -> anyhow::Result<tempfile::TempDir> {
    let mut dir = tempfile::Builder::new().prefix("gantry-bench-").tempdir()?;
    dir.disable_cleanup(keep);
    Ok(dir)
}

/// Starts an admin, loads `size` selectors (one routing `/bench/` to `upstream`), then starts
/// a gateway and waits until it holds them.
async fn start_gantry(
    backend: &Backend,
    size: usize,
    upstream: SocketAddr,
    writers: usize,
    keep: bool,
) -> anyhow::Result<(Gantry, GatewaySetup)> {
    let dir = temp_dir(keep)?;
    let run = backend.begin(SyncMode::Websocket, keep).await?;
    let admin = run
        .start_admin(SyncMode::Websocket, None, dir.path())
        .await?;
    let client = AdminClient::login(admin.url(), super::ADMIN_USER, super::ADMIN_PASSWORD).await?;
    let raw = RawAdmin::login(admin.url()).await?;
    let plugin = client
        .plugin_id("divide")
        .await?
        .ok_or_else(|| anyhow::anyhow!("the admin has no divide plugin"))?;
    let up = upstream.to_string();
    let started = Instant::now();
    let (selector, mut rule) = divide_selector("bench", "/bench/", &up, &plugin);
    rule.selector_id = Some(raw.create_selector(&selector).await?);
    raw.create_rule(&rule).await?;
    futures_util::stream::iter(1..size)
        .map(|i| {
            let (s, _) =
                divide_selector(&format!("decoy-{i}"), &format!("/decoy/{i}/"), &up, &plugin);
            let raw = &raw;
            async move { raw.create_selector(&s).await }
        })
        .buffer_unordered(writers.max(1))
        .try_for_each(|_| async { Ok(()) })
        .await?;
    let load_ms = started.elapsed().as_secs_f64() * 1000.0;
    let started = Instant::now();
    let gateway = run
        .start_gateway(SyncMode::Websocket, &admin, None, dir.path())
        .await?;
    super::await_digests(&client, &GatewayClient::new(gateway.url()), SYNC_TIMEOUT).await?;
    let sync_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok((
        Gantry {
            gateway,
            _admin: admin,
            _run: run,
            _dir: dir,
        },
        GatewaySetup {
            selectors: size,
            load_ms,
            sync_ms,
        },
    ))
}

/// `http://127.0.0.1:1234` → `127.0.0.1:1234`.
fn socket_addr(url: &str) -> anyhow::Result<SocketAddr> {
    let hostport = url.trim_start_matches("http://").trim_end_matches('/');
    hostport
        .parse()
        .map_err(|e| anyhow::anyhow!("not an address: {url}: {e}"))
}

/// A target and the upstream listener it reaches.
struct Measured {
    target: Target,
    listener: usize,
    selectors: Option<usize>,
}

/// Runs the bench; `progress` gets a line per pass.
pub async fn run(
    backend: &Backend,
    opts: &ProxyOptions,
    progress: &(dyn Fn(String) + Sync),
) -> anyhow::Result<ProxyReport> {
    let started = Instant::now();
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let keepalive = 64;
    let mut notes = Vec::new();
    let nginx_bin = if !opts.nginx {
        notes.push("nginx not measured (--no-nginx)".to_owned());
        None
    } else if let Some(bin) = nginx::locate() {
        Some(bin)
    } else {
        let note = "nginx skipped: no nginx binary on PATH or at /usr/sbin/nginx \
                    (Debian: apt-get install -y nginx)";
        progress(format!("note: {note}"));
        notes.push(note.to_owned());
        None
    };
    // Listener 0: direct; 1..=n: one per gateway; last: nginx.
    let listeners = 1 + opts.selectors.len() + usize::from(nginx_bin.is_some());
    let ups = Upstreams::start(listeners, opts.upstream_nodelay)?;
    let mut measured = vec![Measured {
        target: target("direct", ups.addr(0)),
        listener: 0,
        selectors: None,
    }];
    let nginx_dir = temp_dir(opts.keep)?;
    let mut nginx = None;
    if let Some(bin) = &nginx_bin {
        let dir = nginx_dir.path().join("nginx");
        std::fs::create_dir_all(&dir)?;
        // nginx workers run as `nobody` under root: let them into the directory.
        std::fs::set_permissions(
            nginx_dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )?;
        let n = Nginx::start(bin, &dir, ups.addr(listeners - 1), workers, keepalive).await?;
        measured.push(Measured {
            target: target("nginx", n.addr()),
            listener: listeners - 1,
            selectors: None,
        });
        nginx = Some(n);
    }
    let mut gantries = Vec::new();
    let mut setup = Vec::new();
    for (k, &size) in opts.selectors.iter().enumerate() {
        progress(format!("loading a gateway with {size} selectors"));
        let (g, s) = start_gantry(
            backend,
            size.max(1),
            ups.addr(1 + k),
            opts.writers,
            opts.keep,
        )
        .await?;
        progress(format!(
            "  {size} selectors: created in {:.0} ms, gateway synced in {:.0} ms",
            s.load_ms, s.sync_ms
        ));
        measured.push(Measured {
            target: target(&format!("gantry-{size}"), socket_addr(g.gateway.url())?),
            listener: 1 + k,
            selectors: Some(size),
        });
        setup.push(s);
        gantries.push(g);
    }
    let mut passes = vec![Pass::Closed {
        connections: opts.connections,
        duration: opts.duration,
    }];
    passes.extend(opts.rates.iter().map(|&rate| Pass::Open {
        rate,
        connections: opts.connections,
        duration: opts.duration,
    }));
    let mut results = Vec::new();
    for &kind in &opts.kinds {
        for m in &mut measured {
            m.target.headers = vec![(KIND_HEADER.to_owned(), kind.name().to_owned())];
            let warm = load::run(
                &m.target,
                Pass::Closed {
                    connections: opts.connections,
                    duration: opts.warmup,
                },
            )
            .await;
            anyhow::ensure!(
                warm.ok > 0,
                "{} answered no request with 2xx during the warm-up ({} non-2xx, {} errors)",
                m.target.name,
                warm.non_2xx,
                warm.errors
            );
        }
        let before: Vec<(u64, u64)> = measured
            .iter()
            .map(|m| ups.counters(m.listener).read())
            .collect();
        // rounds[target][round][pass]
        let mut rounds: Vec<Vec<Vec<Summary>>> = vec![Vec::new(); measured.len()];
        for round in 0..opts.rounds {
            for (t, m) in measured.iter().enumerate() {
                let mut figures = Vec::new();
                for pass in &passes {
                    let s = load::run(&m.target, *pass).await.summary();
                    progress(format!(
                        "[{}] round {}/{} {:<13} {:<11} {:>9.0} rps  p50 {} ms  p99 {} ms  p99.9 {} ms{}",
                        kind.name(),
                        round + 1,
                        opts.rounds,
                        m.target.name,
                        pass_label(*pass),
                        s.rps,
                        ms(s.p50_ms),
                        ms(s.p99_ms),
                        ms(s.p999_ms),
                        if s.failed > 0 {
                            format!("  ({} failed)", s.failed)
                        } else {
                            String::new()
                        }
                    ));
                    figures.push(s);
                }
                rounds[t].push(figures);
            }
        }
        let uses: Vec<UpstreamUse> = measured
            .iter()
            .zip(&before)
            .map(|(m, (c0, r0))| {
                let (c1, r1) = ups.counters(m.listener).read();
                upstream_use(&m.target.name, c1 - c0, r1 - r0, c1)
            })
            .collect();
        for u in &uses {
            if let Some(w) = &u.warning {
                progress(format!("warning: {w}"));
                notes.push(format!("[{}] {w}", kind.name()));
            }
        }
        let names: Vec<(String, Option<usize>)> = measured
            .iter()
            .map(|m| (m.target.name.clone(), m.selectors))
            .collect();
        let k = summarise(kind, &names, &passes, &rounds, uses);
        for s in &k.stalls {
            progress(format!("warning: {s}"));
        }
        results.push(k);
    }
    drop(nginx);
    drop(gantries);
    Ok(ProxyReport {
        header: Header::new("proxy", started.elapsed()),
        settings: Settings {
            connections: opts.connections,
            duration_ms: u64::try_from(opts.duration.as_millis()).unwrap_or(u64::MAX),
            warmup_ms: u64::try_from(opts.warmup.as_millis()).unwrap_or(u64::MAX),
            rates: opts.rates.clone(),
            rounds: opts.rounds,
            selectors: opts.selectors.clone(),
            nginx_workers: workers,
            nginx_keepalive: keepalive,
            nginx: nginx_bin.map(|b| b.display().to_string()),
            upstream_nodelay: opts.upstream_nodelay,
            path: PATH,
        },
        notes,
        setup,
        results,
    })
}

fn target(name: &str, addr: SocketAddr) -> Target {
    Target {
        name: name.to_owned(),
        addr,
        path: PATH.to_owned(),
        headers: Vec::new(),
    }
}

fn pass_label(pass: Pass) -> String {
    match pass {
        Pass::Closed { .. } => "closed".to_owned(),
        Pass::Open { rate, .. } => format!("open@{rate}"),
    }
}

fn pass_name(pass: Pass) -> PassName {
    match pass {
        Pass::Closed { .. } => PassName::Closed,
        Pass::Open { rate, .. } => PassName::Open(rate),
    }
}

/// The connection reuse figures, with a warning below two requests per connection.
pub fn upstream_use(
    target: &str,
    connections: u64,
    requests: u64,
    connections_since_start: u64,
) -> UpstreamUse {
    let per = (connections > 0).then(|| requests as f64 / connections as f64);
    let warning = per.filter(|p| *p < 2.0 && requests > 0).map(|p| {
        format!(
            "{target} opened {connections} upstream connections for {requests} requests \
             ({p:.2} per connection): a connection per request, no keep-alive reuse"
        )
    });
    UpstreamUse {
        connections,
        connections_since_start,
        requests,
        requests_per_connection: per,
        warning,
    }
}

/// The medians of a pass's summaries over the rounds (counts are summed).
pub fn median_summary(rounds: &[Summary]) -> Summary {
    let m =
        |f: fn(&Summary) -> f64| median(&rounds.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0);
    Summary {
        rps: m(|s| s.rps),
        p50_ms: m(|s| s.p50_ms),
        p99_ms: m(|s| s.p99_ms),
        p999_ms: m(|s| s.p999_ms),
        max_ms: m(|s| s.max_ms),
        ok: rounds.iter().map(|s| s.ok).sum(),
        failed: rounds.iter().map(|s| s.failed).sum(),
        connects: rounds.iter().map(|s| s.connects).sum(),
        timer_late_p99_ms: m(|s| s.timer_late_p99_ms),
    }
}

/// Medians, added latency and ratios from `rounds[target][round][pass]`; target 0 is direct.
pub fn summarise(
    kind: UpstreamKind,
    targets: &[(String, Option<usize>)],
    passes: &[Pass],
    rounds: &[Vec<Vec<Summary>>],
    uses: Vec<UpstreamUse>,
) -> KindResult {
    let per_pass =
        |t: usize, p: usize| -> Vec<Summary> { rounds[t].iter().map(|r| r[p]).collect() };
    let mut out = Vec::new();
    for (t, ((name, selectors), upstream)) in targets.iter().zip(uses).enumerate() {
        let closed = median_summary(&per_pass(t, 0));
        let open = passes
            .iter()
            .enumerate()
            .skip(1)
            .filter_map(|(p, pass)| match pass {
                Pass::Open { rate, .. } => Some(Open {
                    rate: *rate,
                    summary: median_summary(&per_pass(t, p)),
                }),
                Pass::Closed { .. } => None,
            })
            .collect();
        let added = if t == 0 {
            Vec::new()
        } else {
            passes
                .iter()
                .enumerate()
                .map(|(p, pass)| {
                    let diffs: Vec<f64> = rounds[t]
                        .iter()
                        .zip(&rounds[0])
                        .map(|(mine, direct)| mine[p].p50_ms - direct[p].p50_ms)
                        .collect();
                    Added {
                        pass: pass_name(*pass),
                        p50_ms: median(&diffs).unwrap_or(0.0),
                    }
                })
                .collect()
        };
        out.push(TargetResult {
            target: name.clone(),
            selectors: *selectors,
            closed,
            open,
            added,
            upstream,
            rounds: rounds[t].clone(),
        });
    }
    let stalls = stalls(kind, &out);
    let ratios = match out.iter().find(|t| t.target == "nginx") {
        None => Vec::new(),
        Some(nginx) => out
            .iter()
            .filter_map(|t| {
                Some(Ratio {
                    selectors: t.selectors?,
                    throughput: if nginx.closed.rps > 0.0 {
                        t.closed.rps / nginx.closed.rps
                    } else {
                        0.0
                    },
                    added_latency: t
                        .added
                        .iter()
                        .zip(&nginx.added)
                        .map(|(g, n)| AddedRatio {
                            pass: g.pass,
                            ratio: (n.p50_ms > 0.0).then(|| g.p50_ms / n.p50_ms),
                        })
                        .collect(),
                })
            })
            .collect(),
    };
    KindResult {
        kind,
        targets: out,
        ratios,
        stalls,
    }
}

/// Open-loop passes whose p99 sits in the 35–60 ms band while direct's is under 10 ms: the
/// signature of a write that waited for the client's delayed ACK (Nagle), as a proxy without
/// TCP_NODELAY shows with the `split` upstream.
fn stalls(kind: UpstreamKind, targets: &[TargetResult]) -> Vec<String> {
    let Some(direct) = targets.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in targets.iter().skip(1) {
        for (mine, base) in t.open.iter().zip(&direct.open) {
            let p99 = mine.summary.p99_ms;
            if (35.0..=60.0).contains(&p99) && base.summary.p99_ms < 10.0 {
                out.push(format!(
                    "{} with the `{}` upstream at {} rps: p99 {p99:.1} ms against direct's {:.1} ms, \
                     the ~40 ms of a write held for the client's delayed ACK (missing TCP_NODELAY?)",
                    t.target,
                    kind.name(),
                    mine.rate,
                    base.summary.p99_ms
                ));
            }
        }
    }
    out
}

/// The report as terminal tables.
pub fn render(report: &ProxyReport) -> String {
    let mut out = format!(
        "gantry bench proxy ({} build; {}; {} connections, {} ms passes, {} rounds, median)\n",
        report.header.profile,
        report.header.machine.describe(),
        report.settings.connections,
        report.settings.duration_ms,
        report.settings.rounds
    );
    for s in &report.setup {
        out += &format!(
            "gateway with {} selectors: created in {:.0} ms, synced in {:.0} ms\n",
            s.selectors, s.load_ms, s.sync_ms
        );
    }
    for k in &report.results {
        out += &format!("\nupstream `{}`\n", k.kind.name());
        let mut head = vec![
            "target".to_owned(),
            "closed rps".to_owned(),
            "p50".to_owned(),
            "p99".to_owned(),
            "+p50".to_owned(),
        ];
        for r in &report.settings.rates {
            head.extend([
                format!("@{r} p50"),
                "p99".to_owned(),
                "p99.9".to_owned(),
                "+p50".to_owned(),
            ]);
        }
        head.extend(["up conns".to_owned(), "req/conn".to_owned()]);
        let mut rows = vec![head];
        for t in &k.targets {
            let added = |p: PassName| {
                t.added
                    .iter()
                    .find(|a| a.pass == p)
                    .map_or_else(|| "-".to_owned(), |a| format!("{:+.3}", a.p50_ms))
            };
            let mut row = vec![
                t.target.clone(),
                format!("{:.0}", t.closed.rps),
                ms(t.closed.p50_ms),
                ms(t.closed.p99_ms),
                added(PassName::Closed),
            ];
            for o in &t.open {
                row.extend([
                    ms(o.summary.p50_ms),
                    ms(o.summary.p99_ms),
                    ms(o.summary.p999_ms),
                    added(PassName::Open(o.rate)),
                ]);
            }
            row.extend([
                t.upstream.connections.to_string(),
                t.upstream.requests_per_connection.map_or_else(
                    || {
                        format!(
                            "all reused ({} opened before)",
                            t.upstream.connections_since_start
                        )
                    },
                    |p| format!("{p:.0}"),
                ),
            ]);
            rows.push(row);
        }
        out += &table(&rows);
        for r in &k.ratios {
            let lat: Vec<String> = r
                .added_latency
                .iter()
                .map(|a| {
                    let p = match a.pass {
                        PassName::Closed => "closed".to_owned(),
                        PassName::Open(rate) => format!("@{rate}"),
                    };
                    a.ratio
                        .map_or_else(|| format!("{p} n/a"), |v| format!("{p} {v:.2}×"))
                })
                .collect();
            out += &format!(
                "gantry-{} / nginx: throughput {:.2}×, added p50 {}\n",
                r.selectors,
                r.throughput,
                lat.join(", ")
            );
        }
    }
    for k in &report.results {
        for s in &k.stalls {
            out += &format!("stall: {s}\n");
        }
    }
    out += "(latencies in ms; +p50: added over direct; open-loop latency from each request's \
            scheduled send time)\n";
    for n in &report.notes {
        out += &format!("note: {n}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(rps: f64, p50: f64) -> Summary {
        Summary {
            rps,
            p50_ms: p50,
            p99_ms: p50 * 2.0,
            p999_ms: p50 * 3.0,
            max_ms: p50 * 4.0,
            ok: 10,
            failed: 0,
            connects: 1,
            timer_late_p99_ms: 0.1,
        }
    }

    fn passes() -> Vec<Pass> {
        vec![
            Pass::Closed {
                connections: 1,
                duration: Duration::from_secs(1),
            },
            Pass::Open {
                rate: 100,
                connections: 1,
                duration: Duration::from_secs(1),
            },
        ]
    }

    fn result() -> KindResult {
        let targets = vec![
            ("direct".to_owned(), None),
            ("nginx".to_owned(), None),
            ("gantry-1".to_owned(), Some(1)),
        ];
        // rounds[target][round][pass]
        let rounds = vec![
            vec![vec![s(1000.0, 0.10), s(100.0, 0.10)]; 3],
            vec![
                vec![s(500.0, 0.20), s(100.0, 0.15)],
                vec![s(400.0, 0.30), s(100.0, 0.15)],
                vec![s(600.0, 0.20), s(100.0, 0.15)],
            ],
            vec![vec![s(250.0, 0.30), s(100.0, 0.20)]; 3],
        ];
        let uses = vec![
            upstream_use("direct", 16, 1000, 16),
            upstream_use("nginx", 16, 1000, 16),
            upstream_use("gantry-1", 900, 1000, 900),
        ];
        summarise(UpstreamKind::Split, &targets, &passes(), &rounds, uses)
    }

    #[test]
    fn medians_added_latency_and_ratios() {
        let k = result();
        let nginx = &k.targets[1];
        assert_eq!(nginx.closed.rps, 500.0);
        assert_eq!(nginx.closed.ok, 30);
        assert!(
            (nginx.added[0].p50_ms - 0.1).abs() < 1e-9,
            "{:?}",
            nginx.added
        );
        assert!((nginx.added[1].p50_ms - 0.05).abs() < 1e-9);
        assert!(k.targets[0].added.is_empty());
        let r = &k.ratios[0];
        assert_eq!((r.selectors, r.throughput), (1, 0.5));
        let AddedRatio { pass, ratio } = r.added_latency[0];
        assert_eq!(pass, PassName::Closed);
        assert!((ratio.unwrap() - 2.0).abs() < 1e-9);
        assert!((r.added_latency[1].ratio.unwrap() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_delayed_ack_stall_is_called_out() {
        let mut k = result();
        assert!(k.stalls.is_empty(), "{:?}", k.stalls);
        k.targets[2].open[0].summary.p99_ms = 44.0;
        let s = stalls(UpstreamKind::Split, &k.targets);
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(
            s[0].starts_with("gantry-1 with the `split` upstream at 100 rps: p99 44.0 ms"),
            "{s:?}"
        );
    }

    #[test]
    fn a_connection_per_request_is_flagged() {
        let k = result();
        assert_eq!(k.targets[0].upstream.warning, None);
        let w = k.targets[2].upstream.warning.as_deref().unwrap();
        assert!(
            w.starts_with("gantry-1 opened 900 upstream connections for 1000 requests"),
            "{w}"
        );
        let reused = upstream_use("gantry-1", 0, 5000, 3);
        assert_eq!(
            (reused.requests_per_connection, reused.warning),
            (None, None)
        );
    }

    #[test]
    fn the_report_renders_as_tables() {
        let report = ProxyReport {
            header: Header {
                gantry_version: "0.1.0",
                bench: "proxy",
                profile: "release",
                machine: super::super::Machine {
                    cpus: 2,
                    cpu_model: Some("Test CPU".into()),
                    memory_mib: Some(1024),
                    kernel: Some("6.1".into()),
                },
                took_s: 1.0,
            },
            settings: Settings {
                connections: 1,
                duration_ms: 1000,
                warmup_ms: 100,
                rates: vec![100],
                rounds: 3,
                selectors: vec![1],
                nginx_workers: 2,
                nginx_keepalive: 64,
                nginx: Some("/usr/sbin/nginx".into()),
                upstream_nodelay: true,
                path: PATH,
            },
            notes: vec!["a note".into()],
            setup: vec![GatewaySetup {
                selectors: 1,
                load_ms: 5.0,
                sync_ms: 50.0,
            }],
            results: vec![result()],
        };
        let text = render(&report);
        assert!(text.contains("upstream `split`"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("gantry-1") && l.contains("250") && l.contains("+0.200")),
            "{text}"
        );
        assert!(
            text.contains("gantry-1 / nginx: throughput 0.50×, added p50 closed 2.00×, @100 2.00×"),
            "{text}"
        );
        assert!(text.contains("note: a note"), "{text}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["bench"], "proxy");
        assert_eq!(json["results"][0]["kind"], "split");
        assert_eq!(
            json["results"][0]["targets"][2]["added"][1]["pass"],
            "open@100"
        );
        let ratio = &json["results"][0]["ratios"][0]["added_latency"][0];
        assert_eq!(ratio["pass"], "closed");
        assert!(
            (ratio["ratio"].as_f64().unwrap() - 2.0).abs() < 1e-9,
            "{ratio}"
        );
        assert_eq!(json["results"][0]["targets"][1]["open"][0]["rate"], 100);
        assert_eq!(json["results"][0]["targets"][1]["open"][0]["p50_ms"], 0.15);
    }
}
