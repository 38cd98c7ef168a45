//! `gantry bench fanout --backend swarm`: fan-out to real gateways, beyond one process.
//!
//! Per subscriber kind (the sync mode) and shape (`--shapes`, admins × gateways; by default
//! 1 × 20 and 3 × 10), a fresh swarm run: the admins (one service, or one replicated service on
//! PostgreSQL behind one name), and the gateways as **one** replicated service of that many
//! tasks, each task observed on its own host port. A divide selector is toggled `changes`
//! times, through each admin in turn; per change, each gateway task's time from the admin's 2xx
//! until it applied the config whose digest is the admin's (its `appliedAtUs`: the tasks and
//! the harness share the host's clock), and the time until every task held it (the slowest).
//! Reported: the p50 and p99 over the changes of the time until all hold, and over every task
//! and change of the time until one holds.

use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use model::SyncMode;
use serde::Serialize;

use super::super::{ADMIN_PASSWORD, ADMIN_USER, Header, RawAdmin, divide_selector, ms, now_us};
use super::options::FanoutKind;
use crate::backend::{Backend, Run, Service, start_gateway_replicas};
use crate::client::{AdminClient, GatewayClient};
use crate::judge::latency::Quantiles;

/// How long one gateway task may take to hold a change (or the first config).
const HOLD_TIMEOUT: Duration = Duration::from_secs(60);

/// One shape: how many admins and gateway tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Shape {
    /// Admin tasks (several: one replicated service on PostgreSQL).
    pub admins: u8,
    /// Gateway tasks (one replicated service).
    pub gateways: u8,
}

impl std::str::FromStr for Shape {
    type Err = String;

    /// `AxG`, e.g. `3x10`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}`: a shape is ADMINSxGATEWAYS, e.g. 3x10");
        let (a, g) = s.split_once('x').ok_or_else(bad)?;
        let (admins, gateways): (u8, u8) = (
            a.trim().parse().map_err(|_| bad())?,
            g.trim().parse().map_err(|_| bad())?,
        );
        if admins == 0 || gateways == 0 {
            return Err(bad());
        }
        Ok(Self { admins, gateways })
    }
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TasksReport {
    /// Version, profile, machine.
    #[serde(flatten)]
    pub header: Header,
    /// Changes timed per run.
    pub changes: u32,
    /// Per kind and shape.
    pub runs: Vec<TasksRun>,
}

/// One kind × shape.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TasksRun {
    /// Subscriber kind (the gateways' sync mode).
    pub kind: FanoutKind,
    /// Admins and gateway tasks.
    pub shape: Shape,
    /// Why it did not finish, if it did not.
    pub error: Option<String>,
    /// Time until every service answered and every gateway task held the first config, ms.
    pub setup_ms: f64,
    /// Per change, the time until every gateway task held it (the slowest task), ms.
    pub all_hold: Option<Quantiles>,
    /// Per change and task, the time until that task held it, ms.
    pub each_holds: Option<Quantiles>,
}

/// Runs every kind × shape on `backend` (a swarm backend).
pub(crate) async fn run(
    backend: &Backend,
    kinds: &[FanoutKind],
    shapes: &[Shape],
    changes: u32,
    progress: &(dyn Fn(String) + Sync),
) -> anyhow::Result<TasksReport> {
    let started = Instant::now();
    let mut runs = Vec::new();
    for &kind in kinds {
        for &shape in shapes {
            let mut r = TasksRun {
                kind,
                shape,
                error: None,
                setup_ms: 0.0,
                all_hold: None,
                each_holds: None,
            };
            if let Err(e) = one(backend, kind.mode(), shape, changes, &mut r, progress).await {
                progress(format!(
                    "{} {}x{}: failed: {e:#}",
                    kind.name(),
                    shape.admins,
                    shape.gateways
                ));
                r.error = Some(format!("{e:#}"));
            }
            runs.push(r);
        }
    }
    Ok(TasksReport {
        header: Header::new("fanout-swarm", started.elapsed()),
        changes,
        runs,
    })
}

