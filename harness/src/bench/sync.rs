//! `gantry bench sync`: how fast a change reaches the gateway, per sync mode.
//!
//! Per mode, on a fresh topology (admin, gateway, one echo upstream; the ZooKeeper or etcd
//! server the mode needs, or the mode is skipped with a note when it is not installed and
//! `GANTRY_REQUIRE` does not name it):
//!
//! 1. **toggles**: a divide selector (`uri startsWith /sync/bench/`) is disabled and enabled
//!    `changes` times; each change is timed exactly as the `latency` judge times it (the same
//!    code, `runner::timed_toggle`): admin 2xx → the gateway's `appliedAtUs` for the digest
//!    equal to the admin's, and → the first probe (every 1 ms) that sees it. Quantiles as the
//!    judge reports them ([`Quantiles`]).
//! 2. **burst**: `held` selectors with a rule each are created and synced (not timed), then
//!    `burst` selectors are created by `writers` concurrent writers: the figure is the time from
//!    the last 2xx until the gateway's digest equals the admin's (polled every 5 ms), and until
//!    the `appliedAtUs` of that digest. The same for `burst` rules (one per burst selector).

use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::{StreamExt, TryStreamExt};
use model::SyncMode;
use serde::Serialize;

use super::{Header, RawAdmin, await_digests, divide_selector, ms, now_us, table};
use crate::ProcessEnv;
use crate::backend::Backend;
use crate::client::{AdminClient, GatewayClient};
use crate::judge::latency::{ChangeLatency, Quantiles};
use crate::probe::Names;
use crate::scenario::ast::{Expect, RequestSpec, Route, UpstreamDecl};
use crate::topology::Topology;
use crate::wait::{WaitPolicy, await_convergence};

/// How long a burst may take to sync.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(240);

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyncOptions {
    /// Modes, in order.
    pub modes: Vec<SyncMode>,
    /// Timed toggles per mode.
    pub changes: u32,
    /// Selectors (with a rule each) held before the burst.
    pub held: usize,
    /// Selector creates (and then rule creates) in the burst.
    pub burst: usize,
    /// Concurrent writers.
    pub writers: usize,
    /// Keep the temp dirs.
    pub keep: bool,
}

impl Default for SyncOptions {
    fn default() -> Self {
        Self {
            modes: SyncMode::ALL.to_vec(),
            changes: 200,
            held: 1000,
            burst: 1000,
            writers: 8,
            keep: false,
        }
    }
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SyncReport {
    /// Version, profile, machine.
    #[serde(flatten)]
    pub header: Header,
    /// What ran.
    pub settings: Settings,
    /// Per mode.
    pub modes: Vec<ModeResult>,
}

/// The settings as reported.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Settings {
    /// Timed toggles per mode.
    pub changes: u32,
    /// Held selectors (and rules).
    pub held: usize,
    /// Burst creates.
    pub burst: usize,
    /// Concurrent writers.
    pub writers: usize,
}

/// One mode's figures (or why there are none).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ModeResult {
    /// The mode.
    pub mode: SyncMode,
    /// Why it was not run.
    pub skipped: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// The toggles.
    pub toggles: Option<Toggles>,
    /// The burst.
    pub burst: Option<Burst>,
}

/// Toggle latencies, ms.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Toggles {
    /// Changes timed.
    pub changes: usize,
    /// Admin 2xx → gateway applied.
    pub applied: Quantiles,
    /// Admin 2xx → first probe that sees the change.
    pub probe: Quantiles,
}

/// The burst figures.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Burst {
    /// Selectors (with a rule each) held before.
    pub held: usize,
    /// Concurrent writers.
    pub writers: usize,
    /// Time to create and sync the held config (not part of the figure), ms.
    pub held_setup_ms: f64,
    /// Gateway digest requests that failed while it synced the held config.
    pub held_failed_digest_polls: u32,
    /// The selector creates.
    pub selectors: BurstFigure,
    /// The rule creates.
    pub rules: BurstFigure,
}

/// One burst.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct BurstFigure {
    /// Creates.
    pub creates: usize,
    /// First request → last 2xx, ms.
    pub write_ms: f64,
    /// Last 2xx → the gateway's digest seen equal to the admin's, ms (5 ms polling).
    pub settle_ms: f64,
    /// Last 2xx → `appliedAtUs` of that digest, ms.
    pub applied_ms: f64,
    /// Gateway `/actuator/digest` requests that failed (10 s timeout) while it caught up.
    pub failed_digest_polls: u32,
}

