//! `gantry run --backend external` against a gantry admin and gateway started by hand, as a
//! user starts theirs: the binaries with their flags, on ports of the test's choosing.
//!
//! - `external::suite@<mode>`: the whole scenario suite passes (every sync mode; ZooKeeper
//!   and etcd servers of the pair's own, ignored when not installed), and the
//!   admin is left exactly as found: every plugin, and every selector with its rules, including
//!   one of "the user's own" made before the run.
//! - `external::hidden_extras@<mode>`: the same with the gateway's `--hide-extras` (no digest,
//!   no `x-gantry-*` headers, errors with HTTP 200, as ShenYu): the run judges with what is
//!   there, reports the digest checks as skipped, judges `selector:`/`rule:` per key (a
//!   check that could not judge `rule:` says so; a case whose waits need it is skipped), and
//!   still passes what it runs.
//! - `external::hidden_extras_catch_a_planted_bug`: the fallbacks can fail: with the gateway
//!   also emulating ShenYu's dropped-deletes bug, `delete_route` fails on probes alone.
//! - `external::ctrl_c_removes_the_run`: Ctrl-C once the run's first selector exists leaves
//!   none of its selectors behind.
//! - `external::a_left_selector_fails_the_case`: a selector with the run's prefix still there
//!   after a passed case's teardown fails the case (`LeftBehind`) and is removed.
//! - `external::a_catch_all_of_the_targets_stops_the_run`: a selector of the target's own
//!   that matches every path stops the run before its first case, naming the answer.
//! - `external::library_gantry_on_a_hand_started_pair`: `Gantry::builder(..).external(..)`
//!   routes to its upstream through the target, and dropping it leaves the admin as found.
//! - `docker::external_target_from_compose` (with the docker trials): the same suite against
//!   `gantry compose --sync websocket` brought up with docker-compose, the upstreams on this
//!   machine reached from the containers through the compose network's gateway address.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness::client::{AdminClient, GatewayClient};
use harness::internals::wait::{WaitPolicy, await_convergence};
use libtest_mimic::{Failed, Trial};
use model::SyncMode;

/// A trial's body.
type Test = fn() -> Result<(), Failed>;

/// The trials.
pub(crate) fn trials() -> Vec<Trial> {
    let mut trials = Vec::new();
    for mode in [SyncMode::Websocket, SyncMode::Http] {
        trials.push(Trial::test(
            format!("external::hidden_extras@{mode}"),
            move || suite(mode, true),
        ));
    }
    for mode in SyncMode::ALL.iter().copied() {
        let skip = harness::internals::backend::component::skip_reason(&harness::ProcessEnv, mode);
        if let Some(reason) = &skip {
            eprintln!("note: `external::suite@{mode}` is ignored: {reason}");
        }
        trials.push(
            Trial::test(format!("external::suite@{mode}"), move || {
                suite(mode, false)
            })
            .with_ignored_flag(skip.is_some()),
        );
    }
    let single: [(&str, Test); 6] = [
        ("hidden_extras_catch_a_planted_bug", planted_bug),
        ("ctrl_c_removes_the_run", ctrl_c_removes_the_run),
        (
            "a_left_selector_fails_the_case",
            a_left_selector_fails_the_case,
        ),
        (
            "a_catch_all_of_the_targets_stops_the_run",
            a_catch_all_of_the_targets_stops_the_run,
        ),
        (
            "a_selector_of_the_targets_fails_the_case_it_shadows",
            a_selector_of_the_targets_fails_the_case_it_shadows,
        ),
        ("library_gantry_on_a_hand_started_pair", library_gantry),
    ];
    trials.extend(
        single
            .into_iter()
            .map(|(name, test)| Trial::test(format!("external::{name}"), test)),
    );
    trials
}

/// Where a hand-started admin and gateway answer.
struct Endpoints {
    admin_url: String,
    gateway_url: String,
}

