//! The zookeeper and etcd sync modes against real servers on the host backend: a delete reaches
//! the gateway, a gateway started after the admin wrote everything converges, and the gateway
//! converges again after the server is restarted (same port, same data) with a change made
//! while it was down. Each test also checks that the server process is gone after the drop.
//!
//! Trials are `<test>@<mode>`; they are ignored (with a note on stderr) when the server is not
//! installed, unless `GANTRY_REQUIRE` names the mode.

use std::time::Duration;

use harness::client::{AdminClient, GatewayClient};
use harness::internals::backend::HostServer;
use harness::internals::backend::component::{self, StoreKind};
use harness::internals::backend::{ComponentService, Run, Service};
use harness::internals::lower::{custom_selector, divide_rule};
use harness::internals::wait::{WaitPolicy, await_convergence};
use harness::{Backend, BackendKind, ProcessEnv};
use libtest_mimic::{Failed, Trial};
use model::{ConditionDto, MatchMode, SyncMode};

/// Digest waits: every 50 ms, 30 s deadline (a restarted ZooKeeper takes a few seconds).
const CONVERGE: WaitPolicy = WaitPolicy {
    consecutive: 1,
    interval: Duration::from_millis(50),
    timeout: Duration::from_secs(30),
};

/// One topology: the store server, an admin, maybe a gateway, in a temp dir.
struct Setup {
    backend: Backend,
    run: Run,
    mode: SyncMode,
    gateway: Option<Service>,
    admin: Service,
    store: ComponentService,
    dir: tempfile::TempDir,
}

impl Setup {
    async fn start(kind: StoreKind) -> Result<Setup, Failed> {
        let mode = kind.mode();
        let dir = tempfile::Builder::new()
            .prefix("gantry-faults-")
            .tempdir()?;
        let bin_dir = harness::internals::backend::host::bin_dir_from_env()?;
        let backend = Backend::new(BackendKind::Host, bin_dir)?;
        let run = backend.begin(mode, false).await?;
        let store = run.start_store(kind, &dir.path().join(kind.name())).await?;
        let admin = run.start_admin(mode, Some(&store), dir.path()).await?;
        Ok(Setup {
            backend,
            run,
            mode,
            gateway: None,
            admin,
            store,
            dir,
        })
    }

    async fn start_gateway(&mut self) -> Result<GatewayClient, Failed> {
        let gateway = self
            .run
            .start_gateway(self.mode, &self.admin, Some(&self.store), self.dir.path())
            .await?;
        let client = GatewayClient::new(gateway.url());
        self.gateway = Some(gateway);
        Ok(client)
    }

    async fn admin(&self) -> Result<AdminClient, Failed> {
        Ok(AdminClient::login(self.admin.url(), "admin", "123456").await?)
    }

    /// The store's host process (this is the host backend).
    fn server(&self) -> &HostServer {
        self.store.host().expect("a host run starts host servers")
    }

    /// The store's host process, to stop and restart by hand.
    fn server_mut(&mut self) -> &mut HostServer {
        self.store
            .host_mut()
            .expect("a host run starts host servers")
    }

    /// The logs, for a failure message.
    fn logs(&self) -> String {
        let mut out = format!(
            "--- admin ---\n{}\n--- {} ---\n{}",
            self.admin.log_tail(30),
            self.store.kind().name(),
            self.store.log_tail(30)
        );
        if let Some(g) = &self.gateway {
            out += &format!("\n--- gateway ---\n{}", g.log_tail(30));
        }
        out
    }

    /// Drops everything and checks that the server process is gone.
    fn finish(self) -> Result<(), Failed> {
        let pid = self
            .server()
            .pid()
            .ok_or("the store server is not running")?;
        let Setup {
            backend,
            run,
            gateway,
            admin,
            store,
            dir,
            ..
        } = self;
        drop((gateway, admin, store, run, backend));
        if harness::internals::backend::process::process_alive(pid) {
            return Err(format!("the store server (pid {pid}) outlived its drop").into());
        }
        drop(dir);
        Ok(())
    }
}

/// Creates a divide selector for `/faults/<name>` with one rule; returns the selector id.
async fn create_route(admin: &AdminClient, name: &str) -> Result<String, Failed> {
    let plugin = admin.plugin_id("divide").await?.ok_or("no divide plugin")?;
    let path = format!("/faults/{name}");
    let condition = ConditionDto::new("uri", "=", "/", &path);
    let handle =
        r#"[{"upstreamUrl":"127.0.0.1:9","protocol":"http://","weight":50,"status":true}]"#;
    let selector = custom_selector(&plugin, name, handle, vec![condition.clone()]);
    let id = admin.create_selector(&selector).await?;
    let rule = divide_rule(
        &id,
        &format!("{name}-rule"),
        MatchMode::And,
        vec![condition],
    );
    admin.create_rule(&rule).await?;
    Ok(id)
}

/// Waits until the gateway's digest equals the admin's and holds `selectors` selectors.
async fn converge(
    setup: &Setup,
    admin: &AdminClient,
    gateway: &GatewayClient,
    selectors: usize,
    when: &str,
) -> Result<(), Failed> {
    await_convergence(CONVERGE, || async {
        let a = admin.digest().await.map_err(|e| e.to_string())?;
        let g = gateway.digest().await.map_err(|e| e.to_string())?;
        if a.digest == g.report.digest && a.selectors == selectors {
            Ok(())
        } else {
            Err(format!("admin {a:?}, gateway {g:?}"))
        }
    })
    .await
    .map_err(|t| {
        format!(
            "{when}: no convergence after {:?}: {}\n{}",
            t.waited,
            t.last,
            setup.logs()
        )
    })?;
    Ok(())
}

