//! The `gantry/postgres:dev` image (Debian's PostgreSQL `FROM scratch`, built with the other
//! images): a container of it makes its cluster on the first start, lets `gantry` in from the
//! host through its published port, answers SQL, and keeps its data across a `docker stop`
//! (a fast shutdown) and a start, which does not make the cluster again.
//!
//! Needs a Docker engine (ignored without one, failing with `GANTRY_REQUIRE_DOCKER=1`) and the
//! host's `postgresql` package the image is made from, whose `psql` the trial talks SQL with
//! (ignored without it unless `GANTRY_REQUIRE` names `postgres`).

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::internals::backend::component::postgres;
use harness::internals::backend::docker::{self, EngineCheck, HOST_LABEL, PID_LABEL, RUN_LABEL};
use harness::testcontainers::core::IntoContainerPort;
use harness::testcontainers::runners::AsyncRunner;
use harness::testcontainers::{ContainerAsync, GenericImage, ImageExt};
use harness::{BackendKind, ProcessEnv, RunOptions};
use libtest_mimic::{Failed, Trial};

/// The image's repository and tag.
const IMAGE: (&str, &str) = ("gantry/postgres", "dev");
/// PostgreSQL's port inside the container.
const PORT: u16 = 5432;
/// How long the container may take to let `gantry` in (it runs `initdb` first).
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Builds the images the docker backend uses (the release build first, unless
/// `GANTRY_BIN_DIR` is set: then they must exist), then checks that the PostgreSQL one is
/// there.
async fn image() -> Result<(), Failed> {
    let opts = RunOptions {
        backend: BackendKind::Docker,
        ..RunOptions::from_env(&ProcessEnv)
    };
    tokio::task::spawn_blocking(move || harness::prepare(&opts)).await??;
    let tag = format!("{}:{}", IMAGE.0, IMAGE.1);
    docker::connect()
        .await?
        .inspect_image(&tag)
        .await
        .map_err(|e| format!("{tag} is missing ({e}); `gantry images` builds it"))?;
    Ok(())
}

/// `sql` through `psql` as `gantry` into `postgres` on loopback `port`: its unaligned output.
fn psql(port: u16, sql: &str) -> Result<String, String> {
    let out = Command::new("psql")
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-U", "gantry", "-d", "postgres", "-c", sql])
        .env("PGCONNECT_TIMEOUT", "2")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running psql: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

/// Polls `select 1` on the published port of `container` until it answers (returns that port
/// and how long it took), or fails with its log after [`READY_TIMEOUT`].
async fn ready(container: &ContainerAsync<GenericImage>) -> Result<(u16, Duration), Failed> {
    let port = container.get_host_port_ipv4(PORT.tcp()).await?;
    let start = Instant::now();
    loop {
        let last = match tokio::task::spawn_blocking(move || psql(port, "select 1")).await? {
            Ok(one) if one == "1" => return Ok((port, start.elapsed())),
            Ok(other) => format!("select 1 answered {other:?}"),
            Err(e) => e,
        };
        if start.elapsed() > READY_TIMEOUT {
            let log = container.stderr_to_vec().await.unwrap_or_default();
            return Err(format!(
                "not ready after {READY_TIMEOUT:?}: {last}; log:\n{}",
                String::from_utf8_lossy(&log)
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A container of the image makes its cluster and answers SQL; its data outlives a stop and a
/// start, which find the cluster made.
fn round_trip() -> Result<(), Failed> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        image().await?;
        let run = format!("pgtest{}", std::process::id());
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")?;
        let labels = HashMap::from([
            (RUN_LABEL.to_owned(), run.clone()),
            (PID_LABEL.to_owned(), std::process::id().to_string()),
            (HOST_LABEL.to_owned(), host.trim().to_owned()),
        ]);
        let container = GenericImage::new(IMAGE.0, IMAGE.1)
            .with_exposed_port(PORT.tcp())
            .with_container_name(format!("gantry-{run}-postgres"))
            .with_labels(labels)
            .with_cmd(["-c", "fsync=off"])
            .start()
            .await?;
        let (port, took) = ready(&container).await?;
        eprintln!("gantry/postgres:dev let gantry in {took:?} after its start (initdb included)");
        let sql = "create table kv (k text primary key, v int); \
                   insert into kv values ('a', 1), ('b', 2); \
                   select string_agg(k || '=' || v, ',' order by k) from kv";
        let answer = tokio::task::spawn_blocking(move || psql(port, sql)).await??;
        if answer != "a=1,b=2" {
            return Err(Failed::from(format!("the round trip answered {answer:?}")));
        }
        let settings = "select current_user || ' ' || current_setting('TimeZone') || ' ' \
                        || current_setting('jit') || ' ' || current_setting('fsync')";
        let answer = tokio::task::spawn_blocking(move || psql(port, settings)).await??;
        if answer != "gantry UTC off off" {
            return Err(Failed::from(format!("the settings are {answer:?}")));
        }
        container.stop().await?;
        container.start().await?;
        let (port, took) = ready(&container).await?;
        eprintln!("gantry/postgres:dev let gantry in {took:?} after a restart");
        let answer =
            tokio::task::spawn_blocking(move || psql(port, "select sum(v) from kv")).await??;
        let log = String::from_utf8_lossy(&container.stdout_to_vec().await?).into_owned();
        let initdbs = log.matches("creating directory /data/postgres").count();
        container.rm().await?;
        if answer != "3" || initdbs != 1 {
            return Err(Failed::from(format!(
                "after a restart: sum {answer:?}, initdb ran {initdbs} times"
            )));
        }
        Ok(())
    })
}

/// `docker_postgres::round_trip`, ignored (with a note on stderr) without a Docker engine
/// unless `GANTRY_REQUIRE_DOCKER=1`, or without the host's PostgreSQL unless `GANTRY_REQUIRE`
/// names `postgres`.
pub(crate) fn trials() -> Vec<Trial> {
    let require = std::env::var("GANTRY_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
    let engine = EngineCheck::probe(require);
    let skip = match &engine {
        EngineCheck::Skip(why) => Some(why.clone()),
        _ => postgres::skip_reason(&ProcessEnv),
    };
    if let Some(why) = &skip {
        eprintln!("note: `docker_postgres::round_trip` is ignored: {why}");
    }
    let trial = Trial::test("docker_postgres::round_trip", move || match engine {
        EngineCheck::Available => round_trip(),
        EngineCheck::Skip(why) | EngineCheck::Required(why) => Err(why.into()),
    });
    vec![trial.with_ignored_flag(skip.is_some())]
}