async fn one(
    backend: &Backend,
    mode: SyncMode,
    shape: Shape,
    changes: u32,
    out: &mut TasksRun,
    progress: &(dyn Fn(String) + Sync),
) -> anyhow::Result<()> {
    let t = Instant::now();
    let run = backend.begin(mode, false).await?;
    let Run::Docker(docker) = &run else {
        anyhow::bail!("`bench fanout --backend swarm` needs the swarm backend");
    };
    let dir = tempfile::tempdir()?;
    let (admins, _postgres) = if shape.admins == 1 {
        (vec![run.start_admin(mode, None, dir.path()).await?], None)
    } else {
        let (admins, db) = run.start_admin_replicas(mode, None, shape.admins).await?;
        (admins, Some(db))
    };
    let gateways = start_gateway_replicas(docker, mode, &admins[0], shape.gateways).await?;
    let clients: Vec<AdminClient> = try_join_all(
        admins
            .iter()
            .map(|a| AdminClient::login(a.url(), ADMIN_USER, ADMIN_PASSWORD)),
    )
    .await?;
    let raw = RawAdmin::login(admins[0].url()).await?;
    let plugin = clients[0]
        .plugin_id("divide")
        .await?
        .ok_or_else(|| anyhow::anyhow!("the admin has no divide plugin"))?;
    let (mut dto, mut rule) =
        divide_selector("fanout", "/fanout/", "fanout-upstream:8080", &plugin);
    let id = raw.create_selector(&dto).await?;
    rule.selector_id = Some(id.clone());
    raw.create_rule(&rule).await?;
    let first = now_us();
    let want = clients[0].digest().await?.digest;
    held_by_all(&gateways, &want, first).await?;
    out.setup_ms = t.elapsed().as_secs_f64() * 1000.0;
    progress(format!(
        "{mode} {}x{}: {} admin task(s) and {} gateway tasks up and synced in {:.1} s",
        shape.admins,
        shape.gateways,
        admins.len(),
        gateways.len(),
        out.setup_ms / 1000.0
    ));

    let (mut all, mut each) = (Vec::new(), Vec::new());
    for n in 0..changes {
        let admin = &clients[n as usize % clients.len()];
        dto.enabled = Some(!dto.enabled.unwrap_or(true));
        dto.id = Some(id.clone());
        admin.update_selector(&id, &dto).await?;
        let committed = now_us();
        let want = admin.digest().await?.digest;
        let times = held_by_all(&gateways, &want, committed).await?;
        all.push(times.iter().copied().max().unwrap_or(0));
        each.extend(times);
    }
    let (all, each) = (Quantiles::of(all), Quantiles::of(each));
    progress(format!(
        "{mode} {}x{}: {changes} changes: every task holds p50 {} p99 {} ms; one task holds \
         p50 {} p99 {} ms",
        shape.admins,
        shape.gateways,
        ms(all.p50),
        ms(all.p99),
        ms(each.p50),
        ms(each.p99),
    ));
    out.all_hold = Some(all);
    out.each_holds = Some(each);
    Ok(())
}

/// Per gateway task, µs from `since` until it applied the config of digest `want` (its
/// `appliedAtUs`; 0 when it applied it before `since`), polling every 2 ms, all at once.
async fn held_by_all(gateways: &[Service], want: &str, since: u64) -> anyhow::Result<Vec<u64>> {
    try_join_all(gateways.iter().map(|g| async move {
        let client = GatewayClient::new(g.url());
        let deadline = tokio::time::Instant::now() + HOLD_TIMEOUT;
        loop {
            if let Ok(d) = client.digest().await
                && d.report.digest == want
            {
                return Ok(d.applied_at_us.saturating_sub(since));
            }
            if tokio::time::Instant::now() >= deadline {
                anyhow::bail!(
                    "{} did not hold digest {want} within {HOLD_TIMEOUT:?}",
                    g.name()
                );
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }))
    .await
}

/// The table: one row per kind × shape.
pub(crate) fn render(report: &TasksReport) -> String {
    let mut rows = vec![vec![
        "kind".to_owned(),
        "admins".into(),
        "gateway tasks".into(),
        "setup s".into(),
        "all hold p50 ms".into(),
        "all hold p99 ms".into(),
        "one holds p50 ms".into(),
        "one holds p99 ms".into(),
    ]];
    for r in &report.runs {
        let q = |q: &Option<Quantiles>, pick: fn(&Quantiles) -> f64| {
            q.as_ref().map_or_else(|| "-".to_owned(), |q| ms(pick(q)))
        };
        rows.push(vec![
            r.kind.name().to_owned(),
            r.shape.admins.to_string(),
            r.shape.gateways.to_string(),
            format!("{:.1}", r.setup_ms / 1000.0),
            q(&r.all_hold, |q| q.p50),
            q(&r.all_hold, |q| q.p99),
            q(&r.each_holds, |q| q.p50),
            q(&r.each_holds, |q| q.p99),
        ]);
    }
    let mut out = super::super::table(&rows);
    for r in report.runs.iter().filter(|r| r.error.is_some()) {
        out += &format!(
            "{} {}x{} failed: {}\n",
            r.kind.name(),
            r.shape.admins,
            r.shape.gateways,
            r.error.as_deref().unwrap_or_default()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_is_admins_by_gateways() {
        assert_eq!(
            "3x10".parse::<Shape>(),
            Ok(Shape {
                admins: 3,
                gateways: 10
            })
        );
        for bad in ["3", "0x10", "3x0", "x", "3x300"] {
            assert!(bad.parse::<Shape>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_table_has_a_row_per_run_and_names_a_failure() {
        let q = Quantiles::of([1000, 2000, 40_000]);
        let report = TasksReport {
            header: Header::new("fanout-swarm", Duration::from_secs(1)),
            changes: 3,
            runs: vec![
                TasksRun {
                    kind: FanoutKind::Websocket,
                    shape: Shape {
                        admins: 1,
                        gateways: 20,
                    },
                    error: None,
                    setup_ms: 12_345.0,
                    all_hold: Some(q),
                    each_holds: Some(q),
                },
                TasksRun {
                    kind: FanoutKind::Http,
                    shape: Shape {
                        admins: 3,
                        gateways: 10,
                    },
                    error: Some("boom".into()),
                    setup_ms: 0.0,
                    all_hold: None,
                    each_holds: None,
                },
            ],
        };
        let table = render(&report);
        let row: Vec<&str> = table
            .lines()
            .find(|l| l.starts_with("websocket"))
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(row[..4], ["websocket", "1", "20", "12.3"], "{table}");
        assert_eq!(row.len(), 8, "{table}");
        assert!(table.contains("http 3x10 failed: boom"), "{table}");
    }
}