impl Endpoints {
    /// Waits (20 s) until the admin takes a login and the gateway answers its health check.
    async fn ready(&self) -> Result<(), Failed> {
        let policy = WaitPolicy {
            consecutive: 1,
            interval: Duration::from_millis(50),
            timeout: Duration::from_secs(20),
        };
        await_convergence(policy, || async {
            login(&self.admin_url)
                .await
                .map(drop)
                .map_err(|e| e.to_string())?;
            match GatewayClient::new(&self.gateway_url).health().await {
                Ok((200, _)) => Ok(()),
                other => Err(format!("gateway health: {other:?}")),
            }
        })
        .await
        .map(drop)
        .map_err(|e| format!("the admin and gateway never came up: {e}").into())
    }
}

/// An admin and a gateway started by hand as processes; killed on drop.
struct Pair {
    admin: Child,
    gateway: Child,
    urls: Endpoints,
    /// The ZooKeeper or etcd both use in those modes (stopped after them).
    _store: Option<harness::internals::backend::HostServer>,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Pair {
    type Target = Endpoints;

    fn deref(&self) -> &Endpoints {
        &self.urls
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for child in [&mut self.gateway, &mut self.admin] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_port() -> Result<u16, Failed> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Starts `gantry-admin` (SQLite file, publishing `mode`) and `gantry-gateway` (syncing
/// `mode`, with `gateway_args`) from the workspace's binaries, both pointed at a ZooKeeper or
/// etcd server of their own in those modes, and waits until the admin takes a login and the
/// gateway answers its health check.
fn start_pair(
    rt: &tokio::runtime::Runtime,
    mode: SyncMode,
    gateway_args: &[&str],
) -> Result<Pair, Failed> {
    let bin = harness::internals::backend::host::bin_dir_from_env()?;
    let dir = tempfile::tempdir()?;
    let (admin_port, gateway_port) = (free_port()?, free_port()?);
    let admin_url = format!("http://127.0.0.1:{admin_port}");
    let gateway_url = format!("http://127.0.0.1:{gateway_port}");
    let log = |name: &str| std::fs::File::create(dir.path().join(name));
    let store = match harness::internals::backend::StoreKind::for_mode(mode) {
        Some(kind) => Some(rt.block_on(harness::internals::backend::HostServer::start(
            kind,
            &dir.path().join(kind.name()),
        ))?),
        None => None,
    };
    let store_flags: Vec<String> = store
        .iter()
        .flat_map(harness::internals::backend::HostServer::store_flags)
        .collect();
    let admin = Command::new(bin.join("gantry-admin"))
        .args([
            "--port",
            &admin_port.to_string(),
            "--sync",
            &mode.to_string(),
        ])
        .arg("--db")
        .arg(dir.path().join("admin.db"))
        .args(&store_flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log("admin.log")?)
        .spawn()?;
    let gateway = Command::new(bin.join("gantry-gateway"))
        .args([
            "--port",
            &gateway_port.to_string(),
            "--sync",
            &mode.to_string(),
        ])
        .args(["--admin-url", &admin_url])
        .args(&store_flags)
        .args(gateway_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log("gateway.log")?)
        .spawn()?;
    let pair = Pair {
        admin,
        gateway,
        urls: Endpoints {
            admin_url,
            gateway_url,
        },
        _store: store,
        _dir: dir,
    };
    rt.block_on(pair.ready())?;
    Ok(pair)
}

async fn login(url: &str) -> Result<AdminClient, harness::error::ClientError> {
    AdminClient::login(url, "admin", "123456").await
}

/// What the admin holds: per plugin its enabled flag and config, and its selectors (id, name,
/// enabled, handle) with their rules' ids.
async fn snapshot(admin: &AdminClient) -> Result<BTreeMap<String, String>, Failed> {
    let mut out = BTreeMap::new();
    for plugin in admin.plugins().await? {
        out.insert(
            format!("plugin {}", plugin.name),
            format!("enabled={} config={:?}", plugin.enabled, plugin.config),
        );
        for s in admin.all_selectors(&plugin.id).await? {
            let rules: Vec<String> = admin
                .list_rules(&s.id, "")
                .await?
                .into_iter()
                .map(|r| r.id)
                .collect();
            out.insert(
                format!("selector {} {}", plugin.name, s.id),
                format!(
                    "{} enabled={} handle={:?} rules={rules:?}",
                    s.name, s.enabled, s.handle
                ),
            );
        }
    }
    Ok(out)
}

/// `gantry run --backend external` against `pair` for `mode`, with `extra` arguments.
fn gantry_run(pair: &Endpoints, mode: SyncMode, extra: &[&str]) -> Command {
    let mut cmd = Command::new(crate::gantry_exe());
    cmd.args(["run", "--backend", "external", "--sync", &mode.to_string()])
        .args([
            "--admin-url",
            &pair.admin_url,
            "--gateway-url",
            &pair.gateway_url,
        ])
        .args(extra)
        .env_remove("GANTRY_ADMIN_USER")
        .env_remove("GANTRY_ADMIN_PASSWORD")
        .stdin(Stdio::null());
    cmd
}

/// A selector of "the user's own" on the divide plugin, which the run must not touch.
async fn plant_own_selector(admin: &AdminClient) -> Result<(), Failed> {
    plant_selector(admin, "users-own", "/users-own/").await
}

/// A divide selector named `name`, without rules, for paths starting with `path` (routed to
/// a port nothing listens on).
async fn plant_selector(admin: &AdminClient, name: &str, path: &str) -> Result<(), Failed> {
    let plugin_id = admin.plugin_id("divide").await?.ok_or("no divide plugin")?;
    let dto = harness::internals::lower::custom_selector(
        &plugin_id,
        name,
        r#"[{"upstreamUrl":"127.0.0.1:1","weight":50,"status":true}]"#,
        vec![model::ConditionDto {
            param_type: Some("uri".into()),
            operator: Some("startsWith".into()),
            param_name: Some("/".into()),
            param_value: Some(path.into()),
            ..Default::default()
        }],
    );
    admin.create_selector(&dto).await?;
    Ok(())
}

/// Plants a selector of "the user's own" on `pair`'s admin, runs `run` (a `gantry run`),
/// which must exit 0, and checks the admin is left as found; returns the run's stdout. A
/// failure shows the run's output and `logs()`.
fn passes_leaving_as_found(
    rt: &tokio::runtime::Runtime,
    pair: &Endpoints,
    mut run: Command,
    logs: impl Fn() -> String,
) -> Result<String, Failed> {
    let before = rt.block_on(async {
        let admin = login(&pair.admin_url).await?;
        plant_own_selector(&admin).await?;
        snapshot(&admin).await
    })?;
    let out = run.output()?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.code() != Some(0) {
        return Err(format!(
            "gantry run exited with {:?}:\n{stdout}\n{}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr),
            logs()
        )
        .into());
    }
    let after = rt.block_on(async { snapshot(&login(&pair.admin_url).await?).await })?;
    if before != after {
        return Err(format!(
            "the admin was not left as found:\nbefore {before:#?}\nafter {after:#?}"
        )
        .into());
    }
    Ok(stdout)
}

fn suite(mode: SyncMode, hidden: bool) -> Result<(), Failed> {
    let rt = runtime();
    let args: &[&str] = if hidden { &["--hide-extras"] } else { &[] };
    let pair = start_pair(&rt, mode, args)?;
    let report = tempfile::NamedTempFile::new()?;
    let mut run = gantry_run(&pair, mode, &["--report-json"]);
    run.arg(report.path());
    let stdout = passes_leaving_as_found(&rt, &pair, run, String::new)?;
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report.path())?)?;
    let results = json["results"].as_array().ok_or("no results")?;
    let ran: Vec<&serde_json::Value> = results.iter().filter(|r| r["skipped"].is_null()).collect();
    let skipped = |case: &str| {
        results
            .iter()
            .find(|r| r["case"] == case)
            .and_then(|r| r["skipped"].as_str())
            .map(str::to_owned)
    };
    // A case whose checks say a key was not judged (`rule:` without the route headers).
    let partly_judged = |case: &str| {
        ran.iter().filter(|r| r["case"] == case).any(|r| {
            r["checks"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["outcome"].to_string().contains("not judged: `rule`"))
            })
        })
    };
    let digest_skipped = ran.iter().all(|r| {
        r["checks"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["kind"] == "digest"))
    });
    let (would_run, only_with_extras) = listed(mode)?;
    let expected = if hidden {
        would_run - only_with_extras
    } else {
        would_run
    };
    let checks = [
        (
            ran.len() >= 20,
            format!("at least 20 cases ran ({} did)", ran.len()),
        ),
        (
            ran.len() == expected,
            format!(
                "`gantry list` said {would_run} would run, {only_with_extras} of them only with \
                 gantry's extras; {} ran",
                ran.len()
            ),
        ),
        (
            digest_skipped == hidden,
            format!("every case reports the digest check skipped: {hidden}"),
        ),
        (
            skipped("route_move").is_some() == hidden,
            format!("route_move (its waits expect `rule:`) skipped: {hidden}"),
        ),
        (
            skipped("full_flow").is_none() && partly_judged("full_flow") == hidden,
            format!(
                "full_flow (checks expect `rule:` beside other keys) ran, its checks \
                 saying `rule` was not judged: {hidden}"
            ),
        ),
        (
            skipped("upstream_faults").is_some() == hidden,
            format!("upstream_faults (behave answers) skipped: {hidden}"),
        ),
        (
            skipped("fault_partition").is_some(),
            "fault_partition (faults) skipped".to_owned(),
        ),
    ];
    let failed: Vec<&String> = checks
        .iter()
        .filter(|(ok, _)| !ok)
        .map(|(_, w)| w)
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("{failed:?} do not hold:\n{stdout}").into())
    }
}

