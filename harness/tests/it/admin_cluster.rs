//! Several admins on one database, on the host backend with real processes: a change made on
//! admin B reaches a gateway that knows only admin A within [`BOUND`], in every sync mode, on
//! SQLite and on PostgreSQL; also while A was paused (SIGSTOP, change, SIGCONT: measured from
//! the resume) and restarted (stop, change, start on the same port: measured from A's
//! readiness, plus the gateway's reconnect back-off), and after both admins rewrote one
//! selector in turns (the gateway ends on the database's version and stays there).
//!
//! What makes it work is the admins' change feed (`admin/src/service/peers.rs`): each admin
//! notices commits on the database within 100 ms (SQLite `data_version`) or at once
//! (PostgreSQL `LISTEN`) and publishes them. The `…without_peer_watch…` trials start both
//! admins with `--peer-watch-ms 0` and require the change *not* to arrive within the bound in
//! the websocket and http modes (proof the tests can fail). With the feed off, ShenYu's own
//! mechanism is checked on its own: a gateway listing both admins makes the stale one reload
//! (protocol §4.5). In the zookeeper and etcd modes B
//! writes the change to the shared store itself, so there the feed only keeps A from
//! overwriting newer nodes for long.
//!
//! Trials are `admin_cluster::<test>@<mode>/<database>`. ZooKeeper and etcd trials are ignored
//! when the server is not installed, PostgreSQL ones when `GANTRY_TEST_POSTGRES_URL` is not set
//! (each trial makes a schema of its own with `psql`), unless `GANTRY_REQUIRE` names them.

use std::future::Future;
use std::process::Command;
use std::time::Duration;

use harness::ProcessEnv;
use harness::client::{AdminClient, GatewayClient};
use harness::internals::backend::HostServer;
use harness::internals::backend::component::{self, StoreKind};
use harness::internals::backend::host::{AdminLaunch, HostBackend, Service};
use harness::internals::wait::{WaitPolicy, await_convergence};
use libtest_mimic::{Failed, Trial};
use model::{SelectorDto, SyncMode};
use tokio::time::Instant;

/// How long a change on B may take to reach a gateway of A (the bound the README states).
const BOUND: Duration = Duration::from_secs(2);
/// The gateway's longest reconnect back-off ([`model::backoff::Backoff::CAP`]) with its
/// jitter: what a restart of A adds to [`BOUND`].
const RECONNECT: Duration = Duration::from_secs(6);
/// Admin flags: the change feed off (ShenYu's admins).
const FEED_OFF: &[&str] = &["--peer-watch-ms", "0"];
/// The feed off and listeners held 500 ms: a gateway's next listener request, the one that
/// shows a stale admin the newer version (§4.5), comes within [`HOLD`].
const FEED_OFF_SHORT_HOLD: &[&str] = &["--peer-watch-ms", "0", "--long-poll-hold-ms", "500"];
/// The hold those admins use.
const HOLD: Duration = Duration::from_millis(500);
/// The checks: every 20 ms.
const INTERVAL: Duration = Duration::from_millis(20);

/// Which database the admins share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Db {
    Sqlite,
    Postgres,
}

impl Db {
    fn name(self) -> &'static str {
        match self {
            Db::Sqlite => "sqlite",
            Db::Postgres => "postgres",
        }
    }

    /// Why trials on this database do not run here.
    fn skip_reason(self) -> Option<String> {
        let required = component::required(&ProcessEnv, "postgres");
        match self {
            Db::Postgres if postgres_url().is_none() && !required => Some(
                "GANTRY_TEST_POSTGRES_URL is not set (GANTRY_REQUIRE=postgres makes this a failure)"
                    .to_owned(),
            ),
            _ => None,
        }
    }
}

