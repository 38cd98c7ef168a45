//! The fanout report: per run and change, where one admin stops keeping up, and the table.

use serde::Serialize;

use super::super::{Header, median, ms, table};
use super::fd_limit::FdLimit;
use super::options::FanoutKind;

/// The report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FanoutReport {
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
pub(crate) struct Settings {
    /// Subscriber counts.
    pub sizes: Vec<usize>,
    /// Changes per run.
    pub changes: u32,
    /// The keep-up bound, ms.
    pub keep_up_ms: u64,
    /// Concurrent connects.
    pub connect_concurrency: usize,
}

/// One kind × count.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunResult {
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
pub(crate) struct ChangeResult {
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

/// Where one admin stops keeping up with `kind`, with an extrapolation from its CPU cost.
pub(crate) fn verdict(kind: FanoutKind, runs: &[RunResult], keep_up_ms: u64) -> String {
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

/// The report as a terminal table.
pub(crate) fn render(report: &FanoutReport) -> String {
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
