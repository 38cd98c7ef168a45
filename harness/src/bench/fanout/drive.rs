//! Driving the bench: per kind and count a fresh admin, everyone connected, then the changes
//! made one at a time and timed until every subscriber holds each.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, mpsc};

use super::super::{Header, RawAdmin, median, ms, procstat};
use super::fd_limit::{FD_MARGIN, raise_fd_limit};
use super::options::{FanoutKind, FanoutOptions};
use super::report::{ChangeResult, FanoutReport, RunResult, Settings, verdict};
use super::subscribers::{MARKER, Note, long_poll_subscriber, websocket_subscriber};
use crate::backend::host::AdminLaunch;
use crate::backend::{Backend, Run, Service};

/// Runs the bench; `progress` gets a line per step.
pub(crate) async fn run(
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

/// The admin's limits against hostile clients, lifted for the bench's own `size`
/// subscribers: sessions (default 256) to `size` and some, full syncs over all sessions
/// (default 10/s, which would make the connect phase take `size`/10 s) unrated.
fn admin_limits(size: usize) -> Vec<String> {
    vec![
        "--max-websocket-sessions".into(),
        (size + 64).to_string(),
        "--full-sync-rate".into(),
        "0".into(),
    ]
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
    let db = dir.path().join("admin.db").display().to_string();
    let launch = AdminLaunch {
        args: admin_limits(size),
        ..AdminLaunch::on(&db)
    };
    let admin = match &run {
        Run::Host(host) => Service::Host(
            host.start_admin_with(kind.mode(), None, dir.path(), &launch)
                .await?,
        ),
        Run::Docker(_) | Run::External(_) => {
            anyhow::bail!("the benches run on the host backend only")
        }
    };
    let pid = procstat::children_named("gantry-admin")
        .into_iter()
        .find(|p| !before.contains(p))
        .ok_or_else(|| anyhow::anyhow!("cannot find the admin's pid under /proc"))?;
    let read = || procstat::sample(pid).unwrap_or_default();
    let me0 = procstat::sample_self().unwrap_or_default();
    let raw = RawAdmin::login(admin.url()).await?;
    let addr: SocketAddr = admin.url().trim_start_matches("http://").parse()?;
    let plugin = crate::client::AdminClient::login(
        admin.url(),
        super::super::ADMIN_USER,
        super::super::ADMIN_PASSWORD,
    )
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
        let (s, _) = super::super::divide_selector(
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