/// `gantry list --backend external --sync <mode>`'s footer: how many cases would run, and
/// how many of those only on a target with gantry's extras.
fn listed(mode: SyncMode) -> Result<(usize, usize), Failed> {
    let out = Command::new(crate::gantry_exe())
        .args(["list", "--backend", "external", "--sync", &mode.to_string()])
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let footer = stdout.lines().last().unwrap_or_default();
    let numbers: Vec<usize> = footer
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    match numbers[..] {
        [runs, _, only_with_extras] => Ok((runs, only_with_extras)),
        _ => Err(format!("`gantry list` ended with {footer:?}").into()),
    }
}

/// ShenYu's dropped-deletes bug behind `--hide-extras`: the deleted route keeps answering,
/// which the wait probes alone must catch.
fn planted_bug() -> Result<(), Failed> {
    let rt = runtime();
    let mode = SyncMode::Websocket;
    let pair = start_pair(
        &rt,
        mode,
        &["--hide-extras", "--emulate-bug", "drop-deletes"],
    )?;
    let out = gantry_run(&pair, mode, &["--filter", "delete_route"]).output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let code = out.status.code();
    super::all_hold(
        &[
            (code == Some(1), "gantry run exits 1"),
            (
                stdout.contains("FAIL delete_route@websocket"),
                "delete_route fails",
            ),
            (
                stdout.contains("route: expected absent"),
                "on a route that stayed",
            ),
        ],
        &format!("exit {code:?}\n{stdout}"),
    )
}

