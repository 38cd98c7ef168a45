//! The docker backend leaves nothing behind: no container or network labelled with a run's
//! id remains after a passing case, a failing case, a panic, or Ctrl-C on `gantry run`; a
//! failing case's report carries the containers' logs; and leftovers of dead harness processes
//! are swept when the backend opens; a case's Redis component is a container of its run; a
//! partition cuts the gateway off its sync network only, and the heal and a restart keep
//! its addresses.
//!
//! Needs a Docker engine: without one these trials are ignored (a note on stderr says so),
//! with `GANTRY_REQUIRE_DOCKER=1` they fail. Images are built on first use.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use harness::internals::backend::docker::{self, EngineCheck, Labelled};
use harness::internals::topology::{Shape, Topology};
use harness::scenario::ast::{Component, FaultAction, Link, Target, UpstreamDecl};
use harness::{Backend, BackendKind, ProcessEnv, RunOptions};
use libtest_mimic::{Failed, Trial};
use model::SyncMode;

const FAILING: &str = r#"
name: docker_failing
description: routes to alpha, but a check expects a status nobody answers
modes: [websocket]
upstreams: [alpha]
setup:
  selectors:
    - name: failing
      plugin: divide
      conditions:
        - { paramType: uri, operator: "=", paramValue: /docker/fail }
      upstreams:
        - { upstream: alpha }
      rules:
        - name: failing-rule
          conditions:
            - { paramType: uri, operator: "=", paramValue: /docker/fail }
wait:
  probe:
    request: { method: GET, path: /docker/fail }
    expect: { status: 200, upstream: alpha }
checks:
  - name: a status nobody answers
    request: { method: GET, path: /docker/fail }
    expect: { status: 418 }
"#;

fn opts() -> RunOptions {
    // Builds the static binaries and any missing or stale image first, unless
    // GANTRY_BIN_DIR is set (then the images must exist).
    RunOptions {
        backend: BackendKind::Docker,
        ..RunOptions::from_env(&ProcessEnv)
    }
}

fn backend() -> Result<&'static Backend, Failed> {
    static BACKEND: OnceLock<Result<Backend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| harness::prepare(&opts()).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| e.into())
}

fn runtime() -> Result<tokio::runtime::Runtime, Failed> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// The containers and networks labelled `filter`.
async fn labelled_now(filter: &str) -> Result<(Vec<Labelled>, Vec<Labelled>), Failed> {
    let d = docker::connect().await?;
    Ok(docker::labelled(&d, filter).await?)
}

/// [`labelled_now`], from synchronous code.
fn labelled(filter: &str) -> Result<(Vec<Labelled>, Vec<Labelled>), Failed> {
    runtime()?.block_on(labelled_now(filter))
}

fn assert_gone(filter: &str) -> Result<(), Failed> {
    let (containers, networks) = labelled(filter)?;
    if containers.is_empty() && networks.is_empty() {
        return Ok(());
    }
    let names: Vec<_> = containers
        .iter()
        .chain(&networks)
        .map(|o| &o.name)
        .collect();
    Err(format!("left behind for {filter}: {names:?}").into())
}

fn run_label(id: &str) -> String {
    format!("{}={id}", docker::RUN_LABEL)
}

fn after_pass() -> Result<(), Failed> {
    let backend = backend()?;
    let id = runtime()?.block_on(async {
        let topo = Topology::start(
            backend,
            SyncMode::Websocket,
            &[UpstreamDecl::echo("alpha")],
            &[],
            false,
        )
        .await?;
        let id = topo.docker_run_id().ok_or("not a docker run")?.to_owned();
        let (containers, networks) = labelled_now(&run_label(&id)).await?;
        let mut names: Vec<_> = containers.into_iter().map(|c| c.name).collect();
        names.sort();
        let prefix = format!("gantry-{id}-");
        let expected = ["admin", "gateway", "upstream-alpha"].map(|n| format!("{prefix}{n}"));
        let mut networks: Vec<_> = networks.into_iter().map(|n| n.name).collect();
        networks.sort();
        let expected_networks = [format!("gantry-{id}"), format!("gantry-{id}-sync")];
        if names != expected || networks != expected_networks {
            return Err(Failed::from(format!(
                "while running: {names:?}, {networks:?}"
            )));
        }
        drop(topo);
        Ok::<_, Failed>(id)
    })?;
    assert_gone(&run_label(&id))
}

