//! The swarm backend (`--backend swarm`): a topology runs as Swarm services on overlay
//! networks, faults go through Swarm (a killed task is replaced by Swarm on the same host
//! port, a stop scales the service to zero, a restart is a rolling update), and nothing is left
//! behind: no service, container, network or volume of the run, and the engine's swarm state
//! as it was found (an engine in no swarm is made one for the run and leaves it after). The
//! ShenYu #3900 scenario fails on admins that pass on no other admin's commits; a gateway task
//! past its memory limit is reported killed by the OOM killer. A run killed
//! with SIGKILL is swept by the next backend to open, its swarm left; `gantry bench fanout
//! --backend swarm` times every gateway task.
//!
//! One trial, so nothing else in this binary holds the swarm meanwhile. Needs a Docker engine
//! (ignored without one, failing with `GANTRY_REQUIRE_DOCKER=1`) and the images.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::internals::backend::docker::{self, EngineCheck};
use harness::internals::topology::Topology;
use harness::scenario::ast::{FaultAction, Target, UpstreamDecl};
use harness::{BackendKind, ProcessEnv, RunOptions};
use libtest_mimic::{Failed, Trial};
use model::SyncMode;

/// The engine's swarm state (`inactive`, `active`, ...).
fn swarm_state() -> Result<String, Failed> {
    let out = Command::new("docker")
        .args(["info", "--format", "{{.Swarm.LocalNodeState}}"])
        .output()?;
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

/// The running containers of Swarm service `service`.
fn task_containers(service: &str) -> Result<Vec<String>, Failed> {
    let out = Command::new("docker")
        .args(["ps", "-q", "--no-trunc", "--filter"])
        .arg(format!("label=com.docker.swarm.service.name={service}"))
        .output()?;
    Ok(String::from_utf8(out.stdout)?
        .lines()
        .map(str::to_owned)
        .collect())
}

/// Whether `url`'s health endpoint answers 200 now.
async fn answers(url: &str) -> bool {
    reqwest::get(format!("{url}/actuator/health"))
        .await
        .is_ok_and(|r| r.status().is_success())
}

fn services_volumes_and_the_swarm_as_found() -> Result<(), Failed> {
    let before = swarm_state()?;
    if before == "active" && !docker::swarm_made_by_gantry() {
        eprintln!("note: the engine is in a swarm of its own: it must stay in it");
    }
    let opts = RunOptions {
        backend: BackendKind::Swarm,
        ..RunOptions::from_env(&ProcessEnv)
    };
    let backend = harness::prepare(&opts)?;
    if swarm_state()? != "active" {
        return Err("the backend is open, but the engine is in no swarm".into());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let label = rt.block_on(async {
        let topo = Topology::start(
            &backend,
            SyncMode::Websocket,
            &[UpstreamDecl::echo("alpha")],
            &[],
            false,
        )
        .await?;
        let id = topo
            .docker_run_id()
            .ok_or("not a container run")?
            .to_owned();
        let label = format!("{}={id}", docker::RUN_LABEL);
        let engine = docker::connect().await?;
        let mut objects = docker::leftovers(&engine, &label).await?;
        objects.retain(|o| !o.starts_with("container "));
        objects.sort();
        let p = format!("gantry-{id}");
        let expected = [
            format!("network {p}"),
            format!("network {p}-sync"),
            format!("service {p}-admin"),
            format!("service {p}-gateway"),
            format!("service {p}-upstream-alpha"),
            format!("volume {p}-admin-data"),
        ];
        if objects != expected {
            return Err(Failed::from(format!(
                "the run's objects: {objects:?}, expected {expected:?}"
            )));
        }

        // A killed task is replaced by Swarm, on the same host port.
        let gateway = topo.gateway().name().to_owned();
        let url = topo.gateway().url().to_owned();
        let first = task_containers(&gateway)?;
        topo.fault(FaultAction::Kill, Target::Gateway(None)).await?;
        topo.fault(FaultAction::Start, Target::Gateway(None))
            .await?;
        let replaced = task_containers(&gateway)?;
        if replaced.len() != 1 || replaced == first {
            return Err(Failed::from(format!(
                "after a kill the tasks are {replaced:?}, were {first:?}"
            )));
        }
        if !answers(&url).await {
            return Err("the replaced gateway does not answer on its port".into());
        }
        // A stop scales the service to zero; a start brings a task back.
        topo.fault(FaultAction::Stop, Target::Gateway(None)).await?;
        if !task_containers(&gateway)?.is_empty() || answers(&url).await {
            return Err("the stopped gateway still runs".into());
        }
        topo.fault(FaultAction::Start, Target::Gateway(None))
            .await?;
        // A restart is a rolling update: another task.
        let running = task_containers(&gateway)?;
        topo.fault(FaultAction::Restart, Target::Gateway(None))
            .await?;
        let updated = task_containers(&gateway)?;
        if updated == running || !answers(&url).await {
            return Err(Failed::from(format!(
                "after a restart the tasks are {updated:?}, were {running:?}"
            )));
        }
        // The admin's task is replaced too (its SQLite file is on the run's volume: the
        // scenario `fault_admin_kill` on this backend checks it keeps its data).
        let admin = topo.admin().name().to_owned();
        let running = task_containers(&admin)?;
        topo.fault(FaultAction::Restart, Target::Admin(None))
            .await?;
        if task_containers(&admin)? == running || !answers(topo.admin().url()).await {
            return Err("the admin's restart did not replace its task".into());
        }
        topo.close().await;
        let left = docker::leftovers(&engine, &label).await?;
        if !left.is_empty() {
            return Err(Failed::from(format!("left behind: {left:?}")));
        }
        Ok::<_, Failed>(label)
    })?;
    one_name_fails_on_shenyu_3900(&backend, &opts, &rt)?;
    out_of_memory_is_reported_on_swarm(&backend, &opts, &rt)?;
    drop(backend);
    let after = swarm_state()?;
    if after != before {
        return Err(Failed::from(format!(
            "the engine's swarm state was `{before}` and is `{after}` ({label})"
        )));
    }
    a_killed_run_is_swept(&before, &rt)?;
    bench_fanout_times_every_gateway_task(&before)
}

/// `gantry bench fanout --backend swarm` on a small shape: every change is timed on every
/// gateway task, and the swarm is left as found.
fn bench_fanout_times_every_gateway_task(before: &str) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let report = dir.path().join("fanout.json");
    let out = Command::new(crate::gantry_exe())
        .args([
            "bench",
            "fanout",
            "--backend",
            "swarm",
            "--kinds",
            "websocket",
        ])
        .args(["--shapes", "1x3", "--changes", "4", "--report-json"])
        .arg(&report)
        .stdin(Stdio::null())
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(Failed::from(format!("the bench failed: {stderr}")));
    }
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report)?)?;
    let run = &json["runs"][0];
    if run["error"] != serde_json::Value::Null
        || run["shape"] != serde_json::json!({ "admins": 1, "gateways": 3 })
        || !run["all_hold"]["p50"].is_number()
        || !run["each_holds"]["max"].is_number()
    {
        return Err(Failed::from(format!(
            "the report's run: {run}
{stderr}"
        )));
    }
    let after = swarm_state()?;
    if after != before {
        return Err(Failed::from(format!(
            "after the bench the engine's swarm state is `{after}`, was `{before}`"
        )));
    }
    Ok(())
}