/// Runs the bench; `progress` gets a line per step.
pub(crate) async fn run(
    backend: &Backend,
    opts: &SyncOptions,
    progress: &(dyn Fn(String) + Sync),
) -> anyhow::Result<SyncReport> {
    let started = Instant::now();
    let mut modes = Vec::new();
    for &mode in &opts.modes {
        let mut r = ModeResult {
            mode,
            skipped: None,
            error: None,
            toggles: None,
            burst: None,
        };
        if let Some(why) = crate::backend::component::skip_reason(&ProcessEnv, mode) {
            progress(format!("{mode}: skipped: {why}"));
            r.skipped = Some(why);
            modes.push(r);
            continue;
        }
        if let Err(e) = one_mode(backend, mode, opts, &mut r, progress).await {
            progress(format!("{mode}: failed: {e:#}"));
            r.error = Some(format!("{e:#}"));
        }
        modes.push(r);
    }
    Ok(SyncReport {
        header: Header::new("sync", started.elapsed()),
        settings: Settings {
            changes: opts.changes,
            held: opts.held,
            burst: opts.burst,
            writers: opts.writers,
        },
        modes,
    })
}

async fn one_mode(
    backend: &Backend,
    mode: SyncMode,
    opts: &SyncOptions,
    out: &mut ModeResult,
    progress: &(dyn Fn(String) + Sync),
) -> anyhow::Result<()> {
    let topo = Topology::start(
        backend,
        mode,
        &[UpstreamDecl::echo("alpha")],
        &[],
        opts.keep,
    )
    .await?;
    let result = measure(&topo, mode, opts, out, progress).await;
    if result.is_err() {
        progress(topo.log_tails(20));
    }
    topo.close().await;
    result
}

async fn measure(
    topo: &Topology,
    mode: SyncMode,
    opts: &SyncOptions,
    out: &mut ModeResult,
    progress: &(dyn Fn(String) + Sync),
) -> anyhow::Result<()> {
    let upstream = topo
        .upstream("alpha")
        .expect("the topology started alpha")
        .host_port();
    let admin =
        AdminClient::login(topo.admin().url(), super::ADMIN_USER, super::ADMIN_PASSWORD).await?;
    let raw = RawAdmin::login(topo.admin().url()).await?;
    let gateway = GatewayClient::new(topo.gateway().url());
    let plugin = admin
        .plugin_id("divide")
        .await?
        .ok_or_else(|| anyhow::anyhow!("the admin has no divide plugin"))?;

    // 1. toggles
    let (mut dto, mut rule) = divide_selector("toggled", "/sync/bench/", &upstream, &plugin);
    let id = raw.create_selector(&dto).await?;
    rule.selector_id = Some(id.clone());
    raw.create_rule(&rule).await?;
    let request: RequestSpec =
        serde_json::from_value(serde_json::json!({ "path": "/sync/bench/probe" }))?;
    let probe = |expect: Expect| {
        let (gateway, request) = (&gateway, &request);
        async move {
            let r = gateway.send(request).await.map_err(|e| e.to_string())?;
            crate::probe::judge(&expect, &r, &Names::default())
        }
    };
    let present = Expect {
        route: Some(Route::Present),
        ..Default::default()
    };
    let policy = |timeout| WaitPolicy {
        consecutive: 1,
        interval: Duration::from_millis(1),
        timeout,
    };
    await_convergence(policy(Duration::from_secs(30)), || probe(present.clone()))
        .await
        .map_err(|t| anyhow::anyhow!("the bench route never became live: {t}"))?;
    let mut changes: Vec<ChangeLatency> = Vec::new();
    let t = Instant::now();
    for n in 1..=opts.changes {
        let c = crate::runner::timed_toggle(
            &admin,
            &gateway,
            (&id, &mut dto),
            n,
            (
                policy(Duration::from_secs(10)),
                policy(Duration::from_secs(10)),
            ),
            probe,
        )
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
        changes.push(c);
    }
    let toggles = Toggles {
        changes: changes.len(),
        applied: Quantiles::of(changes.iter().map(|c| c.applied_us)),
        probe: Quantiles::of(changes.iter().map(|c| c.probe_us)),
    };
    progress(format!(
        "{mode}: {} toggles in {:.1} s: applied p50 {} p99 {} max {} ms; probe p50 {} p99 {} ms",
        toggles.changes,
        t.elapsed().as_secs_f64(),
        ms(toggles.applied.p50),
        ms(toggles.applied.p99),
        ms(toggles.applied.max),
        ms(toggles.probe.p50),
        ms(toggles.probe.p99),
    ));
    out.toggles = Some(toggles);

    // 2. burst over held config
    let t = Instant::now();
    let held_ids =
        create_selectors(&raw, "held", opts.held, &upstream, &plugin, opts.writers).await?;
    create_rules(&raw, "held", &held_ids, &upstream, &plugin, opts.writers).await?;
    let held = await_digests(&admin, &gateway, SETTLE_TIMEOUT).await?;
    let held_setup_ms = t.elapsed().as_secs_f64() * 1000.0;
    progress(format!(
        "{mode}: {} held selectors and rules created and synced in {:.1} s{}",
        opts.held,
        held_setup_ms / 1000.0,
        failed_polls(held.failed_polls)
    ));
    let mut burst_ids = Vec::new();
    let selectors = timed_burst(&admin, &gateway, opts.burst, || async {
        burst_ids =
            create_selectors(&raw, "burst", opts.burst, &upstream, &plugin, opts.writers).await?;
        Ok(())
    })
    .await?;
    let rules = timed_burst(&admin, &gateway, burst_ids.len(), || {
        create_rules(&raw, "burst", &burst_ids, &upstream, &plugin, opts.writers)
    })
    .await?;
    for (what, f) in [("selector", &selectors), ("rule", &rules)] {
        progress(format!(
            "{mode}: burst of {} {what} creates ({} writers, over {} held): written in {} ms; \
             last 2xx → gateway applied {} ms, digests equal {} ms{}",
            f.creates,
            opts.writers,
            opts.held,
            ms(f.write_ms),
            ms(f.applied_ms),
            ms(f.settle_ms),
            failed_polls(f.failed_digest_polls)
        ));
    }
    out.burst = Some(Burst {
        held: opts.held,
        writers: opts.writers,
        held_setup_ms,
        held_failed_digest_polls: held.failed_polls,
        selectors,
        rules,
    });
    Ok(())
}