/// `gantry-<10 hex>-admin` in `text`: the run id.
fn run_id_in(text: &str) -> Option<String> {
    text.match_indices("gantry-").find_map(|(i, _)| {
        let id = text.get(i + 7..i + 17)?;
        let ok = id.chars().all(|c| c.is_ascii_hexdigit()) && text[i + 17..].starts_with("-admin");
        ok.then(|| id.to_owned())
    })
}

fn after_failure() -> Result<(), Failed> {
    let backend = backend()?;
    let scenario = harness::scenario::parse_str(Path::new("docker_failing.yaml"), FAILING)?;
    let outcome = runtime()?.block_on(harness::run_case(
        &scenario,
        SyncMode::Websocket,
        backend,
        &opts(),
        &|_| {},
    ));
    let err = match outcome {
        Ok(_) => return Err("the failing scenario passed".into()),
        Err(e) => e.to_string(),
    };
    if !err.contains("failed at checks") || !err.contains("listening on http://0.0.0.0:9195") {
        return Err(format!("no container logs in the report:\n{err}").into());
    }
    let id = run_id_in(&err).ok_or_else(|| format!("no run id in:\n{err}"))?;
    assert_gone(&run_label(&id))
}

/// A gateway that leaks 256 KiB a request, held to 24 MiB: its container is killed by the
/// OOM killer within the check's 600 requests (150 MiB leaked), and the failure says so,
/// naming the limit (on swarm too: `swarm::out_of_memory_is_reported_on_swarm`).
pub(crate) const OUT_OF_MEMORY: &str = r#"
name: docker_out_of_memory
modes: [websocket]
backends: [docker]
upstreams: [alpha]
resources:
  gateway: { memory: 24MiB }
setup:
  selectors:
    - name: oom
      plugin: divide
      conditions:
        - { paramType: uri, operator: startsWith, paramValue: /docker/oom/ }
      upstreams:
        - { upstream: alpha }
      rules:
        - name: all
          conditions:
            - { paramType: uri, operator: startsWith, paramValue: /docker/oom/ }
wait:
  probe:
    request: { path: /docker/oom/probe }
    expect: { status: 200, upstream: alpha }
checks:
  - name: six hundred requests
    request: { path: /docker/oom/a }
    expect: { status: 200, upstream: alpha }
    repeat: 600
"#;

fn out_of_memory_is_reported() -> Result<(), Failed> {
    let backend = (backend()?.clone())
        .with_gateway_args(vec!["--emulate-bug".into(), "leak-per-request".into()]);
    let scenario =
        harness::scenario::parse_str(Path::new("docker_out_of_memory.yaml"), OUT_OF_MEMORY)?;
    let outcome = runtime()?.block_on(harness::run_case(
        &scenario,
        SyncMode::Websocket,
        &backend,
        &opts(),
        &|_| {},
    ));
    let err = match outcome {
        Ok(_) => return Err("a gateway leaking past its memory limit passed".into()),
        Err(e) => e.to_string(),
    };
    let said = "gateway (memory limit 24MiB) killed by the kernel's OOM killer (docker: OOMKilled)";
    if !err.contains(said) {
        return Err(format!("the failure does not say `{said}`:\n{err}").into());
    }
    let id = run_id_in(&err).ok_or_else(|| format!("no run id in:\n{err}"))?;
    assert_gone(&run_label(&id))
}