/// A `gantry run --backend swarm` killed with SIGKILL leaves its services and the swarm it
/// made; the next backend to open (here a docker one) removes the services of the dead process
/// and leaves the swarm nobody holds.
fn a_killed_run_is_swept(before: &str, rt: &tokio::runtime::Runtime) -> Result<(), Failed> {
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../cases/scenarios/divide/uri_equal.yaml"
    );
    let mut child = Command::new(crate::gantry_exe())
        .args(["run", "--backend", "swarm", "--no-build", scenario])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = format!("{}={}", docker::PID_LABEL, child.id());
    let engine = rt.block_on(docker::connect())?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let objects = rt.block_on(docker::leftovers(&engine, &pid))?;
        if objects
            .iter()
            .any(|o| o.starts_with("service ") && o.ends_with("-gateway"))
        {
            break;
        }
        if Instant::now() > deadline || child.try_wait()?.is_some() {
            let _ = child.kill();
            let _ = child.wait();
            return Err("gantry run never had its gateway service up".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill()?;
    child.wait()?;
    let left = rt.block_on(docker::leftovers(&engine, &pid))?;
    if left.is_empty() || swarm_state()? != "active" {
        return Err("the killed run left nothing to sweep: the check would prove nothing".into());
    }
    harness::internals::backend::DockerBackend::open(None)?;
    let left = rt.block_on(docker::leftovers(&engine, &pid))?;
    if !left.is_empty() {
        return Err(Failed::from(format!("the sweep left {left:?}")));
    }
    let after = swarm_state()?;
    if after != before {
        return Err(Failed::from(format!(
            "after the sweep the engine's swarm state is `{after}`, was `{before}`"
        )));
    }
    Ok(())
}

/// The ShenYu #3900 scenario (three admins behind one name) fails when the admins publish
/// only their own changes (`--peer-watch-ms 0`: no admin watches the database for the others'
/// commits), as ShenYu's did: a change made through one replica never reaches the gateways
/// that the name led to another. Without the bug it passes (`.ci/run` runs it in every mode).
fn one_name_fails_on_shenyu_3900(
    backend: &harness::Backend,
    opts: &RunOptions,
    rt: &tokio::runtime::Runtime,
) -> Result<(), Failed> {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cases/scenarios/topology/admins_behind_one_name.yaml");
    let scenario = harness::scenario::parse_file(&file)?;
    let buggy = backend
        .clone()
        .with_admin_args(vec!["--peer-watch-ms".into(), "0".into()]);
    let run = rt.block_on(harness::run_case(
        &scenario,
        SyncMode::Websocket,
        &buggy,
        opts,
        &|_| {},
    ));
    match run {
        Ok(_) => Err("admins that pass on no other admin's change passed #3900's scenario".into()),
        Err(e) if e.to_string().contains("not converged") => Ok(()),
        Err(e) => Err(Failed::from(format!("failed, but not on convergence: {e}"))),
    }
}

/// `docker::out_of_memory_is_reported` on swarm: the gateway's task held to 24 MiB
/// (`Resources.Limits.MemoryBytes`) and leaking is killed by the OOM killer; Swarm replaces
/// the task, and the failure still names the kill, found on the ended task's container.
fn out_of_memory_is_reported_on_swarm(
    backend: &harness::Backend,
    opts: &RunOptions,
    rt: &tokio::runtime::Runtime,
) -> Result<(), Failed> {
    let text = super::docker::OUT_OF_MEMORY.replace("backends: [docker]", "backends: [swarm]");
    let scenario =
        harness::scenario::parse_str(std::path::Path::new("swarm_out_of_memory.yaml"), &text)?;
    let leaking = backend
        .clone()
        .with_gateway_args(vec!["--emulate-bug".into(), "leak-per-request".into()]);
    let run = rt.block_on(harness::run_case(
        &scenario,
        SyncMode::Websocket,
        &leaking,
        opts,
        &|_| {},
    ));
    let said = "gateway (memory limit 24MiB) killed by the kernel's OOM killer (docker: OOMKilled)";
    match run {
        Ok(_) => Err("a gateway task leaking past its memory limit passed".into()),
        Err(e) if e.to_string().contains(said) => Ok(()),
        Err(e) => Err(Failed::from(format!(
            "the failure does not say `{said}`:\n{e}"
        ))),
    }
}

/// The trial, ignored (or failing, when required) without an engine.
pub(crate) fn trials() -> Vec<Trial> {
    let require = std::env::var("GANTRY_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
    let engine = EngineCheck::probe(require);
    let ignored = matches!(engine, EngineCheck::Skip(_));
    vec![
        Trial::test(
            "swarm::services_volumes_and_the_swarm_as_found",
            move || match engine {
                EngineCheck::Available => services_volumes_and_the_swarm_as_found(),
                EngineCheck::Skip(why) | EngineCheck::Required(why) => Err(why.into()),
            },
        )
        .with_ignored_flag(ignored),
    ]
}