/// The names of the selectors a run made (`gantry-<8 hex>-<name>`) that the admin holds.
async fn runs_selectors(admin: &AdminClient) -> Result<Vec<String>, Failed> {
    let mut names = Vec::new();
    for plugin in admin.plugins().await? {
        for s in admin.all_selectors(&plugin.id).await? {
            if s.name.starts_with("gantry-") {
                names.push(s.name);
            }
        }
    }
    Ok(names)
}

/// Waits (60 s) until the admin holds a selector of the run `child` (a `gantry run`) for which
/// `pick` gives something, and returns that. When the run ends first or the deadline passes,
/// `child` is killed and its output is the error.
fn first_selector(
    rt: &tokio::runtime::Runtime,
    admin: &AdminClient,
    child: &mut Child,
    pick: impl Fn(&str) -> Option<&str>,
) -> Result<String, Failed> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let names = rt.block_on(runs_selectors(admin))?;
        if let Some(found) = names.iter().find_map(|n| pick(n)) {
            return Ok(found.to_owned());
        }
        if Instant::now() > deadline || child.try_wait()?.is_some() {
            let _ = child.kill();
            let mut stdout = String::new();
            if let Some(mut out) = child.stdout.take() {
                let _ = std::io::Read::read_to_string(&mut out, &mut stdout);
            }
            let _ = child.wait();
            return Err(format!("gantry run never made the selector awaited:\n{stdout}").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A step (after [`one_route_case`]'s) that waits until a selector matching `/stray/`
/// exists on the gateway.
const STRAY_STEP: &str = r#"steps:
  - name: a selector with the run's prefix appears
    changes:
      - updateSelector: { name: route, enabled: true }
    wait:
      probe:
        request: { path: /stray/x }
        expect: { code: -102 }
      timeout: 30s
    precheck: { skip: "the stray selector is the test's, made beside the run; the wait only waits for it" }
"#;

/// A passed case after which a selector with the run's prefix is still there (as if the
/// harness lost track of one it made) fails at teardown with `LeftBehind`, and the selector
/// goes. The test makes `<prefix>stray` (no rule, so the gateway answers -102) once the case's
/// selector shows the prefix; the case's step waits for exactly that, so there is no race.
fn a_left_selector_fails_the_case() -> Result<(), Failed> {
    let rt = runtime();
    let mode = SyncMode::Websocket;
    let pair = start_pair(&rt, mode, &[])?;
    let admin = rt.block_on(login(&pair.admin_url))?;
    let dir = tempfile::tempdir()?;
    let case = dir.path().join("stray.yaml");
    std::fs::write(
        &case,
        format!("{}{STRAY_STEP}", one_route_case("stray", "/held/x")),
    )?;
    let mut child = gantry_run(&pair, mode, &[&case.display().to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let prefix = first_selector(&rt, &admin, &mut child, |n| n.strip_suffix("route"))?;
    rt.block_on(plant_selector(&admin, &format!("{prefix}stray"), "/stray/"))?;
    let out = child.wait_with_output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let left = rt.block_on(runs_selectors(&admin))?;
    super::all_hold(
        &[
            (out.status.code() == Some(1), "gantry run exits 1"),
            (stdout.contains("FAIL stray@websocket"), "the case fails"),
            (
                stdout.contains(&format!("teardown left 1 selector(s) named `{prefix}*`")),
                "saying what its teardown left",
            ),
            (left.is_empty(), "no selector of the run is left"),
        ],
        &format!(
            "exit {:?}, left {left:?}\n{stdout}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// A target whose own selector matches every path would answer the scenarios' requests:
/// the run refuses to start (exit 3, the backend could not start; naming the answer) and
/// leaves the admin as found.
fn a_catch_all_of_the_targets_stops_the_run() -> Result<(), Failed> {
    let rt = runtime();
    let mode = SyncMode::Websocket;
    let pair = start_pair(&rt, mode, &[])?;
    let admin = rt.block_on(login(&pair.admin_url))?;
    rt.block_on(plant_selector(&admin, "users-catch-all", "/"))?;
    let before = rt.block_on(snapshot(&admin))?;
    let out = gantry_run(&pair, mode, &["--filter", "delete_route"]).output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let after = rt.block_on(snapshot(&admin))?;
    super::all_hold(
        &[
            (out.status.code() == Some(3), "gantry run exits 3"),
            (stderr.contains("a catch-all"), "it names the cause"),
            (stderr.contains("-102"), "and shows the answer"),
            (before == after, "the admin is left as found"),
        ],
        &format!("exit {:?}\n{stderr}", out.status.code()),
    )
}

/// A case named `name` routing `path` to alpha (selector `route` and rule `r`, both
/// `uri = path`).
fn one_route_case(name: &str, path: &str) -> String {
    format!(
        r#"
name: {name}
modes: [websocket]
upstreams: [alpha]
setup:
  selectors:
    - name: route
      plugin: divide
      conditions: [{{ paramType: uri, operator: "=", paramValue: {path} }}]
      upstreams: [{{ upstream: alpha }}]
      rules:
        - name: r
          conditions: [{{ paramType: uri, operator: "=", paramValue: {path} }}]
wait:
  probe:
    request: {{ path: {path} }}
    expect: {{ upstream: alpha }}
checks:
  - name: routed
    request: {{ path: {path} }}
    expect: {{ upstream: alpha }}
"#
    )
}

/// A selector of the target's own that matches one case's path (not every path) fails that
/// case at its precheck, naming the request and the answer, before it made anything; the
/// other case passes and the admin is left as found.
fn a_selector_of_the_targets_fails_the_case_it_shadows() -> Result<(), Failed> {
    let rt = runtime();
    let mode = SyncMode::Websocket;
    let pair = start_pair(&rt, mode, &[])?;
    let admin = rt.block_on(login(&pair.admin_url))?;
    rt.block_on(plant_selector(&admin, "users-held", "/held/"))?;
    let before = rt.block_on(snapshot(&admin))?;
    let dir = tempfile::tempdir()?;
    let mut cases = Vec::new();
    for (name, path) in [("held", "/held/x"), ("free", "/free/x")] {
        let case = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&case, one_route_case(name, path))?;
        cases.push(case.display().to_string());
    }
    let args: Vec<&str> = cases.iter().map(String::as_str).collect();
    let out = gantry_run(&pair, mode, &args).output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let after = rt.block_on(snapshot(&admin))?;
    super::all_hold(
        &[
            (out.status.code() == Some(1), "gantry run exits 1"),
            (
                stdout.contains("FAIL held@websocket"),
                "the shadowed case fails",
            ),
            (
                stdout.contains("already routes `GET /held/x`"),
                "naming the request",
            ),
            (stdout.contains("-102"), "and the answer"),
            (
                stdout.contains("1 passed, 1 failed"),
                "the other case passes",
            ),
            (before == after, "the admin is left as found"),
        ],
        &format!(
            "exit {:?}\n{stdout}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Ctrl-C while a case runs: the run's selectors are removed before gantry exits 130.
fn ctrl_c_removes_the_run() -> Result<(), Failed> {
    let rt = runtime();
    let mode = SyncMode::Websocket;
    let pair = start_pair(&rt, mode, &[])?;
    let admin = rt.block_on(login(&pair.admin_url))?;
    let ours = || rt.block_on(runs_selectors(&admin));
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../cases/scenarios/balance");
    let mut child = gantry_run(&pair, mode, &[scenario])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    // The capability probe's route is removed before the first case: wait for a case's.
    first_selector(&rt, &admin, &mut child, |n| {
        (!n.ends_with("capabilities")).then_some(n)
    })?;
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()?;
    let out = child.wait_with_output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let left = ours()?;
    super::all_hold(
        &[
            (out.status.code() == Some(130), "gantry run exits 130"),
            (left.is_empty(), "no selector of the run is left"),
            (stderr.contains("removed "), "it says what it removed"),
        ],
        &format!("exit {:?}, left {left:?}\n{stderr}", out.status.code()),
    )
}

/// A docker-compose project; `down` on drop.
struct Compose {
    project: String,
    file: tempfile::NamedTempFile,
}

impl Compose {
    fn command(&self) -> Command {
        let mut cmd = Command::new("docker-compose");
        cmd.args(["-p", &self.project, "-f"]).arg(self.file.path());
        cmd
    }
}

impl Drop for Compose {
    fn drop(&mut self) {
        let _ = self
            .command()
            .args(["down", "-v", "--remove-orphans", "-t", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The README's compose path: `gantry compose --sync websocket` brought up with
/// docker-compose (its admin and gateway containers; the host ports changed to free ones), and
/// `gantry run --backend external` against it with the upstreams on this machine, reached by
/// the gateway container at the compose network's gateway address. Passes, and leaves the
/// admin as found.
pub(crate) fn from_compose() -> Result<(), Failed> {
    if Command::new("docker-compose")
        .arg("version")
        .output()
        .is_err()
    {
        return Err("docker-compose is not installed (apt-get install docker-compose)".into());
    }
    let rt = runtime();
    let mode = SyncMode::Websocket;
    let yaml = Command::new(crate::gantry_exe())
        .args(["compose", "--sync", "websocket"])
        .output()?;
    let (admin_port, gateway_port) = (free_port()?, free_port()?);
    let yaml = String::from_utf8(yaml.stdout)?
        .replace(
            "127.0.0.1:9095:9095",
            &format!("127.0.0.1:{admin_port}:9095"),
        )
        .replace(
            "127.0.0.1:9195:9195",
            &format!("127.0.0.1:{gateway_port}:9195"),
        );
    let file = tempfile::Builder::new().suffix(".yml").tempfile()?;
    std::fs::write(file.path(), yaml)?;
    let compose = Compose {
        project: format!("gantryext{}", std::process::id()),
        file,
    };
    let up = compose
        .command()
        .args(["up", "-d", "admin", "gateway"])
        .output()?;
    if !up.status.success() {
        return Err(format!("docker-compose up: {}", String::from_utf8_lossy(&up.stderr)).into());
    }
    let inspect = Command::new("docker")
        .args([
            "network",
            "inspect",
            &format!("{}_default", compose.project),
        ])
        .args(["--format", "{{(index .IPAM.Config 0).Gateway}}"])
        .output()?;
    let host = String::from_utf8(inspect.stdout)?.trim().to_owned();
    if host.is_empty() {
        return Err(format!(
            "no gateway address for the compose network: {}",
            String::from_utf8_lossy(&inspect.stderr)
        )
        .into());
    }
    let pair = Endpoints {
        admin_url: format!("http://127.0.0.1:{admin_port}"),
        gateway_url: format!("http://127.0.0.1:{gateway_port}"),
    };
    rt.block_on(pair.ready())?;
    let run = gantry_run(
        &pair,
        mode,
        &["--upstream-bind", &host, "--upstream-advertise", &host],
    );
    let logs = || {
        compose
            .command()
            .args(["logs", "--tail", "40"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    passes_leaving_as_found(&rt, &pair, run, logs).map(drop)
}

/// The library against a hand-started pair behind `--hide-extras`: a route made through
/// [`harness::Gantry::route`] carries the run's prefix and answers from the upstream, and the
/// drop removes it.
fn library_gantry() -> Result<(), Failed> {
    let rt = runtime();
    let mode = SyncMode::Websocket;
    let pair = start_pair(&rt, mode, &["--hide-extras"])?;
    let admin = rt.block_on(login(&pair.admin_url))?;
    let before = rt.block_on(snapshot(&admin))?;
    let target = harness::internals::backend::ExternalTarget {
        admin_url: pair.admin_url.clone(),
        gateway_url: pair.gateway_url.clone(),
        user: "admin".into(),
        password: "123456".into(),
        upstream_bind: std::net::Ipv4Addr::LOCALHOST.into(),
        upstream_advertise: "127.0.0.1".into(),
        profile: harness::client::Profile::default(),
        prefix: harness::internals::backend::ExternalTarget::fresh_prefix(),
    };
    let prefix = target.prefix.clone();
    let during = rt.block_on(async {
        let gantry = harness::Gantry::builder(mode)
            .external(target)
            .upstreams(["alpha"])
            .start()
            .await?;
        let caps = gantry.backend().capabilities();
        if caps.digest || caps.route_headers || !caps.errors_with_200 {
            return Err(
                format!("--hide-extras should leave none of gantry's extras: {caps:?}").into(),
            );
        }
        let admin = gantry.admin().await?;
        gantry.route(&admin, "hello", "/hello/", "alpha").await?;
        let gateway = gantry.gateway();
        let request: harness::scenario::ast::RequestSpec =
            serde_json::from_value(serde_json::json!({ "path": "/hello/world" }))?;
        let policy = WaitPolicy {
            consecutive: 1,
            interval: Duration::from_millis(20),
            timeout: Duration::from_secs(10),
        };
        await_convergence(policy, || async {
            let resp = gateway.send(&request).await.map_err(|e| e.to_string())?;
            match resp.header(harness::internals::upstream::UPSTREAM_HEADER) {
                Some("alpha") => Ok(()),
                _ => Err(resp.summary()),
            }
        })
        .await?;
        let during = snapshot(&admin).await?;
        drop(gantry);
        Ok::<_, Failed>(during)
    })?;
    let after = rt.block_on(snapshot(&admin))?;
    let named = |snap: &BTreeMap<String, String>| {
        snap.values()
            .any(|v| v.starts_with(&format!("{prefix}hello")))
    };
    super::all_hold(
        &[
            (named(&during), "the route carried the run's prefix"),
            (before == after, "the drop left the admin as found"),
        ],
        &format!("before {before:#?}\nduring {during:#?}\nafter {after:#?}"),
    )
}