fn postgres_url() -> Option<String> {
    std::env::var("GANTRY_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
}

/// Runs `sql` on the PostgreSQL server with `psql`.
fn psql(server: &str, sql: &str) -> Result<(), Failed> {
    let out = Command::new("psql")
        .args([server, "-v", "ON_ERROR_STOP=1", "-qc", sql])
        .output()
        .map_err(|e| format!("running psql: {e}"))?;
    if !out.status.success() {
        return Err(format!("psql {sql:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(())
}

/// A PostgreSQL schema of one trial's own, dropped with it.
struct Schema {
    server: String,
    name: String,
}

impl Drop for Schema {
    fn drop(&mut self) {
        let _ = psql(&self.server, &format!("DROP SCHEMA {} CASCADE", self.name));
    }
}

/// What both admins are started with, and what they share: the database, maybe a store
/// server, the temp dir.
struct Shared {
    backend: HostBackend,
    mode: SyncMode,
    db: String,
    peer_args: Vec<String>,
    store: Option<HostServer>,
    _schema: Option<Schema>,
    dir: tempfile::TempDir,
}

impl Shared {
    async fn start_admin(&self, name: &str, port: u16) -> Result<Service, Failed> {
        let dir = self.dir.path().join(name);
        std::fs::create_dir_all(&dir)?;
        let launch = AdminLaunch {
            db: &self.db,
            port,
            args: self.peer_args.clone(),
        };
        Ok(self
            .backend
            .start_admin_with(self.mode, self.store.as_ref(), &dir, &launch)
            .await?)
    }
}

/// Which admins the gateway lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lists {
    OnlyA,
    Both,
}

/// Two admins on one database and a gateway; B is where changes are made.
struct Cluster {
    gateway: Option<Service>,
    a: Option<Service>,
    a_port: u16,
    b: Service,
    shared: Shared,
}

impl Cluster {
    /// Starts A and B on `db`, each with the flags `admin_args`.
    async fn start(mode: SyncMode, db: Db, admin_args: &[&str]) -> Result<Cluster, Failed> {
        let dir = tempfile::Builder::new()
            .prefix("gantry-cluster-")
            .tempdir()?;
        let backend = HostBackend::new(harness::internals::backend::host::bin_dir_from_env()?)?;
        let (db_url, schema) = match db {
            Db::Sqlite => (dir.path().join("shared.db").display().to_string(), None),
            Db::Postgres => {
                let server = postgres_url().ok_or("GANTRY_TEST_POSTGRES_URL is not set")?;
                let name = format!("gantry_cluster_{}", rand::random::<u32>());
                psql(&server, &format!("CREATE SCHEMA {name}"))?;
                let separator = if server.contains('?') { '&' } else { '?' };
                let url = format!("{server}{separator}options[search_path]={name}");
                (url, Some(Schema { server, name }))
            }
        };
        let store = match StoreKind::for_mode(mode) {
            Some(kind) => Some(HostServer::start(kind, &dir.path().join(kind.name())).await?),
            None => None,
        };
        let peer_args = admin_args.iter().map(|a| (*a).to_owned()).collect();
        let shared = Shared {
            backend,
            mode,
            db: db_url,
            peer_args,
            store,
            _schema: schema,
            dir,
        };
        let a = shared.start_admin("a", 0).await?;
        let b = shared.start_admin("b", 0).await?;
        Ok(Cluster {
            gateway: None,
            a_port: port_of(a.url())?,
            a: Some(a),
            b,
            shared,
        })
    }

    async fn start_gateway(&mut self, lists: Lists) -> Result<GatewayClient, Failed> {
        let a = self.a()?.url().to_owned();
        let admins = match lists {
            Lists::OnlyA => a,
            Lists::Both => format!("{a},{}", self.b.url()),
        };
        let dir = self.shared.dir.path().join("gateway");
        std::fs::create_dir_all(&dir)?;
        let gateway = self
            .shared
            .backend
            .start_gateway(self.shared.mode, &admins, self.shared.store.as_ref(), &dir)
            .await?;
        let client = GatewayClient::new(gateway.url());
        self.gateway = Some(gateway);
        Ok(client)
    }

    /// A cluster with a gateway listing `lists`, converged on the seeded database; answers
    /// it, the gateway, a client of B and the divide plugin's id.
    async fn ready(
        mode: SyncMode,
        db: Db,
        admin_args: &[&str],
        lists: Lists,
    ) -> Result<(Cluster, GatewayClient, AdminClient, String), Failed> {
        let mut cluster = Cluster::start(mode, db, admin_args).await?;
        let gateway = cluster.start_gateway(lists).await?;
        let b = login(&cluster.b).await?;
        let divide = b.plugin_id("divide").await?.ok_or("no divide plugin")?;
        cluster
            .converge(&b, &gateway, Duration::from_secs(20), 1, "at start")
            .await?;
        Ok((cluster, gateway, b, divide))
    }

    fn a(&self) -> Result<&Service, Failed> {
        Ok(self.a.as_ref().ok_or("admin a is not running")?)
    }

    /// Stops admin A (its process is killed).
    fn stop_a(&mut self) {
        self.a = None;
    }

    /// Starts admin A again, on its old port.
    async fn restart_a(&mut self) -> Result<(), Failed> {
        self.a = Some(self.shared.start_admin("a", self.a_port).await?);
        Ok(())
    }

    /// The logs, for a failure message.
    fn logs(&self) -> String {
        let services = [
            ("a", self.a.as_ref()),
            ("b", Some(&self.b)),
            ("gateway", self.gateway.as_ref()),
        ];
        let mut out = String::new();
        for (name, service) in services {
            if let Some(s) = service {
                out += &format!("\n--- {name} ---\n{}", s.log_tail(25));
            }
        }
        out
    }

    /// Sends `signal` (SIGSTOP, SIGCONT) to admin A.
    fn signal_a(&self, signal: rustix::process::Signal) -> Result<(), Failed> {
        Ok(self.a()?.signal(signal)?)
    }

    /// Waits until the gateway holds what the database holds (B's digest), `consecutive`
    /// times in a row, within `within`; answers how long it took.
    async fn converge(
        &self,
        b: &AdminClient,
        gateway: &GatewayClient,
        within: Duration,
        consecutive: u32,
        when: &str,
    ) -> Result<Duration, Failed> {
        let policy = WaitPolicy {
            consecutive,
            interval: INTERVAL,
            timeout: within,
        };
        let converged = await_convergence(policy, || async {
            let want = b.digest().await.map_err(|e| e.to_string())?;
            let have = gateway.digest().await.map_err(|e| e.to_string())?;
            if want.digest == have.report.digest {
                Ok(())
            } else {
                Err(format!("database {want:?}, gateway {have:?}"))
            }
        })
        .await
        .map_err(|t| {
            format!(
                "{when}: the gateway did not converge within {within:?}: {}{}",
                t.last,
                self.logs()
            )
        })?;
        eprintln!(
            "{when}: converged in {} ms",
            converged.first_seen.as_millis()
        );
        Ok(converged.first_seen)
    }
}

fn port_of(url: &str) -> Result<u16, Failed> {
    Ok(url
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .ok_or_else(|| format!("no port in {url}"))?)
}

/// A full-flow divide selector named `name` (no rule: the digest counts it either way).
fn selector(plugin: &str, name: &str, sort: i32) -> SelectorDto {
    SelectorDto {
        plugin_id: Some(plugin.to_owned()),
        name: Some(name.to_owned()),
        selector_type: Some(model::SelectorType::FullFlow.code()),
        match_mode: Some(model::MatchMode::And.code()),
        sort: Some(sort),
        enabled: Some(true),
        loged: Some(false),
        continued: Some(true),
        match_restful: Some(false),
        handle: Some(
            r#"[{"upstreamUrl":"127.0.0.1:9","protocol":"http://","weight":50,"status":true}]"#
                .to_owned(),
        ),
        ..Default::default()
    }
}

async fn login(service: &Service) -> Result<AdminClient, Failed> {
    Ok(AdminClient::login(service.url(), "admin", "123456").await?)
}

/// B's changes reach a gateway that lists only A: create, delete, while A is paused, while A
/// is down, and after both admins rewrote one selector in turns.
async fn changes_on_b_reach_a_gateway_of_a(mode: SyncMode, db: Db) -> Result<(), Failed> {
    let (mut cluster, gateway, b, divide) = Cluster::ready(mode, db, &[], Lists::OnlyA).await?;

    let first = b.create_selector(&selector(&divide, "first", 1)).await?;
    cluster
        .converge(&b, &gateway, BOUND, 1, "a selector created on b")
        .await?;
    b.delete_selectors(std::slice::from_ref(&first)).await?;
    cluster
        .converge(&b, &gateway, BOUND, 1, "the selector deleted on b")
        .await?;

    cluster.signal_a(rustix::process::Signal::STOP)?;
    let made = b
        .create_selector(&selector(&divide, "while-paused", 2))
        .await;
    cluster.signal_a(rustix::process::Signal::CONT)?;
    made?;
    cluster
        .converge(
            &b,
            &gateway,
            BOUND,
            1,
            "a selector created on b while a was paused",
        )
        .await?;

    cluster.stop_a();
    b.create_selector(&selector(&divide, "while-down", 3))
        .await?;
    cluster.restart_a().await?;
    cluster
        .converge(
            &b,
            &gateway,
            BOUND + RECONNECT,
            1,
            "a selector created on b while a was down",
        )
        .await?;

    let a = login(cluster.a()?).await?;
    let shared = b.create_selector(&selector(&divide, "shared", 4)).await?;
    for round in 0..10 {
        let (admin, by) = if round % 2 == 0 { (&a, "a") } else { (&b, "b") };
        admin
            .update_selector(
                &shared,
                &selector(&divide, &format!("shared-{round}-{by}"), 4),
            )
            .await?;
    }
    cluster
        .converge(
            &b,
            &gateway,
            BOUND,
            10,
            "one selector rewritten on a and b in turns",
        )
        .await?;
    Ok(())
}

/// A gateway listing both admins gets B's change (from B, or from A's reload: protocol §4.5).
async fn a_gateway_of_both_gets_it_too(mode: SyncMode, db: Db) -> Result<(), Failed> {
    let (cluster, gateway, b, divide) = Cluster::ready(mode, db, &[], Lists::Both).await?;
    b.create_selector(&selector(&divide, "first", 1)).await?;
    cluster
        .converge(&b, &gateway, BOUND, 5, "a selector created on b")
        .await?;
    Ok(())
}

/// ShenYu's own admin-cluster logic (protocol §4.5), with the feed off so nothing else can
/// do it: a gateway listing both admins takes B's change from B, then shows A the newer
/// version in its next listener request (within the hold, 500 ms here), and A reloads from
/// the database (its long-poll cache serves B's md5 within hold + bound). The control: A's cache stays stale while no
/// gateway lists both.
async fn a_stale_admin_reloads_when_a_gateway_is_ahead(
    mode: SyncMode,
    db: Db,
) -> Result<(), Failed> {
    let (cluster, gateway, b, divide) =
        Cluster::ready(mode, db, FEED_OFF_SHORT_HOLD, Lists::Both).await?;
    let a = login(cluster.a()?).await?;
    b.create_selector(&selector(&divide, "first", 1)).await?;
    cluster
        .converge(&b, &gateway, BOUND, 1, "a selector created on b")
        .await?;
    // A's answer to the listener request held when B changed it says "unchanged" (A does not
    // know yet) at the end of the hold; the next request shows A the newer version.
    let policy = WaitPolicy {
        consecutive: 1,
        interval: INTERVAL,
        timeout: HOLD + BOUND,
    };
    let group = model::ConfigGroup::Selector;
    await_convergence(policy, || async {
        let want = b.long_poll_md5(group).await.map_err(|e| e.to_string())?;
        let have = a.long_poll_md5(group).await.map_err(|e| e.to_string())?;
        if want == have {
            Ok(())
        } else {
            Err(format!("a serves {have}, b {want}"))
        }
    })
    .await
    .map_err(|t| {
        format!(
            "a did not reload within {BOUND:?}: {}{}",
            t.last,
            cluster.logs()
        )
    })?;

    // The control: without a gateway ahead of it (and with the feed off) A stays stale.
    let (cluster, _gateway, b, divide) =
        Cluster::ready(mode, db, FEED_OFF_SHORT_HOLD, Lists::OnlyA).await?;
    let a = login(cluster.a()?).await?;
    let before = b.long_poll_md5(group).await?;
    let a_before = a.long_poll_md5(group).await?;
    b.create_selector(&selector(&divide, "first", 1)).await?;
    // B's own cache follows its write a moment later.
    await_convergence(policy, || async {
        let now = b.long_poll_md5(group).await.map_err(|e| e.to_string())?;
        if now == before {
            Err("b's cache has not moved".to_owned())
        } else {
            Ok(())
        }
    })
    .await
    .map_err(|t| format!("b's own long-poll cache did not change: {}", t.last))?;
    stays(
        "a's long-poll cache (no gateway ahead of it, feed off)",
        &a_before,
        Instant::now() + policy.timeout,
        || async { a.long_poll_md5(group).await.map_err(|e| e.to_string()) },
    )
    .await
    .map_err(|e| format!("{e}: the trial above does not prove §4.5{}", cluster.logs()))?;
    Ok(())
}

/// With the feed off (`--peer-watch-ms 0`), B's change must not reach a gateway of A within
/// the bound: the other trials pass because of the feed. The gateway must answer throughout,
/// with the digest it had before the change (a gateway that stopped answering proves
/// nothing).
async fn without_peer_watch_it_does_not(mode: SyncMode, db: Db) -> Result<(), Failed> {
    let (cluster, gateway, b, divide) = Cluster::ready(mode, db, FEED_OFF, Lists::OnlyA).await?;
    let before = gateway.digest().await?.report.digest;
    let made = Instant::now();
    b.create_selector(&selector(&divide, "first", 1)).await?;
    let on_b = b.digest().await?.digest;
    if on_b == before {
        return Err(format!("b's digest {on_b} did not change with its own write").into());
    }
    stays(
        "the gateway's digest (feed off)",
        &before,
        made + BOUND,
        || async {
            gateway
                .digest()
                .await
                .map(|d| d.report.digest)
                .map_err(|e| e.to_string())
        },
    )
    .await
    .map_err(|e| format!("{e}: the trials do not prove the feed{}", cluster.logs()).into())
}

/// Asks `probe` every [`INTERVAL`] until `deadline` (the last time at or after it): every
/// answer must be `expected`, what `what` answered before the change. A failed request fails
/// too: only an answer shows that the change has not arrived.
async fn stays<F, Fut>(
    what: &str,
    expected: &str,
    deadline: Instant,
    mut probe: F,
) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<String, String>>,
{
    let mut answers = 0;
    loop {
        let asked = Instant::now();
        let have = probe().await.map_err(|e| {
            format!("{what}: a request failed after {answers} unchanged answers: {e}")
        })?;
        if have != expected {
            return Err(format!(
                "{what} moved from {expected} to {have} after {answers} unchanged answers"
            ));
        }
        answers += 1;
        if asked >= deadline {
            return Ok(());
        }
        tokio::time::sleep_until((asked + INTERVAL).min(deadline)).await;
    }
}

type Check = fn(SyncMode, Db) -> std::pin::Pin<Box<dyn Future<Output = Result<(), Failed>> + Send>>;

/// This module's trials.
pub(crate) fn trials() -> Vec<Trial> {
    let mut list: Vec<(&str, SyncMode, Db, Check)> = Vec::new();
    for mode in SyncMode::ALL {
        for db in [Db::Sqlite, Db::Postgres] {
            list.push(("changes_on_b_reach_a_gateway_of_a", *mode, db, |m, d| {
                Box::pin(changes_on_b_reach_a_gateway_of_a(m, d))
            }));
        }
    }
    for db in [Db::Sqlite, Db::Postgres] {
        list.push((
            "a_gateway_of_both_gets_it_too",
            SyncMode::Http,
            db,
            |m, d| Box::pin(a_gateway_of_both_gets_it_too(m, d)),
        ));
        list.push((
            "a_stale_admin_reloads_when_a_gateway_is_ahead",
            SyncMode::Http,
            db,
            |m, d| Box::pin(a_stale_admin_reloads_when_a_gateway_is_ahead(m, d)),
        ));
        for mode in [SyncMode::Websocket, SyncMode::Http] {
            list.push(("without_peer_watch_it_does_not", mode, db, |m, d| {
                Box::pin(without_peer_watch_it_does_not(m, d))
            }));
        }
    }
    list.into_iter()
        .map(|(test, mode, db, check)| {
            let name = format!("admin_cluster::{test}@{mode}/{}", db.name());
            let skip = component::skip_reason(&ProcessEnv, mode).or_else(|| db.skip_reason());
            let ignored = skip.is_some();
            Trial::test(name, move || {
                if let Some(why) = skip {
                    return Err(why.into());
                }
                tokio::runtime::Runtime::new()?.block_on(check(mode, db))
            })
            .with_ignored_flag(ignored)
        })
        .collect()
}
