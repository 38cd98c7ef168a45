//! The proxy report: per upstream kind and target, the medians, added latency and ratios, and
//! the terminal tables.

use serde::Serialize;

use super::super::load::Summary;
use super::super::upstream::UpstreamKind;
use super::super::{Header, ms, table};

/// The settings as reported.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Settings {
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
    /// The `--baseline` revision and its commit.
    pub baseline: Option<BaselineRev>,
}

/// The revision measured as `baseline-<selectors>`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BaselineRev {
    /// As asked.
    pub rev: String,
    /// The commit.
    pub commit: String,
    /// Throughput ratios below this fail the bench.
    pub threshold: f64,
}

/// One gateway's set-up.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct GatewaySetup {
    /// Divide selectors it holds.
    pub selectors: usize,
    /// Time to create them through the admin, ms.
    pub load_ms: f64,
    /// From the gateway's start to its digest equal to the admin's, ms.
    pub sync_ms: f64,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ProxyReport {
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
pub(crate) struct KindResult {
    /// The kind.
    pub kind: UpstreamKind,
    /// Per target.
    pub targets: Vec<TargetResult>,
    /// gantry against nginx, per selector count (when nginx ran).
    pub ratios: Vec<Ratio>,
    /// gantry against the `--baseline` revision's gateway, per selector count.
    pub baseline_ratios: Vec<Ratio>,
    /// Targets whose open-loop p99 looks like a ~40 ms delayed-ACK stall.
    pub stalls: Vec<String>,
}

/// One open-loop rate's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Open {
    /// Requests per second asked.
    pub rate: u32,
    /// Medians over the rounds.
    #[serde(flatten)]
    pub summary: Summary,
}

/// A pass's added latency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Added {
    /// The pass: `closed` or the open-loop rate.
    pub pass: PassName,
    /// p50 minus direct's p50 in the same round, median over the rounds, ms.
    pub p50_ms: f64,
}

/// Names a pass: `closed`, or `open@<rate>` in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PassName {
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
pub(crate) struct AddedRatio {
    /// The pass.
    pub pass: PassName,
    /// gantry's added p50 over nginx's (`null` when nginx added nothing measurable).
    pub ratio: Option<f64>,
}

/// How a target used the upstream during the measured passes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct UpstreamUse {
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

/// What a target's processes spent per answered request in the closed pass, medians over
/// the rounds (from `/proc`: every process and thread of the target).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Cost {
    /// User + system CPU time per request, µs.
    pub cpu_us_per_request: f64,
    /// Context switches per 100 requests.
    pub switches_per_100: f64,
}

/// One target's results for one upstream kind.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TargetResult {
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
    /// CPU and context switches per request (absent for direct, whose server runs in the
    /// bench's own process, and for a target whose process cannot be read).
    pub cost: Option<Cost>,
    /// Every round's figures: the closed pass, then each rate.
    pub rounds: Vec<Vec<Summary>>,
}

/// gantry against a reference (nginx, or the baseline revision's gateway with as many
/// selectors) for one selector count.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Ratio {
    /// The gateway's selector count.
    pub selectors: usize,
    /// gantry's closed-loop rps over the reference's.
    pub throughput: f64,
    /// gantry's added p50 over the reference's, per pass.
    pub added_latency: Vec<AddedRatio>,
    /// gantry's CPU time per request over the reference's (`null` when either was not
    /// measured).
    pub cpu_per_request: Option<f64>,
}

/// The report as terminal tables.
pub(crate) fn render(report: &ProxyReport) -> String {
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
            "CPU µs/req".to_owned(),
            "cs/100 req".to_owned(),
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
                t.cost.map_or_else(
                    || "-".to_owned(),
                    |c| format!("{:.1}", c.cpu_us_per_request),
                ),
                t.cost
                    .map_or_else(|| "-".to_owned(), |c| format!("{:.1}", c.switches_per_100)),
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
            let cpu = r
                .cpu_per_request
                .map_or_else(String::new, |v| format!(", CPU per request {v:.2}×"));
            out += &format!(
                "gantry-{} / nginx: throughput {:.2}×, added p50 {}{cpu}\n",
                r.selectors,
                r.throughput,
                lat.join(", ")
            );
        }
        if let Some(b) = &report.settings.baseline {
            for r in &k.baseline_ratios {
                let cpu = r
                    .cpu_per_request
                    .map_or_else(String::new, |v| format!(", CPU per request {v:.2}×"));
                let closed = r
                    .added_latency
                    .first()
                    .and_then(|a| a.ratio)
                    .map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2}×"));
                out += &format!(
                    "gantry-{} / {} ({}): throughput {:.2}×, added p50 closed {closed}{cpu}\n",
                    r.selectors,
                    b.rev,
                    &b.commit[..b.commit.len().min(12)],
                    r.throughput
                );
            }
        }
    }
    for k in &report.results {
        for s in &k.stalls {
            out += &format!("stall: {s}\n");
        }
    }
    out += "(latencies in ms; +p50: added over direct; open-loop latency from each request's \
            scheduled send time; CPU and context switches (cs) of the target's processes in the \
            closed pass, per answered request)\n";
    for n in &report.notes {
        out += &format!("note: {n}\n");
    }
    out
}