/// The failing cases of the upstream and sync links, moved to docker: the toxics reach the
/// proxy containers (the judgement fails as on the host, naming what it saw), and the proxy
/// containers go with the run.
fn network_faults_fail_through_proxy_containers() -> Result<(), Failed> {
    let backend = backend()?;
    let failing = concat!(env!("CARGO_MANIFEST_DIR"), "/../cases/failing/");
    for (stem, said) in [
        ("network_upstream_unmet", "status: expected 200, got 504"),
        ("network_latency_late", "upstream: expected beta, got alpha"),
    ] {
        let file = format!("{failing}{stem}.yaml");
        let text = std::fs::read_to_string(&file)?;
        let on_docker = text.replace("backends: [host]", "backends: [docker]");
        let scenario = harness::scenario::parse_str(Path::new(&file), &on_docker)?;
        let outcome = runtime()?.block_on(harness::run_case(
            &scenario,
            SyncMode::Websocket,
            backend,
            &opts(),
            &|_| {},
        ));
        let err = match outcome {
            Ok(_) => return Err(format!("{stem} passed on docker").into()),
            Err(e) => e.to_string(),
        };
        if !err.contains(said) {
            return Err(format!("{stem} on docker does not say `{said}`:\n{err}").into());
        }
        let id = run_id_in(&err).ok_or_else(|| format!("no run id in:\n{err}"))?;
        assert_gone(&run_label(&id))?;
    }
    Ok(())
}

fn after_panic() -> Result<(), Failed> {
    let backend = backend()?;
    let seen = Arc::new(Mutex::new(None::<String>));
    let seen2 = Arc::clone(&seen);
    let rt = runtime()?;
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        rt.block_on(async move {
            let topo = Topology::start(backend, SyncMode::Websocket, &[], &[], false)
                .await
                .expect("the topology starts");
            *seen2.lock().expect("not poisoned") = topo.docker_run_id().map(str::to_owned);
            panic!("a scenario panicked while its topology ran");
        })
    }));
    if unwound.is_ok() {
        return Err("did not panic".into());
    }
    let id = seen
        .lock()
        .expect("not poisoned")
        .clone()
        .ok_or("no run id")?;
    assert_gone(&run_label(&id))
}

