//! The gateway under a silent partition from its websocket admin: the fake admin stops
//! reading (so it answers no ping) and sends nothing, with the connection left open. The
//! gateway must notice within its silence bound, say so in `/actuator/health`, keep routing
//! the config it holds, reconnect, and take the admin's full resync without a moment with
//! fewer routes. The same run with `--emulate-bug clear-before-refill` (ShenYu #7034) must
//! show that gap: the check can fail.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use gateway::EmulatedBug;
use model::ConfigSet;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::common::{AdminConn, Gateway, eventually, fake_admin, next_session, timer_lateness};
use crate::sync::{full_sync, plugin, rule, selector, upstream};

/// The gateway's silence bound in these tests.
const SILENCE: Duration = Duration::from_millis(900);
/// What detection may take beyond the bound besides the measured scheduling delay
/// ([`timer_lateness`]): the pings' phase and the health polls.
const SLACK: Duration = Duration::from_millis(600);
/// Routes in the config (`/r0/x` …).
const ROUTES: usize = 4;

fn config(upstream: std::net::SocketAddr) -> ConfigSet {
    ConfigSet {
        plugins: vec![plugin()],
        selectors: (0..ROUTES)
            .map(|i| selector(&format!("s{i}"), &format!("/r{i}"), upstream))
            .collect(),
        rules: (0..ROUTES)
            .map(|i| rule(&format!("u{i}"), &format!("s{i}"), &format!("/r{i}/**")))
            .collect(),
        meta_data: Vec::new(),
    }
}

/// Serves one admin session until `silent` fires: reads every frame (which answers the
/// gateway's pings). Then returns the connection, still open, for the test to hold while
/// nobody reads or writes it.
async fn answer_until(mut conn: AdminConn, silent: oneshot::Receiver<()>) -> AdminConn {
    tokio::select! {
        () = async { while let Some(Ok(_)) = conn.next().await {} } => {}
        _ = silent => {}
    }
    conn
}

/// What one run saw.
struct Run {
    /// From the partition to `/actuator/health` saying disconnected.
    detected_after: Duration,
    /// How late a reference timer of [`SILENCE`] started at the partition fired.
    lateness: Duration,
    /// Statuses of the route requests sent while the resync was sent and applied.
    during_resync: Vec<u16>,
}

/// The status of each route, in order.
async fn statuses(http: &reqwest::Client, gateway: &Gateway) -> Vec<u16> {
    let mut out = Vec::with_capacity(ROUTES);
    for i in 0..ROUTES {
        let response = http.get(gateway.url(&format!("/r{i}/x"))).send().await;
        out.push(response.unwrap().status().as_u16());
    }
    out
}

async fn health(http: &reqwest::Client, gateway: &Gateway) -> Value {
    let url = gateway.url("/actuator/health");
    http.get(url).send().await.unwrap().json().await.unwrap()
}

/// Full sync, silent partition, reconnection, full resync sampled by a concurrent client.
async fn partition_and_resync(bug: Option<EmulatedBug>) -> Run {
    let (admin, mut sessions) = fake_admin().await;
    let up = upstream().await;
    let mut settings =
        gateway::Config::new(model::SyncMode::Websocket, vec![format!("http://{admin}")]);
    settings.sync_timeouts.silence = SILENCE;
    settings.emulate_bug = bug;
    let gateway = Gateway::start(settings).await;
    let http = reqwest::Client::new();
    let all_ok = vec![200; ROUTES];

    let mut conn = next_session(&mut sessions).await;
    let config = config(up);
    full_sync(&mut conn, &config).await;
    let (silent, go_silent) = oneshot::channel();
    let first = tokio::spawn(answer_until(conn, go_silent));
    eventually("every route served", || async {
        (statuses(&http, &gateway).await == all_ok).then_some(())
    })
    .await;
    eventually("the subscriber connected", || async {
        (health(&http, &gateway).await["sync"]["connected"] == true).then_some(())
    })
    .await;

    // The silent partition: the admin's side stops reading and writing; nothing is closed.
    silent.send(()).unwrap();
    let partitioned = Instant::now();
    let lateness = timer_lateness(SILENCE);
    eventually("health to say disconnected", || async {
        (health(&http, &gateway).await["sync"]["connected"] == false).then_some(())
    })
    .await;
    let detected_after = partitioned.elapsed();
    let lateness = lateness.await.unwrap();
    // Availability: the held config keeps serving while disconnected.
    assert_eq!(statuses(&http, &gateway).await, all_ok, "serving meanwhile");

    // The gateway reconnects; sample every route while the admin resyncs it.
    let mut conn = next_session(&mut sessions).await;
    let full_syncs = health(&http, &gateway).await["sync"]["fullSyncs"]
        .as_u64()
        .unwrap();
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = tokio::spawn({
        let (http, sampling) = (http.clone(), sampling.clone());
        let url = gateway.url("");
        async move {
            let mut seen = Vec::new();
            while sampling.load(Ordering::Relaxed) {
                for i in 0..ROUTES {
                    let response = http.get(format!("{url}/r{i}/x")).send().await;
                    seen.push(response.unwrap().status().as_u16());
                }
            }
            seen
        }
    });
    full_sync(&mut conn, &config).await;
    eventually("the resync applied", || async {
        let synced = health(&http, &gateway).await["sync"]["fullSyncs"].as_u64();
        (synced >= Some(full_syncs + 5)).then_some(())
    })
    .await;
    sampling.store(false, Ordering::Relaxed);
    let during_resync = sampler.await.unwrap();
    assert_eq!(statuses(&http, &gateway).await, all_ok, "served after");
    drop(conn);
    drop(first.await.unwrap());
    gateway.stop().await;
    Run {
        detected_after,
        lateness,
        during_resync,
    }
}

#[tokio::test]
async fn a_silent_admin_is_detected_and_the_resync_never_drops_a_route() {
    let run = partition_and_resync(None).await;
    // The silence timer runs late by as much as a reference timer started with it, and by
    // that again for each of the session's tasks woken on the way to the health answer.
    let bound = SILENCE + SLACK + 3 * run.lateness;
    assert!(
        run.detected_after <= bound,
        "detected after {:?}, bound {bound:?} (silence {SILENCE:?}, a reference timer {:?} \
         late)",
        run.detected_after,
        run.lateness
    );
    assert!(!run.during_resync.is_empty());
    assert!(
        run.during_resync.iter().all(|s| *s == 200),
        "fewer routes during the resync: {:?}",
        run.during_resync
    );
}

#[tokio::test]
async fn clearing_before_refilling_is_caught() {
    let run = partition_and_resync(Some(EmulatedBug::ClearBeforeRefill)).await;
    assert!(
        run.during_resync.iter().any(|s| *s != 200),
        "the emulated #7034 window went unseen: {} samples all 200",
        run.during_resync.len()
    );
}
