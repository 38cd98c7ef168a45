//! `GET /gantry/sync-status` against a served admin: a websocket session is UNKNOWN until it
//! confirms, SYNCED on the admin's digest, STALE once a change was pushed to it and not
//! confirmed (grace period 0), SYNCED again on the new digest; a long poll's confirmation
//! header lists its gateway.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use model::{GatewaySyncState, SyncConfirmation, SyncMode, SyncStatusReport};
use reqwest::Method;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{Client, DEADLINE, Served, selector_body};

async fn status(served: &Served) -> SyncStatusReport {
    reqwest::get(served.url("/gantry/sync-status"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The status once `holds` is true of it, polled until [`DEADLINE`].
async fn status_when(
    served: &Served,
    what: &str,
    holds: impl Fn(&SyncStatusReport) -> bool,
) -> SyncStatusReport {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let report = status(served).await;
        if holds(&report) {
            return report;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never {what}: {report:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn confirmation(mode: SyncMode, digest: &str) -> SyncConfirmation {
    SyncConfirmation {
        gateway_id: "gw-test".into(),
        address: "127.0.0.1:9195".into(),
        mode,
        digest: digest.into(),
        applied_at_us: 1,
    }
}

fn only_state(report: &SyncStatusReport, state: GatewaySyncState) -> bool {
    report.gateways.len() == 1 && report.gateways[0].state == state
}

#[tokio::test]
async fn a_websocket_gateway_is_unknown_synced_stale_and_synced_again() {
    let config = admin::Config {
        sync_stale_after: Duration::ZERO,
        ..admin::Config::new(":memory:")
    };
    let served = Served::start(config).await;
    let client = Client::login(&served).await;
    assert!(status(&served).await.gateways.is_empty());

    let url = format!("ws://{}/websocket", served.addr);
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let report = status_when(&served, "UNKNOWN", |r| {
        only_state(r, GatewaySyncState::Unknown)
    })
    .await;
    assert!(report.gateways[0].id.starts_with("websocket-session-"));

    let digest = report.admin_digest.clone();
    let confirm =
        |digest: &str| Message::text(confirmation(SyncMode::Websocket, digest).to_websocket_text());
    socket.send(confirm(&digest)).await.unwrap();
    let report = status_when(&served, "SYNCED", |r| {
        only_state(r, GatewaySyncState::Synced)
    })
    .await;
    let gateway = &report.gateways[0];
    assert_eq!(
        (gateway.id.as_str(), gateway.address.as_str()),
        ("gw-test", "127.0.0.1:9195")
    );
    assert!(gateway.connected);

    // A change pushed and never confirmed: stale at once with a grace period of 0.
    client
        .send(Method::POST, "/selector", Some(selector_body("/status")))
        .await;
    let frame = tokio::time::timeout(DEADLINE, socket.next()).await.unwrap();
    assert!(matches!(frame, Some(Ok(Message::Text(_)))), "{frame:?}");
    let report = status_when(&served, "STALE", |r| only_state(r, GatewaySyncState::Stale)).await;
    assert_ne!(report.admin_digest, digest);
    assert_eq!(report.gateways[0].digest.as_deref(), Some(digest.as_str()));

    socket.send(confirm(&report.admin_digest)).await.unwrap();
    status_when(&served, "SYNCED after the change", |r| {
        only_state(r, GatewaySyncState::Synced)
    })
    .await;

    drop(socket);
    let report = status_when(&served, "disconnected", |r| {
        r.gateways.len() == 1 && !r.gateways[0].connected
    })
    .await;
    assert_eq!(
        report.gateways[0].state,
        GatewaySyncState::Synced,
        "kept, as last confirmed"
    );
}

#[tokio::test]
async fn a_long_poll_confirmation_lists_its_gateway() {
    let config = admin::Config {
        sync: vec![SyncMode::Http],
        ..admin::Config::new(":memory:")
    };
    let served = Served::start(config).await;
    let client = Client::login(&served).await;
    let digest = status(&served).await.admin_digest;
    let header = serde_json::to_string(&confirmation(SyncMode::Http, &digest)).unwrap();
    let answer = client
        .request(Method::GET, "/configs/fetch?groupKeys=SELECTOR")
        .header(model::SYNC_CONFIRM_HEADER, header)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let report = status(&served).await;
    assert_eq!(report.gateways.len(), 1, "{report:?}");
    let gateway = &report.gateways[0];
    assert_eq!(
        (gateway.id.as_str(), gateway.mode, gateway.state),
        ("gw-test", SyncMode::Http, GatewaySyncState::Synced)
    );
    assert!(gateway.sent_at_us.is_some(), "a fetch sends the config");
}