async fn delete_reaches_gateway(kind: StoreKind) -> Result<(), Failed> {
    let mut setup = Setup::start(kind).await?;
    let gateway = setup.start_gateway().await?;
    let admin = setup.admin().await?;
    let keep = create_route(&admin, "keep").await?;
    let gone = create_route(&admin, "gone").await?;
    converge(&setup, &admin, &gateway, 2, "after creating two selectors").await?;
    admin.delete_selectors(std::slice::from_ref(&gone)).await?;
    converge(&setup, &admin, &gateway, 1, "after deleting one").await?;
    admin.delete_selectors(&[keep]).await?;
    converge(&setup, &admin, &gateway, 0, "after deleting the other").await?;
    let rules = gateway.digest().await?.report.rules;
    if rules != 0 {
        return Err(format!("the gateway still holds {rules} rules").into());
    }
    setup.finish()
}

async fn late_gateway_converges(kind: StoreKind) -> Result<(), Failed> {
    let mut setup = Setup::start(kind).await?;
    let admin = setup.admin().await?;
    for name in ["a", "b", "c"] {
        create_route(&admin, name).await?;
    }
    let gateway = setup.start_gateway().await?;
    converge(
        &setup,
        &admin,
        &gateway,
        3,
        "a gateway started after the writes",
    )
    .await?;
    setup.finish()
}

async fn server_restart_converges(kind: StoreKind) -> Result<(), Failed> {
    let mut setup = Setup::start(kind).await?;
    let gateway = setup.start_gateway().await?;
    let admin = setup.admin().await?;
    let first = create_route(&admin, "before").await?;
    converge(&setup, &admin, &gateway, 1, "before the restart").await?;
    // Down: the admin commits changes it cannot publish yet.
    setup.server_mut().stop().await;
    create_route(&admin, "while-down").await?;
    admin.delete_selectors(&[first]).await?;
    setup.server_mut().restart().await?;
    converge(&setup, &admin, &gateway, 1, "after the restart").await?;
    // And the sync keeps working.
    create_route(&admin, "after").await?;
    converge(
        &setup,
        &admin,
        &gateway,
        2,
        "after a change past the restart",
    )
    .await?;
    setup.finish()
}

/// The wait for a ZooKeeper session to expire fails on a session that does not expire (the
/// gateway keeps pinging) and on one ZooKeeper does not list: `expireSession` cannot pass on
/// a stall that never expired anything.
async fn expiry_wait_fails_on_a_live_session(kind: StoreKind) -> Result<(), Failed> {
    use harness::internals::fault::zookeeper::{gateway_session, wait_expired};
    let mut setup = Setup::start(kind).await?;
    setup.start_gateway().await?;
    let url = setup.gateway.as_ref().ok_or("no gateway")?.url().to_owned();
    // The gateway reports its session once connected.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let session = loop {
        match gateway_session(&url).await {
            Ok(session) => break session,
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(e.into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    let port = setup.server().port();
    let e = wait_expired(port, "0x1", Duration::ZERO)
        .await
        .expect_err("a session ZooKeeper does not list expired");
    if !e.to_string().contains("ZooKeeper lists no session 0x1") {
        return Err(format!("unexpected error: {e}").into());
    }
    let e = wait_expired(port, &session, Duration::ZERO)
        .await
        .expect_err("a live session expired");
    if !e
        .to_string()
        .contains(&format!("session {session} (timeout"))
    {
        return Err(format!("unexpected error: {e}\n{}", setup.logs()).into());
    }
    setup.finish()
}

fn block_on<F: Future<Output = Result<(), Failed>>>(f: F) -> Result<(), Failed> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f)
}

/// The trials, `<test>@<mode>` for zookeeper then etcd; every trial of a mode is ignored (with
/// a note on stderr) when its server is not installed, unless `GANTRY_REQUIRE` names it.
pub(crate) fn trials() -> Vec<Trial> {
    let mut trials = Vec::new();
    for kind in [StoreKind::Zookeeper, StoreKind::Etcd] {
        let mode = kind.mode();
        let skip = component::skip_reason(&ProcessEnv, mode);
        if let Some(reason) = &skip {
            eprintln!("note: every `@{mode}` trial is ignored: {reason}");
        }
        let ignored = skip.is_some();
        trials.push(
            Trial::test(format!("delete_reaches_gateway@{mode}"), move || {
                block_on(delete_reaches_gateway(kind))
            })
            .with_ignored_flag(ignored),
        );
        trials.push(
            Trial::test(format!("late_gateway_converges@{mode}"), move || {
                block_on(late_gateway_converges(kind))
            })
            .with_ignored_flag(ignored),
        );
        trials.push(
            Trial::test(format!("server_restart_converges@{mode}"), move || {
                block_on(server_restart_converges(kind))
            })
            .with_ignored_flag(ignored),
        );
        if kind == StoreKind::Zookeeper {
            trials.push(
                Trial::test(
                    format!("expiry_wait_fails_on_a_live_session@{mode}"),
                    move || block_on(expiry_wait_fails_on_a_live_session(kind)),
                )
                .with_ignored_flag(ignored),
            );
        }
    }
    trials
}