fn failed_polls(n: u32) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" ({n} gateway digest requests timed out meanwhile)")
    }
}

/// Runs `writes` (which must finish with its last 2xx), then times the gateway catching up.
async fn timed_burst<F, Fut>(
    admin: &AdminClient,
    gateway: &GatewayClient,
    creates: usize,
    writes: F,
) -> anyhow::Result<BurstFigure>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let first = Instant::now();
    writes().await?;
    let last_2xx = Instant::now();
    let last_2xx_us = now_us();
    let settled = await_digests(admin, gateway, SETTLE_TIMEOUT).await?;
    let settle = last_2xx.elapsed();
    Ok(BurstFigure {
        creates,
        write_ms: (last_2xx - first).as_secs_f64() * 1000.0,
        settle_ms: settle.as_secs_f64() * 1000.0,
        applied_ms: settled.applied.applied_at_us.saturating_sub(last_2xx_us) as f64 / 1000.0,
        failed_digest_polls: settled.failed_polls,
    })
}

/// Creates `n` selectors `<prefix>-<i>` (`uri startsWith /<prefix>/<i>/`), `writers` at a
/// time; their ids in order.
async fn create_selectors(
    raw: &RawAdmin,
    prefix: &str,
    n: usize,
    upstream: &str,
    plugin: &str,
    writers: usize,
) -> anyhow::Result<Vec<String>> {
    futures_util::stream::iter(0..n)
        .map(|i| {
            let (s, _) = divide_selector(
                &format!("{prefix}-{i}"),
                &format!("/{prefix}/{i}/"),
                upstream,
                plugin,
            );
            async move { raw.create_selector(&s).await }
        })
        .buffered(writers.max(1))
        .try_collect()
        .await
}

/// Creates one rule under each selector of `ids`, `writers` at a time.
async fn create_rules(
    raw: &RawAdmin,
    prefix: &str,
    ids: &[String],
    upstream: &str,
    plugin: &str,
    writers: usize,
) -> anyhow::Result<()> {
    futures_util::stream::iter(ids.iter().enumerate())
        .map(|(i, id)| {
            let (_, mut r) = divide_selector(
                &format!("{prefix}-{i}"),
                &format!("/{prefix}/{i}/"),
                upstream,
                plugin,
            );
            r.selector_id = Some(id.clone());
            async move { raw.create_rule(&r).await }
        })
        .buffer_unordered(writers.max(1))
        .try_for_each(|()| async { Ok(()) })
        .await
}

