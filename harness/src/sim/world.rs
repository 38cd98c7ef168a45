//! One seed's run: the admin, the gateways and a driver as turmoil hosts on one thread, in
//! simulated time, with the seed's plan applied to them.
//!
//! - `admin`: gantry's admin ([`admin::Login::start`], [`admin::AppState::assemble`] and
//!   [`admin::serve_on`]) on an in-memory database that outlives its crashes
//!   ([`admin::Database::memory`]); its tokens do not.
//! - `gw0`, `gw1`, …: gantry's gateway ([`gateway::serve_on`]) syncing from the admin
//!   through the simulated network, each swap recorded ([`gateway::Config::on_apply`]).
//! - `alpha`, `beta`: echo upstreams; `client`: sends requests to the gateways while the
//!   plan runs ([`routing`]).
//! - `driver`: logs in to each admin process and sends the plan's operations to its router
//!   in process (the REST API, no socket), and feeds every event the admin publishes, in order, to a
//!   [`gateway::Follower`]: the admin's commit sequence.
//!
//! Partitions, holds and crashes are the simulator's own, applied between steps at their
//! times; protocol faults go through the admin's test-only hook.

use std::cell::Cell;
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use model::SyncMode;
use model::lock::MutexExt;
use tokio::sync::broadcast;

use super::net::{SimListener, SimNet};
use super::plan::{Action, Fault, Plan, Way};
use super::routing::{self, CASE, UPSTREAMS};
use super::trace::Trace;
use crate::client::AdminClient;
use crate::converge::run::{CaseState, Writer};
use crate::lower::divide_handle;

/// The admin's port.
const ADMIN_PORT: u16 = 9095;
/// The gateways' port.
const GATEWAY_PORT: u16 = 9195;
/// The most a message takes on a healthy link.
const MAX_LATENCY: Duration = Duration::from_millis(20);
/// One step of simulated time.
const TICK: Duration = Duration::from_millis(5);
/// The gateways' silence bound: a session that hears nothing this long is given up.
pub(crate) const SILENCE: Duration = Duration::from_secs(2);
/// How long after the last heal or operation every gateway must hold the admin's last
/// commit: the silence bound, the reconnect back-off's cap (5 s), a full sync, and room.
pub(crate) const BOUND: Duration = Duration::from_secs(12);
/// Where simulated wall-clock time starts (2026-01-01T00:00:00Z): fixed, so ids and dates
/// replay.
const EPOCH: Duration = Duration::from_secs(1_767_225_600);
/// The upstreams' addresses, as routes and registrations name them ([`routing::upstream`]
/// listens there).
const ADDRESSES: [&str; 2] = ["alpha:8080", "beta:8080"];

/// How the simulation is set up, besides the plan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Setup {
    /// The sync mode.
    pub(crate) mode: SyncMode,
    /// Gateways.
    pub(crate) gateways: u8,
    /// A bug the gateways emulate.
    pub(crate) bug: Option<gateway::EmulatedBug>,
}

/// The admin's long-poll hold in the simulation (ShenYu's is 60 s): short, so that a hold
/// and the gateways' read timeout fit well inside the bound.
const LONG_POLL_HOLD: Duration = Duration::from_secs(5);

/// The admin's configuration in the simulation.
fn admin_config(mode: SyncMode) -> admin::Config {
    let mut config = admin::Config::new(":memory:");
    config.sync = vec![mode];
    // No other admin shares the database.
    config.peer_watch = None;
    config.test_sync_faults = true;
    config.long_poll_hold = LONG_POLL_HOLD;
    // Hashed and verified on the host's own task: no thread leaves simulated time.
    config.password_work = admin::PasswordWork::Minimal;
    config
}

/// The gateway `gateway`'s configuration in the simulation (`life`: its process, counted
/// from 0), each swap recorded in `shared`'s trace.
fn gateway_config(setup: Setup, gateway: u8, life: u32, shared: Arc<Shared>) -> gateway::Config {
    let mut config = gateway::Config::new(setup.mode, vec![format!("http://admin:{ADMIN_PORT}")]);
    config.sync_timeouts.silence = SILENCE;
    config.sync_timeouts.long_poll_hold = LONG_POLL_HOLD;
    config.emulate_bug = setup.bug;
    config.on_apply = Some(gateway::OnApply::new(move |set| {
        shared.trace.locked().applied(now(), gateway, life, set);
    }));
    config
}

