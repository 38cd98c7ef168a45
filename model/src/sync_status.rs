//! Sync status, a gantry extension in the spirit of `istioctl proxy-status`: the
//! [`SyncConfirmation`] a gantry gateway sends its admin after it applied a change, and the
//! [`SyncStatusReport`] the admin serves on `GET /gantry/sync-status` (one
//! [`GatewaySyncStatus`] per gateway it syncs, in a [`GatewaySyncState`]).
//!
//! How a confirmation travels depends on the sync mode: a websocket text frame
//! ([`SyncConfirmation::to_websocket_text`]), the [`SYNC_CONFIRM_HEADER`] on each long poll,
//! or a node under [`SYNC_STATUS_PREFIX`] in ZooKeeper / etcd (an ephemeral znode, a leased
//! key). A ShenYu gateway sends none of them.

use serde::{Deserialize, Serialize};

use crate::sync_mode::SyncMode;
use crate::wire_enum::wire_enum;

/// The header a long-polling gantry gateway puts on `POST /configs/listener`: its
/// [`SyncConfirmation`] as JSON.
pub const SYNC_CONFIRM_HEADER: &str = "X-Gantry-Sync-Confirm";

/// Where ZooKeeper / etcd gateways write their [`SyncConfirmation`]: one node (key)
/// `<prefix>/<gatewayId>`, outside ShenYu's `/shenyu` tree.
pub const SYNC_STATUS_PREFIX: &str = "/gantry/sync-status";

/// The key of a websocket confirmation frame (`{"gantrySyncConfirm":{...}}`): no ShenYu
/// command or event has it.
const WEBSOCKET_KEY: &str = "gantrySyncConfirm";

/// What a gateway tells its admin once it applied a change: the digest of the config it now
/// serves (as its `GET /actuator/digest` reports it) and when it swapped it in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SyncConfirmation {
    /// The gateway's id, stable for the life of its process.
    pub gateway_id: String,
    /// The proxy address the gateway advertises (`host:port`).
    pub address: String,
    /// The gateway's sync mode.
    pub mode: SyncMode,
    /// The digest of the config it serves ([`crate::DigestReport::digest`]).
    pub digest: String,
    /// When that config was swapped in, in µs since the Unix epoch.
    pub applied_at_us: u64,
}

impl SyncConfirmation {
    /// The confirmation as a websocket text frame: `{"gantrySyncConfirm":{...}}`.
    pub fn to_websocket_text(&self) -> String {
        serde_json::json!({ WEBSOCKET_KEY: self }).to_string()
    }

    /// The confirmation a websocket text frame carries, if it is one.
    pub fn from_websocket_text(text: &str) -> Option<SyncConfirmation> {
        #[derive(Deserialize)]
        struct Frame {
            #[serde(rename = "gantrySyncConfirm")]
            confirmation: SyncConfirmation,
        }
        if !text.trim_start().starts_with('{') || !text.contains(WEBSOCKET_KEY) {
            return None;
        }
        serde_json::from_str::<Frame>(text)
            .ok()
            .map(|f| f.confirmation)
    }

    /// The node (key) a ZooKeeper / etcd gateway writes it at.
    pub fn store_path(gateway_id: &str) -> String {
        format!("{SYNC_STATUS_PREFIX}/{gateway_id}")
    }
}

wire_enum! {
    /// Where a gateway stands against the admin's current config.
    GatewaySyncState, "sync state" {
        /// The gateway confirmed the admin's current digest.
        Synced = "SYNCED",
        /// The admin has not sent its current config to the gateway yet (websocket: not
        /// pushed on its session; http: no long poll or fetch of the gateway answered since
        /// the change; zookeeper / etcd: not yet written to the store).
        NotSent = "NOT SENT" | "NOT_SENT",
        /// Sent, not confirmed yet, within the grace period (`--sync-stale-after-ms`).
        Sent = "SENT",
        /// Sent, and not confirmed within the grace period.
        Stale = "STALE",
        /// The gateway syncs but has never sent a confirmation (a ShenYu gateway, or a gantry
        /// gateway run with `--hide-extras`).
        Unknown = "UNKNOWN",
    }
}

/// One gateway the admin syncs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GatewaySyncStatus {
    /// The gateway's id; for a gateway that never confirmed, the admin's name for its
    /// session (`websocket-session-<n>`, `http-<client ip>`).
    pub id: String,
    /// The proxy address it advertises, or its client address (`ip:port` of the sync
    /// connection) when it never confirmed.
    pub address: String,
    /// Its sync mode.
    pub mode: SyncMode,
    /// Where it stands.
    pub state: GatewaySyncState,
    /// The digest it last confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// When it says it applied that digest (µs since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_at_us: Option<u64>,
    /// When the admin received its last confirmation (µs since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at_us: Option<u64>,
    /// When the admin last sent it a change (µs since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_at_us: Option<u64>,
    /// Whether its sync link is up as the admin sees it: an open websocket session, a long
    /// poll within the last hold, its node present in the store.
    pub connected: bool,
}

/// `GET /gantry/sync-status`: the admin's digest and every gateway it syncs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SyncStatusReport {
    /// The digest of the admin's committed config (`GET /actuator/digest`).
    pub admin_digest: String,
    /// The grace period after which a sent, unconfirmed config is STALE.
    pub stale_after_ms: u64,
    /// The gateways, by id.
    pub gateways: Vec<GatewaySyncStatus>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confirmation() -> SyncConfirmation {
        SyncConfirmation {
            gateway_id: "gw-1".into(),
            address: "127.0.0.1:9195".into(),
            mode: SyncMode::Websocket,
            digest: "ab".into(),
            applied_at_us: 7,
        }
    }

    #[test]
    fn a_websocket_frame_round_trips_and_shenyu_frames_are_not_confirmations() {
        let text = confirmation().to_websocket_text();
        assert_eq!(
            text,
            r#"{"gantrySyncConfirm":{"address":"127.0.0.1:9195","appliedAtUs":7,"digest":"ab","gatewayId":"gw-1","mode":"websocket"}}"#
        );
        assert_eq!(
            SyncConfirmation::from_websocket_text(&text),
            Some(confirmation())
        );
        for other in ["MYSELF", "RUNNING_MODE", r#"{"gantrySyncConfirm":{}}"#, "{"] {
            assert_eq!(
                SyncConfirmation::from_websocket_text(other),
                None,
                "{other}"
            );
        }
    }

    #[test]
    fn states_read_their_wire_names_and_the_underscore_alias() {
        assert_eq!("NOT SENT".parse(), Ok(GatewaySyncState::NotSent));
        assert_eq!("NOT_SENT".parse(), Ok(GatewaySyncState::NotSent));
        assert_eq!(
            serde_json::to_string(&GatewaySyncState::Stale).unwrap(),
            r#""STALE""#
        );
        assert!("stale".parse::<GatewaySyncState>().is_err());
    }
}
