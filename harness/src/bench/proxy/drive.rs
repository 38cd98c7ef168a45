//! Driving the bench: the upstreams, nginx and the loaded gateways started, then every pass
//! run against every target, round after round.

use std::net::SocketAddr;
use std::time::Instant;

use super::super::load::{self, Pass, Summary, Target};
use super::super::nginx::{self, Nginx};
use super::super::procstat::{self, Usage};
use super::super::upstream::{KIND_HEADER, Upstreams};
use super::super::{Header, ms};
use super::options::ProxyOptions;
use super::report::{BaselineRev, Cost, ProxyReport, Settings, UpstreamUse};
use super::setup::{PATH, socket_addr, start_gantry, temp_dir};
use super::summary::{BASELINE, GANTRY, summarise, upstream_use};
use crate::backend::{Backend, BackendKind};

/// A target and the upstream listener it reaches.
struct Measured {
    target: Target,
    listener: usize,
    selectors: Option<usize>,
    /// The root of its processes, whose CPU and context switches are read (none for direct,
    /// whose server runs in this process).
    pid: Option<u32>,
}

/// Runs the bench; `progress` gets a line per pass.
pub(crate) async fn run(
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
    let baseline = match &opts.baseline {
        Some(b) => Some((b, Backend::new(BackendKind::Host, b.bin_dir.clone())?)),
        None => None,
    };
    let n = opts.selectors.len();
    let n_base = if baseline.is_some() { n } else { 0 };
    // Listener 0: direct; 1..=n: one per gateway; then one per baseline gateway; last: nginx.
    let listeners = 1 + n + n_base + usize::from(nginx_bin.is_some());
    let ups = Upstreams::start(listeners, opts.upstream_nodelay)?;
    let mut measured = vec![Measured {
        target: target("direct", ups.addr(0)),
        listener: 0,
        selectors: None,
        pid: None,
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
            pid: Some(n.root_pid()),
        });
        nginx = Some(n);
    }
    let mut gantries = Vec::new();
    let mut setup = Vec::new();
    let builds = std::iter::once((GANTRY, backend, 1))
        .chain(baseline.as_ref().map(|(_, base)| (BASELINE, base, 1 + n)));
    for (prefix, backend, first_listener) in builds {
        for (k, &size) in opts.selectors.iter().enumerate() {
            progress(format!("loading a {prefix}gateway with {size} selectors"));
            let (g, s) = start_gantry(
                backend,
                size.max(1),
                ups.addr(first_listener + k),
                opts.writers,
                opts.keep,
            )
            .await?;
            progress(format!(
                "  {size} selectors: created in {:.0} ms, gateway synced in {:.0} ms",
                s.load_ms, s.sync_ms
            ));
            measured.push(Measured {
                target: target(&format!("{prefix}{size}"), socket_addr(g.gateway.url())?),
                listener: first_listener + k,
                selectors: Some(size),
                pid: g.gateway.pid(),
            });
            if prefix == GANTRY {
                setup.push(s);
            }
            gantries.push(g);
        }
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
        // rounds[target][round][pass], costs[target][round] (the closed pass's)
        let mut rounds: Vec<Vec<Vec<Summary>>> = vec![Vec::new(); measured.len()];
        let mut costs: Vec<Vec<Cost>> = vec![Vec::new(); measured.len()];
        for round in 0..opts.rounds {
            for (t, m) in measured.iter().enumerate() {
                let mut figures = Vec::new();
                for pass in &passes {
                    let before = m.pid.and_then(procstat::usage);
                    let s = load::run(&m.target, *pass).await.summary();
                    if matches!(pass, Pass::Closed { .. })
                        && let Some(cost) = cost(before, m.pid.and_then(procstat::usage), &s)
                    {
                        costs[t].push(cost);
                    }
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
        let k = summarise(kind, &names, &passes, &rounds, &costs, uses);
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
            baseline: baseline.map(|(b, _)| BaselineRev {
                rev: b.rev.clone(),
                commit: b.commit.clone(),
                threshold: opts.baseline_threshold,
            }),
        },
        notes,
        setup,
        results,
    })
}

/// Per answered request, what a target's processes used between two readings.
pub(super) fn cost(before: Option<Usage>, after: Option<Usage>, pass: &Summary) -> Option<Cost> {
    let used = after?.since(before?);
    let requests = pass.ok as f64;
    (requests > 0.0).then(|| Cost {
        cpu_us_per_request: used.cpu_us as f64 / requests,
        switches_per_100: used.switches as f64 * 100.0 / requests,
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