/// What the hosts share with the driver and the step loop.
#[derive(Debug, Default)]
struct Shared {
    /// The running admin's life (its process, counted from 1) and state; `None` while it is
    /// down.
    admin: Mutex<Option<(u32, admin::AppState)>>,
    /// Everything observed.
    trace: Mutex<Trace>,
}

/// The simulated time now (inside a host), zero outside.
fn now() -> Duration {
    turmoil::sim_elapsed().unwrap_or_default()
}

/// Runs `plan` under `seed`; the trace of what happened, or why the simulation itself could
/// not run (a harness problem, not a finding).
pub(crate) fn run(seed: u64, plan: &Plan, setup: Setup) -> Result<Trace, String> {
    // The wall clock: the simulated one, moved by the plan's clock jumps.
    let jumped = Rc::new(Cell::new(0i64));
    let _world = model::world::install(seed, {
        let jumped = Rc::clone(&jumped);
        move || {
            let now = UNIX_EPOCH + turmoil::since_epoch().unwrap_or(EPOCH);
            let by = Duration::from_secs(jumped.get().unsigned_abs());
            if jumped.get() < 0 { now - by } else { now + by }
        }
    });
    let shared = Arc::new(Shared::default());
    let end = plan.ends_at() + BOUND;
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .tick_duration(TICK)
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(MAX_LATENCY)
        .epoch(SystemTime::UNIX_EPOCH + EPOCH)
        .simulation_duration(end + Duration::from_secs(60))
        .build();

    let db = admin::Database::memory();
    let config = admin_config(setup.mode);
    let lives = Arc::new(Mutex::new(0u32));
    {
        let (shared, lives) = (Arc::clone(&shared), Arc::clone(&lives));
        sim.host("admin", move || {
            let (shared, db, config) = (Arc::clone(&shared), db.clone(), config.clone());
            let life = {
                let mut lives = lives.locked();
                *lives += 1;
                *lives
            };
            async move {
                // Tokens live in the process: a restarted admin has forgotten them.
                let login = admin::Login::start(&db, &config).await?;
                let state = admin::AppState::assemble(&config, &db, login).await?;
                let listener = SimListener::bind(ADMIN_PORT).await?;
                *shared.admin.locked() = Some((life, state.clone()));
                admin::serve_on(listener, state, &config, std::future::pending()).await?;
                Ok(())
            }
        });
    }
    for gateway in 0..setup.gateways {
        let shared = Arc::clone(&shared);
        let lives = Arc::new(Mutex::new(0u32));
        sim.host(format!("gw{gateway}"), move || {
            let life = {
                let mut lives = lives.locked();
                let life = *lives;
                *lives += 1;
                life
            };
            let config = gateway_config(setup, gateway, life, Arc::clone(&shared));
            let shared = Arc::clone(&shared);
            async move {
                shared.trace.locked().started(now(), gateway, life);
                let listener = SimListener::bind(GATEWAY_PORT).await?;
                gateway::serve_on(listener, SimNet, config, std::future::pending()).await?;
                Ok(())
            }
        });
    }
    for name in UPSTREAMS {
        sim.host(name, move || routing::upstream(name));
    }
    {
        let shared = Arc::clone(&shared);
        sim.client(
            "client",
            routing::client(seed, setup.gateways, GATEWAY_PORT, end, move |exchange| {
                shared.trace.locked().request(now(), exchange);
            }),
        );
    }
    sim.client(
        "driver",
        drive(plan.clone(), setup.mode, Arc::clone(&shared), end),
    );

    // The simulator's faults, at their times, and their heals.
    let mut events: Vec<(Duration, usize, Fault, bool)> = Vec::new();
    for step in &plan.steps {
        if let Action::Fault { fault, lasts } = step.action
            && !matches!(fault, Fault::Frames { .. })
        {
            events.push((step.at, step.index, fault, true));
            events.push((step.at + lasts, step.index, fault, false));
        }
    }
    events.sort_by_key(|e| (e.0, e.1, !e.3));
    let failed = |e: Box<dyn std::error::Error>| format!("the simulation stopped: {e}");
    // The directions (source, destination) let through a one-way partition's hold.
    let mut passing = Vec::new();
    for (at, index, fault, inject) in events {
        while sim.elapsed() < at {
            if step(&mut sim, &passing).map_err(failed)? {
                break;
            }
        }
        if let Fault::ClockJump { seconds } = fault {
            jumped.set(if inject { i64::from(seconds) } else { 0 });
        }
        apply(
            &mut sim,
            fault,
            inject,
            setup.gateways,
            &shared,
            &mut passing,
        );
        let what = if inject {
            format!("[{index}] {fault}")
        } else {
            format!("[{index}] healed")
        };
        shared.trace.locked().step(sim.elapsed(), what);
    }
    while !step(&mut sim, &passing).map_err(failed)? {}
    let trace = shared.trace.locked().clone();
    Ok(trace)
}

