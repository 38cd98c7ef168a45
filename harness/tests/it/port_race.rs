//! A middleware server whose port another process took between the harness's pick and the
//! server's bind starts again on a fresh port, and keeps the failed start's log (which says
//! the port was in use): a real server each, started on a port this test holds.
//!
//! Trials are `port_race::a_taken_port_is_replaced@<server>` for ZooKeeper, etcd and
//! PostgreSQL; each is ignored (with a note on stderr) when its server is not installed,
//! unless `GANTRY_REQUIRE` names it (then it fails).

use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;

use harness::ProcessEnv;
use harness::internals::backend::HostServer;
use harness::internals::backend::component::{self, StoreKind};
use libtest_mimic::{Failed, Trial};

/// A loopback port this process holds (while the listener lives).
fn taken_port() -> Result<(TcpListener, u16), Failed> {
    let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let port = taken.local_addr()?.port();
    Ok((taken, port))
}

/// The failed first start's log, `log`, must exist and say the port was in use.
fn first_start_lost_the_port(log: &Path) -> Result<(), Failed> {
    let first = std::fs::read_to_string(log)
        .map_err(|e| format!("the first start's log {}: {e}", log.display()))?;
    if first
        .to_ascii_lowercase()
        .contains("address already in use")
    {
        Ok(())
    } else {
        Err(format!(
            "{} does not say the port was in use:\n{first}",
            log.display()
        )
        .into())
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Failed> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// A ZooKeeper or etcd server asked to start on a taken port runs on another one.
fn store_port_is_replaced(kind: StoreKind) -> Result<(), Failed> {
    let (_taken, port) = taken_port()?;
    let dir = tempfile::Builder::new().prefix("gantry-race-").tempdir()?;
    let server = runtime()?.block_on(HostServer::start_on(kind, dir.path(), port))?;
    if server.port() == port {
        return Err(format!("{} runs on the taken port {port}", kind.name()).into());
    }
    first_start_lost_the_port(&dir.path().join(format!("{}.log.1", kind.name())))
}

/// A PostgreSQL server asked to start on a taken port runs on another one.
fn postgres_port_is_replaced() -> Result<(), Failed> {
    let (_taken, port) = taken_port()?;
    let server = runtime()?.block_on(HostServer::start_postgres_on(false, port))?;
    let url = server.url();
    if url.contains(&format!(":{port}/")) {
        return Err(format!("postgres runs on the taken port: {url}").into());
    }
    first_start_lost_the_port(&server.dir().join("postgres.log.1"))
}

/// The trial `port_race::a_taken_port_is_replaced@<server>`, ignored (with a note) for `skip`.
fn trial(
    server: &str,
    skip: Option<&str>,
    test: impl FnOnce() -> Result<(), Failed> + Send + 'static,
) -> Trial {
    let name = format!("port_race::a_taken_port_is_replaced@{server}");
    if let Some(reason) = skip {
        eprintln!("note: `{name}` is ignored: {reason}");
    }
    Trial::test(name, test).with_ignored_flag(skip.is_some())
}

/// The trials: one per server kind.
pub(crate) fn trials() -> Vec<Trial> {
    let mut trials: Vec<Trial> = [StoreKind::Zookeeper, StoreKind::Etcd]
        .into_iter()
        .map(|kind| {
            let skip = component::skip_reason(&ProcessEnv, kind.mode());
            trial(kind.name(), skip.as_deref(), move || {
                store_port_is_replaced(kind)
            })
        })
        .collect();
    trials.push(trial(
        "postgres",
        component::postgres::skip_reason(&ProcessEnv).as_deref(),
        postgres_port_is_replaced,
    ));
    trials
}