/// Ctrl-C on `gantry run --backend docker` once its containers are up removes them.
fn after_ctrl_c() -> Result<(), Failed> {
    backend()?;
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../cases/scenarios/divide/uri_equal.yaml"
    );
    let mut child = Command::new(crate::gantry_exe())
        .args(["run", "--backend", "docker", "--no-build", scenario])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid_filter = format!("{}={}", docker::PID_LABEL, child.id());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (containers, _) = labelled(&pid_filter)?;
        if containers.iter().any(|c| c.name.ends_with("-gateway")) {
            break;
        }
        if Instant::now() > deadline || child.try_wait()?.is_some() {
            let _ = child.kill();
            let _ = child.wait();
            return Err("gantry run never had its gateway container up".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()?;
    if !status.success() {
        return Err("kill -INT failed".into());
    }
    let code = child.wait()?.code();
    if code != Some(130) {
        return Err(format!("gantry run exited with {code:?}, expected 130").into());
    }
    assert_gone(&pid_filter)
}

/// A topology asked for Redis runs `gantry-<id>-redis` (ready: it answered `PING` through its
/// published port), fills `${redis.url}` with its name on the run's network, and the container
/// goes with the run.
fn redis_component_goes_with_its_run() -> Result<(), Failed> {
    let backend = backend()?;
    let id = runtime()?.block_on(async {
        let topo = Topology::start(
            backend,
            SyncMode::Websocket,
            &[],
            &[Component::Redis],
            false,
        )
        .await?;
        let id = topo.docker_run_id().ok_or("not a docker run")?.to_owned();
        let url = topo.placeholder_values().redis_url;
        if url.as_deref() != Some(format!("gantry-{id}-redis:6379").as_str()) {
            return Err(Failed::from(format!("${{redis.url}} is {url:?}")));
        }
        let (containers, _) = labelled_now(&run_label(&id)).await?;
        if !containers
            .iter()
            .any(|c| c.name == format!("gantry-{id}-redis"))
        {
            return Err(Failed::from(format!("no redis container: {containers:?}")));
        }
        drop(topo);
        Ok::<_, Failed>(id)
    })?;
    assert_gone(&run_label(&id))
}

/// The sync-network address of container `name`, if it is on that network of run `id`.
async fn sync_address(id: &str, name: &str) -> Result<Option<String>, Failed> {
    let d = docker::connect().await?;
    let inspect = d.inspect_container(name, None).await?;
    Ok(inspect
        .network_settings
        .and_then(|n| n.networks)
        .and_then(|mut n| n.remove(&format!("gantry-{id}-sync")))
        .and_then(|e| e.ip_address))
}

/// `GET <url>/actuator/health` answers 200.
async fn healthy(url: &str) -> Result<(), Failed> {
    let status = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()?
        .get(format!("{url}/actuator/health"))
        .send()
        .await?
        .status();
    match status.as_u16() {
        200 => Ok(()),
        other => Err(format!("{url}/actuator/health answered {other}").into()),
    }
}

/// A partition disconnects the gateway from the run's sync network only: its published port
/// still answers, and the heal puts it back at its old address. A restarted gateway answers
/// at the same published port; a restarted (and a killed, then started) admin comes back at
/// its sync-network address, where the gateway's connections pointed.
fn partition_keeps_the_published_port() -> Result<(), Failed> {
    let backend = backend()?;
    let id = runtime()?.block_on(async {
        let topo = Topology::start_with(
            backend,
            SyncMode::Websocket,
            &[UpstreamDecl::echo("alpha")],
            &[],
            false,
            &Shape {
                proxies: [Link::Sync].into(),
                ..Shape::default()
            },
        )
        .await?;
        let id = topo.docker_run_id().ok_or("not a docker run")?.to_owned();
        let gateway = topo.gateway().name().to_owned();
        let url = topo.gateway().url().to_owned();
        let before = sync_address(&id, &gateway)
            .await?
            .ok_or("the gateway is not on the sync network")?;
        topo.partition(harness::internals::fault::Mode::Blackhole)
            .await?;
        if let Some(ip) = sync_address(&id, &gateway).await? {
            return Err(Failed::from(format!("still on the sync network at {ip}")));
        }
        healthy(&url).await?;
        topo.heal().await?;
        let after = sync_address(&id, &gateway).await?;
        if after.as_deref() != Some(before.as_str()) {
            return Err(Failed::from(format!(
                "healed at {after:?}, was at {before}"
            )));
        }
        topo.fault(FaultAction::Restart, Target::Gateway(None))
            .await?;
        if topo.gateway().url() != url {
            return Err(Failed::from(format!(
                "restarted at {}, was at {url}",
                topo.gateway().url()
            )));
        }
        healthy(&url).await?;
        let admin = topo.admin().name().to_owned();
        let admin_at = sync_address(&id, &admin).await?;
        for action in [FaultAction::Restart, FaultAction::Kill, FaultAction::Start] {
            topo.fault(action, Target::Admin(None)).await?;
            if action == FaultAction::Kill {
                continue;
            }
            let now = sync_address(&id, &admin).await?;
            if now != admin_at {
                return Err(Failed::from(format!(
                    "the admin came back at {now:?} after {action:?}, was at {admin_at:?}"
                )));
            }
        }
        drop(topo);
        Ok::<_, Failed>(id)
    })?;
    assert_gone(&run_label(&id))
}

/// The library as a user's own docker test uses it: a [`harness::Gantry`] on docker, a
/// container of the user's own started with the re-exported testcontainers on the run's
/// upstream network, a route to it by container name; the gateway answers from it, and
/// nothing of the run is left once theirs is dropped and gantry closed.
fn a_container_of_your_own_sits_beside_gantry() -> Result<(), Failed> {
    use harness::testcontainers::core::IntoContainerPort;
    use harness::testcontainers::runners::AsyncRunner;
    use harness::testcontainers::{GenericImage, ImageExt};
    backend()?;
    let id = runtime()?.block_on(async {
        let gantry = harness::Gantry::builder(SyncMode::Websocket)
            .backend(BackendKind::Docker)
            .start()
            .await?;
        let id = gantry
            .topology()
            .docker_run_id()
            .ok_or("not a docker run")?
            .to_owned();
        let (network, _) = gantry.docker_networks().ok_or("no docker networks")?;
        let name = format!("gantry-{id}-theirs");
        let theirs = GenericImage::new("gantry/upstream", "dev")
            .with_exposed_port(8080.tcp())
            .with_network(&network)
            .with_container_name(&name)
            .with_cmd(["--name", "theirs", "--bind", "0.0.0.0", "--port", "8080"])
            .start()
            .await?;
        let admin = gantry.admin().await?;
        gantry
            .route_to_address(&admin, "theirs", "/theirs/", &format!("{name}:8080"))
            .await?;
        gantry.converged().await?;
        let url = format!("{}/theirs/hello", gantry.gateway_url());
        let answer = reqwest::Client::builder()
            .no_proxy()
            .build()?
            .get(&url)
            .send()
            .await?;
        let from = answer
            .headers()
            .get("x-gantry-upstream")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if answer.status() != 200 || from.as_deref() != Some("theirs") {
            return Err(Failed::from(format!(
                "GET {url} answered {} from {from:?}, not 200 from theirs",
                answer.status()
            )));
        }
        drop(theirs);
        gantry.close().await;
        Ok::<_, Failed>(id)
    })?;
    assert_gone(&run_label(&id))
}

/// A network left by a harness whose pid is gone is removed when the backend opens; one of a
/// live harness (this one) is not.
fn stale_runs_are_swept() -> Result<(), Failed> {
    backend()?;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")?
        .trim()
        .to_owned();
    let make = |run: &str, pid: String| bollard::models::NetworkCreateRequest {
        name: format!("gantry-{run}"),
        labels: Some(HashMap::from([
            (docker::RUN_LABEL.to_owned(), run.to_owned()),
            (docker::PID_LABEL.to_owned(), pid),
            (docker::HOST_LABEL.to_owned(), host.clone()),
        ])),
        ..Default::default()
    };
    let stale = make("stale00000", "999999999".into());
    let live = make("live000000", std::process::id().to_string());
    runtime()?.block_on(async {
        let d = docker::connect().await?;
        d.create_network(stale).await?;
        d.create_network(live).await?;
        Ok::<_, Failed>(())
    })?;
    harness::internals::backend::DockerBackend::open(None)?;
    let (_, live_left) = labelled(&run_label("live000000"))?;
    runtime()?.block_on(async {
        let d = docker::connect().await?;
        docker::remove_run(&d, "live000000").await?;
        Ok::<_, Failed>(())
    })?;
    if live_left.len() != 1 {
        return Err(format!("the live run's network was touched: {live_left:?}").into());
    }
    assert_gone(&run_label("stale00000"))
}

/// One cleanup check.
type Check = fn() -> Result<(), Failed>;

/// The cleanup trials, named `docker::<test>`: the engine is probed once (honouring
/// `GANTRY_REQUIRE_DOCKER`); without one they are ignored with a note on stderr, or fail when
/// it is required.
pub(crate) fn trials() -> Vec<Trial> {
    let require = std::env::var("GANTRY_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
    let engine = EngineCheck::probe(require);
    if let EngineCheck::Skip(why) = &engine {
        eprintln!("note: {why}");
    }
    let tests: [(&str, Check); 11] = [
        ("docker::no_leftovers_after_pass", after_pass),
        ("docker::no_leftovers_after_failure", after_failure),
        ("docker::no_leftovers_after_panic", after_panic),
        ("docker::no_leftovers_after_ctrl_c", after_ctrl_c),
        ("docker::stale_runs_are_swept", stale_runs_are_swept),
        (
            "docker::redis_component_goes_with_its_run",
            redis_component_goes_with_its_run,
        ),
        (
            "docker::partition_keeps_the_published_port",
            partition_keeps_the_published_port,
        ),
        (
            "docker::out_of_memory_is_reported",
            out_of_memory_is_reported,
        ),
        (
            "docker::network_faults_fail_through_proxy_containers",
            network_faults_fail_through_proxy_containers,
        ),
        (
            "docker::a_container_of_your_own_sits_beside_gantry",
            a_container_of_your_own_sits_beside_gantry,
        ),
        (
            "docker::external_target_from_compose",
            super::external::from_compose,
        ),
    ];
    tests
        .into_iter()
        .map(|(name, f)| {
            let ignored = matches!(engine, EngineCheck::Skip(_));
            let engine = engine.clone();
            Trial::test(name, move || match engine {
                EngineCheck::Available => f(),
                EngineCheck::Skip(why) | EngineCheck::Required(why) => Err(why.into()),
            })
            .with_ignored_flag(ignored)
        })
        .collect()
}