/// One step of the simulation; then the messages of the directions in `passing` go on
/// (the other direction of a one-way partition stays held). Whether the driver is done.
fn step(sim: &mut turmoil::Sim<'_>, passing: &[(IpAddr, IpAddr)]) -> turmoil::Result<bool> {
    let done = sim.step()?;
    if !passing.is_empty() {
        sim.links(|links| {
            for link in links {
                for sent in link {
                    let (src, dst) = sent.pair();
                    if passing.contains(&(src.ip(), dst.ip())) {
                        sent.deliver();
                    }
                }
            }
        });
    }
    Ok(done)
}

/// Injects (or heals) one of the simulator's faults.
///
/// A partition holds the link's messages in flight and delivers them at the heal, as TCP's
/// retransmissions would: turmoil's TCP does not retransmit, so dropping them would lose
/// data in the middle of a connection, which TCP never does. A one-way partition holds
/// both directions and lets one through at every step (`passing`).
fn apply(
    sim: &mut turmoil::Sim<'_>,
    fault: Fault,
    inject: bool,
    gateways: u8,
    shared: &Shared,
    passing: &mut Vec<(IpAddr, IpAddr)>,
) {
    let name = |g: u8| format!("gw{g}");
    match fault {
        Fault::Partition { gateway, way } => {
            let cut: Vec<u8> = gateway.map_or_else(|| (0..gateways).collect(), |g| vec![g]);
            let admin = sim.lookup("admin");
            for g in cut {
                let gw = sim.lookup(name(g).as_str());
                if inject {
                    sim.hold(admin, gw);
                    match way {
                        Way::Both => {}
                        Way::ToGateway => passing.push((gw, admin)),
                        Way::ToAdmin => passing.push((admin, gw)),
                    }
                } else {
                    passing.retain(|&(a, b)| ![a, b].contains(&gw));
                    sim.release(admin, gw);
                }
            }
        }
        Fault::Slow {
            gateway,
            latency_ms,
        } => {
            let latency = if inject {
                Duration::from_millis(u64::from(latency_ms))
            } else {
                MAX_LATENCY
            };
            sim.set_link_max_message_latency("admin", name(gateway).as_str(), latency);
        }
        Fault::CrashGateway { gateway } if inject => crash(sim, &name(gateway), gateways),
        Fault::CrashGateway { gateway } => sim.bounce(name(gateway).as_str()),
        Fault::CrashAdmin if inject => {
            *shared.admin.locked() = None;
            crash(sim, "admin", gateways);
        }
        Fault::CrashAdmin => sim.bounce("admin"),
        // Armed by the driver through the admin's hook; the clock is moved by the caller.
        Fault::Frames { .. } | Fault::ClockJump { .. } => {}
    }
}

/// Crashes `host`. Dropping its runtime closes its sockets in the order of tokio's task
/// list, which follows task ids: a counter of the whole process, so another simulation on
/// another thread, or an earlier one on this thread, moves it. Each close is a message, and
/// each message draws its latency from the simulation's one generator in the order sent: the
/// closes would take each other's latencies, and the peers would notice the crash in an
/// order the seed does not fix. So the host's links are held while it crashes (a held
/// message draws nothing) and released at once (every close delivered now, none drawn).
fn crash(sim: &mut turmoil::Sim<'_>, host: &str, gateways: u8) {
    let others: Vec<String> = ["admin", "driver", "client"]
        .into_iter()
        .map(str::to_owned)
        .chain(UPSTREAMS.map(str::to_owned))
        .chain((0..gateways).map(|g| format!("gw{g}")))
        .filter(|other| other != host)
        .collect();
    for other in &others {
        sim.hold(host, other.as_str());
    }
    sim.crash(host);
    for other in &others {
        sim.release(host, other.as_str());
    }
}