/// The report as a terminal table.
pub(crate) fn render(report: &SyncReport) -> String {
    let s = &report.settings;
    let mut out = format!(
        "gantry bench sync ({} build; {}; {} toggles per mode; burst: {} creates by {} writers over {} held)\n",
        report.header.profile,
        report.header.machine.describe(),
        s.changes,
        s.burst,
        s.writers,
        s.held
    );
    let mut rows = vec![
        [
            "mode",
            "applied p50",
            "p99",
            "max",
            "probe p50",
            "p99",
            "burst sel. applied",
            "equal",
            "burst rules applied",
            "equal",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    let mut notes = String::new();
    for m in &report.modes {
        let mut row = vec![m.mode.to_string()];
        match (&m.toggles, &m.skipped, &m.error) {
            (Some(t), _, _) => row.extend([
                ms(t.applied.p50),
                ms(t.applied.p99),
                ms(t.applied.max),
                ms(t.probe.p50),
                ms(t.probe.p99),
            ]),
            (None, Some(why), _) => {
                row.push("skipped".to_owned());
                notes += &format!("note: {}: skipped: {why}\n", m.mode);
            }
            (None, None, _) => row.push("failed".to_owned()),
        }
        if let Some(b) = &m.burst {
            row.extend([
                ms(b.selectors.applied_ms),
                ms(b.selectors.settle_ms),
                ms(b.rules.applied_ms),
                ms(b.rules.settle_ms),
            ]);
        }
        if let Some(e) = &m.error {
            notes += &format!("note: {}: failed: {e}\n", m.mode);
        }
        rows.push(row);
    }
    out += &table(&rows);
    out += "(ms; applied: admin 2xx → gateway appliedAtUs; probe: → first probe that sees it; \
            burst: last 2xx → gateway applied / digests seen equal)\n";
    out + &notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_renders_every_mode() {
        let q = |p50| Quantiles {
            p50,
            p95: p50 * 2.0,
            p99: p50 * 3.0,
            max: p50 * 4.0,
        };
        let f = BurstFigure {
            creates: 1000,
            write_ms: 2000.0,
            settle_ms: 12.5,
            applied_ms: 10.25,
            failed_digest_polls: 0,
        };
        let report = SyncReport {
            header: Header::new("sync", Duration::from_secs(1)),
            settings: Settings {
                changes: 200,
                held: 1000,
                burst: 1000,
                writers: 8,
            },
            modes: vec![
                ModeResult {
                    mode: SyncMode::Websocket,
                    skipped: None,
                    error: None,
                    toggles: Some(Toggles {
                        changes: 200,
                        applied: q(0.5),
                        probe: q(0.75),
                    }),
                    burst: Some(Burst {
                        held: 1000,
                        writers: 8,
                        held_setup_ms: 5000.0,
                        held_failed_digest_polls: 0,
                        selectors: f,
                        rules: f,
                    }),
                },
                ModeResult {
                    mode: SyncMode::Etcd,
                    skipped: Some("etcd server not available".into()),
                    error: None,
                    toggles: None,
                    burst: None,
                },
            ],
        };
        let text = render(&report);
        let ws = text.lines().find(|l| l.starts_with("websocket")).unwrap();
        assert_eq!(
            ws.split_whitespace().collect::<Vec<_>>(),
            [
                "websocket",
                "0.500",
                "1.500",
                "2.000",
                "0.750",
                "2.250",
                "10.250",
                "12.500",
                "10.250",
                "12.500"
            ]
        );
        let etcd = text.lines().find(|l| l.starts_with("etcd")).unwrap();
        assert_eq!(
            etcd.split_whitespace().collect::<Vec<_>>(),
            ["etcd", "skipped"]
        );
        assert!(
            text.contains("note: etcd: skipped: etcd server not available"),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["bench"], "sync");
        assert_eq!(json["modes"][0]["mode"], "websocket");
        assert_eq!(json["modes"][0]["toggles"]["applied"]["p99"], 1.5);
        assert_eq!(json["modes"][0]["burst"]["selectors"]["settle_ms"], 12.5);
        assert!(json["modes"][1]["toggles"].is_null());
    }
}
