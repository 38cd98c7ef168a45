//! The Redis component on the host backend: a server starts on a loopback port, answers
//! `PING`, and is gone (process and port) once dropped; a topology asked for it fills
//! `${redis.url}` with its address and stops it; a case asking for `components: [redis]`
//! with `${redis.url}` in a plugin config runs through, and leaves no `redis-server` behind.
//!
//! Trials are `redis::<test>@host`; they are ignored (with a note on stderr) when
//! `redis-server` is not installed, unless `GANTRY_REQUIRE` names `redis`.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use harness::internals::backend::HostServer;
use harness::internals::backend::process::process_alive;
use harness::internals::topology::Topology;
use harness::scenario::ast::Component;
use harness::{Backend, BackendKind, ProcessEnv, RunOptions};
use libtest_mimic::{Failed, Trial};
use model::SyncMode;

/// The case file fixture: `components: [redis]`, the rateLimiter config with `${redis.url}`.
const CASE: &str = include_str!("../../src/scenario/testdata/redis_component.yaml");

/// Sends `PING` to loopback `port`; the answer, or the connect/read error.
fn ping(port: u16) -> Result<String, std::io::Error> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.write_all(b"PING\r\n")?;
    let mut answer = [0u8; 64];
    let n = stream.read(&mut answer)?;
    Ok(String::from_utf8_lossy(&answer[..n]).into_owned())
}

/// Loopback `port` refuses connections (nothing listens there any more); another answer, or
/// another error (a timeout, say), is a failure.
fn refused(port: u16) -> Result<(), String> {
    match ping(port) {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(()),
        Err(e) => Err(format!("port {port}: {e}, not a refused connection")),
        Ok(answer) => Err(format!("port {port} still answers {answer:?}")),
    }
}

/// The pids of the running `redis-server` processes (Linux `/proc`).
fn redis_pids() -> BTreeSet<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("redis-server"))
                && process_alive(*pid)
        })
        .collect()
}

fn runtime() -> Result<tokio::runtime::Runtime, Failed> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Starts a server, checks it answers on its port, drops it, checks process and port are gone.
fn start_and_stop() -> Result<(), Failed> {
    let dir = tempfile::Builder::new().prefix("gantry-redis-").tempdir()?;
    let server = runtime()?.block_on(HostServer::start(
        Component::Redis,
        &dir.path().join("redis"),
    ))?;
    let (port, pid) = (server.port(), server.pid().ok_or("no pid")?);
    if server.url() != format!("127.0.0.1:{port}") {
        return Err(format!("url {} for port {port}", server.url()).into());
    }
    let answer = ping(port)?;
    if !answer.starts_with("+PONG") || !process_alive(pid) {
        return Err(format!("PING answered {answer:?}; log:\n{}", server.log_tail(20)).into());
    }
    drop(server);
    if process_alive(pid) {
        return Err(format!("redis-server {pid} outlived its HostServer").into());
    }
    Ok(refused(port)?)
}

/// A topology asked for Redis fills `${redis.url}` with `127.0.0.1:<port>` of a server that
/// answers, and stops it with the topology.
fn topology_fills_redis_url() -> Result<(), Failed> {
    let bin_dir = harness::internals::backend::host::bin_dir_from_env()?;
    let backend = Backend::new(BackendKind::Host, bin_dir)?;
    let rt = runtime()?;
    let topo = rt.block_on(Topology::start(
        &backend,
        SyncMode::Websocket,
        &[],
        &[Component::Redis],
        false,
    ))?;
    let url = topo
        .placeholder_values()
        .redis_url
        .ok_or("no ${redis.url}")?;
    let port: u16 = url
        .strip_prefix("127.0.0.1:")
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("${{redis.url}} is {url}"))?;
    let answer = ping(port)?;
    if !answer.starts_with("+PONG") {
        return Err(format!("{url} answered {answer:?}").into());
    }
    drop(topo);
    refused(port).map_err(|e| format!("after the topology: {e}").into())
}

/// Runs the fixture case (websocket) on the host backend: Redis starts, the rateLimiter config
/// takes its address, the case passes, and no `redis-server` it started is left.
fn case_with_redis_runs() -> Result<(), Failed> {
    let scenario = harness::scenario::parse_str(Path::new("redis_component.yaml"), CASE)?;
    if scenario.components != [Component::Redis] {
        return Err(format!("components {:?}", scenario.components).into());
    }
    let bin_dir = harness::internals::backend::host::bin_dir_from_env()?;
    let backend = Backend::new(BackendKind::Host, bin_dir)?;
    let opts = RunOptions {
        backend: BackendKind::Host,
        ..RunOptions::from_env(&ProcessEnv)
    };
    let before = redis_pids();
    let outcome = runtime()?.block_on(harness::run_case(
        &scenario,
        SyncMode::Websocket,
        &backend,
        &opts,
        &|_| {},
    ));
    let left: Vec<u32> = redis_pids().difference(&before).copied().collect();
    outcome?;
    if left.is_empty() {
        Ok(())
    } else {
        Err(format!("redis-server processes left behind: {left:?}").into())
    }
}

/// The trials; ignored (with a note) when `redis-server` is missing and not required.
pub(crate) fn trials() -> Vec<Trial> {
    let skip =
        harness::internals::backend::component::redis::skip_reason(&ProcessEnv, Component::Redis);
    if let Some(reason) = &skip {
        eprintln!("note: every `redis::` trial is ignored: {reason}");
    }
    vec![
        Trial::test("redis::start_and_stop@host", start_and_stop).with_ignored_flag(skip.is_some()),
        Trial::test(
            "redis::topology_fills_redis_url@host",
            topology_fills_redis_url,
        )
        .with_ignored_flag(skip.is_some()),
        Trial::test("redis::case_with_redis_runs@host", case_with_redis_runs)
            .with_ignored_flag(skip.is_some()),
    ]
}