/// The driver: the plan's operations (and protocol faults) at their times, each event the
/// admin publishes fed to the follower; then it waits out the bound.
async fn drive(plan: Plan, mode: SyncMode, shared: Arc<Shared>, end: Duration) -> turmoil::Result {
    let start = tokio::time::Instant::now();
    let follower = {
        let shared = Arc::clone(&shared);
        gateway::Follower::new(
            mode,
            gateway::OnApply::new(move |set| shared.trace.locked().commit(now(), set)),
        )
    };
    let (mut life, state) = admin_up(&shared).await;
    let mut events = state.subscribe();
    for event in state.full_sync().await? {
        follower.apply(event);
    }
    let mut client = log_in(state).await?;
    let plugin_id = client
        .plugin_id("divide")
        .await?
        .ok_or("the admin has no divide plugin")?;
    let handles = ADDRESSES.map(divide_handle);
    let mut case = CaseState::default();
    for step in &plan.steps {
        let driven = matches!(
            step.action,
            Action::Op(_)
                | Action::Fault {
                    fault: Fault::Frames { .. },
                    ..
                }
        );
        if !driven {
            continue;
        }
        tokio::time::sleep_until(start + step.at).await;
        let (now_life, state) = admin_up(&shared).await;
        if now_life != life {
            // A new admin process: what the old one published is all in the follower, and
            // its tokens are gone.
            life = now_life;
            events = state.subscribe();
            client = log_in(state).await?;
        }
        let outcome = match step.action {
            Action::Op(op) => {
                let writer = Writer {
                    admin: &client,
                    plugin_id: &plugin_id,
                    handles: &handles,
                    addresses: ADDRESSES.map(str::to_owned),
                };
                if case.model.applies(op) {
                    match writer.op(CASE, op, &mut case).await {
                        Ok(()) => format!("[{}] {op}", step.index),
                        Err(e) => format!("[{}] {op}: refused: {e}", step.index),
                    }
                } else {
                    format!("[{}] {op}: does not apply", step.index)
                }
            }
            Action::Fault {
                fault:
                    fault @ Fault::Frames {
                        kind,
                        count,
                        delay_ms,
                    },
                ..
            } => {
                let armed = crate::scenario::ast::SyncFault {
                    kind,
                    count: u32::from(count),
                    delay: (kind == model::SyncFaultKind::LateAnswer)
                        .then(|| Duration::from_millis(u64::from(delay_ms))),
                };
                match client.arm_sync_fault(&armed).await {
                    Ok(()) => format!("[{}] {fault}", step.index),
                    Err(e) => format!("[{}] {fault}: refused: {e}", step.index),
                }
            }
            // The simulator's own faults: applied by the step loop.
            Action::Fault { .. } => continue,
        };
        drain(&mut events, &follower);
        shared.trace.locked().step(now(), outcome);
    }
    tokio::time::sleep_until(start + end).await;
    Ok(())
}

/// The driver's client of the admin whose state is `state`, logged in to it (in process: the
/// REST API, no socket).
async fn log_in(state: admin::AppState) -> Result<AdminClient, crate::error::ClientError> {
    AdminClient::login_in_process(
        admin::app(state),
        crate::client::admin::ADMIN_USER,
        crate::client::admin::ADMIN_PASSWORD,
    )
    .await
}

/// Waits until an admin process is serving; its life and its state.
async fn admin_up(shared: &Shared) -> (u32, admin::AppState) {
    loop {
        if let Some(up) = shared.admin.locked().clone() {
            return up;
        }
        tokio::time::sleep(TICK).await;
    }
}

/// Feeds every event published so far to the follower.
fn drain(events: &mut broadcast::Receiver<admin::SharedEvent>, follower: &gateway::Follower) {
    while let Ok(event) = events.try_recv() {
        follower.apply((*event).clone());
    }
}
