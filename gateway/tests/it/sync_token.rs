//! The websocket sync token against the real admin, both served in-process on port 0: an
//! admin started with a sync token syncs a gateway that sends it, and refuses one that does
//! not (or sends another), which logs why at every attempt. HTTP long polling does not use the
//! token (the admin checks it on `/websocket` only). Every wait polls a condition until a
//! deadline.

use std::time::Duration;

use model::SyncMode;
use serde_json::Value;

use crate::common::{Gateway, InProcessAdmin, capture_logs, eventually, logged};

const TOKEN: &str = "s3cret-sync-token";

/// An admin syncing websocket and http, requiring `sync_token` on `/websocket` if any.
async fn start_admin(sync_token: Option<&str>) -> InProcessAdmin {
    InProcessAdmin::start(admin::Config {
        sync: vec![SyncMode::Websocket, SyncMode::Http],
        sync_token: sync_token.map(str::to_owned),
        long_poll_hold: Duration::from_millis(200),
        ..admin::Config::new(":memory:")
    })
    .await
}

/// A gateway syncing from `admin` in `sync` mode, sending `sync_token` if any.
async fn start_gateway(
    admin: &InProcessAdmin,
    sync: SyncMode,
    sync_token: Option<&str>,
) -> Gateway {
    let config = gateway::Config {
        sync_token: sync_token.map(str::to_owned),
        ..gateway::Config::new(sync, vec![format!("http://{}", admin.addr)])
    };
    Gateway::start(config).await
}

/// Waits until the gateway holds the admin's full config (five groups, divide among the
/// plugins a new admin database has).
async fn synced(gateway: &Gateway) {
    eventually("the full sync", || async {
        let sync = gateway.sync_health().await;
        (sync["connected"] == true && sync["fullSyncs"].as_u64() >= Some(5)).then_some(())
    })
    .await;
    let plugins: Value = reqwest::get(gateway.url("/actuator/plugins"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(plugins.to_string().contains("divide"), "{plugins}");
}

#[tokio::test]
async fn only_a_gateway_with_the_admins_sync_token_syncs_over_websocket() {
    capture_logs();
    let admin = start_admin(Some(TOKEN)).await;
    let with = start_gateway(&admin, SyncMode::Websocket, Some(TOKEN)).await;
    let without = start_gateway(&admin, SyncMode::Websocket, None).await;
    let wrong = start_gateway(&admin, SyncMode::Websocket, Some("another-token")).await;

    synced(&with).await;

    // Refused, and said so in terms of the flag to set (not just a retry loop).
    let missing = "refused the websocket upgrade with HTTP 401: the admin requires \
                   X-Shenyu-Sync-Token; start the gateway with --sync-token";
    let rejected = "refused the websocket upgrade with HTTP 401: the X-Shenyu-Sync-Token \
                    given with --sync-token (GANTRY_GATEWAY_SYNC_TOKEN) is not the admin's";
    eventually("both refusals logged", || async {
        let logs = logged();
        (logs.contains(missing) && logs.contains(rejected)).then_some(())
    })
    .await;
    for refused in [&without, &wrong] {
        let sync = refused.sync_health().await;
        assert_eq!(sync["connected"], false, "{sync}");
        assert_eq!(sync["fullSyncs"], 0, "{sync}");
        assert_eq!(sync["eventsApplied"], 0, "{sync}");
    }
    let logs = logged();
    assert!(
        !logs.contains(TOKEN),
        "the token must not be logged:\n{logs}"
    );

    for gateway in [with, without, wrong] {
        gateway.stop().await;
    }
    admin.stop().await;
}

/// The admin checks the sync token on `/websocket` only: long polling logs in with the user
/// name and password and syncs whether or not a sync token is set on either side.
#[tokio::test]
async fn http_long_polling_does_not_need_the_sync_token() {
    capture_logs();
    let admin = start_admin(Some(TOKEN)).await;
    let gateway = start_gateway(&admin, SyncMode::Http, None).await;
    synced(&gateway).await;
    gateway.stop().await;
    admin.stop().await;
}

#[test]
fn the_sync_token_is_redacted_in_debug_output() {
    let config = gateway::Config {
        sync_token: Some(TOKEN.to_owned()),
        ..gateway::Config::new(
            SyncMode::Websocket,
            vec!["http://127.0.0.1:9095".to_owned()],
        )
    };
    let shown = format!("{config:?}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(!shown.contains("123456"), "{shown}");
    assert!(
        shown.contains("sync_token: Some(\"<redacted>\")"),
        "{shown}"
    );
}

#[test]
fn a_sync_token_that_cannot_be_a_header_is_refused_at_start() {
    let config = gateway::Config {
        sync_token: Some("line\nbreak".to_owned()),
        ..gateway::Config::new(
            SyncMode::Websocket,
            vec!["http://127.0.0.1:9095".to_owned()],
        )
    };
    let err = config.check().unwrap_err().to_string();
    assert!(err.contains("--sync-token"), "{err}");
}
