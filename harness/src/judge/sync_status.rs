//! The sync status judge: the admin's `GET /gantry/sync-status` (gantry's `istioctl
//! proxy-status`) must show a gateway of the topology in a state (SYNCED, NOT SENT, SENT,
//! STALE, UNKNOWN). States move with time (a change is SENT, then STALE once the admin's
//! grace period passes), so the status is polled until the gateway is in the state or
//! `within` passes; then the check fails with the status last observed.

use std::sync::LazyLock;
use std::time::Duration;

use model::{GatewaySyncState, SyncStatusReport};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::spec::{CheckSpec, Measured, NoVerdict, Observe, ValidateCx};
use super::{Judge, Measurements, Verdict};
use crate::backend::BackendKind;
use crate::scenario::ast::request::RequestSpec;
use crate::scenario::ast::{DurationText, opt_duration};

/// The default `within`: the admin's default grace period (5 s) and room to spare.
const WITHIN: Duration = Duration::from_secs(15);

/// How often the status is read while it is polled.
pub(crate) const POLL_EVERY: Duration = Duration::from_millis(50);

/// `syncStatus:` the admin's sync status shows `gateway[gateway]` in `state` within
/// `within`, e.g. `syncStatus: { gateway: 1, state: STALE }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SyncStatusSpec {
    /// The gateway, by its index in the topology (`gateway[i]`; 0, the default, when there is
    /// one). It is found in the status by the proxy address it advertises.
    #[serde(default)]
    pub gateway: usize,
    /// The state it must reach: `SYNCED`, `NOT SENT`, `SENT`, `STALE` or `UNKNOWN`.
    pub state: GatewaySyncState,
    /// How long the status is polled for the state (default 15s).
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "Option<DurationText>")]
    pub within: Option<Duration>,
}

impl SyncStatusSpec {
    /// How long the status is polled.
    pub(crate) fn within(&self) -> Duration {
        self.within.unwrap_or(WITHIN)
    }
}

/// The expected state of the gateway at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyncStatusJudge<'a> {
    /// How the check names the gateway (`gateway[1]`).
    pub name: &'a str,
    /// The proxy address it advertises (`127.0.0.1:40123`).
    pub address: &'a str,
    /// The state it must be in.
    pub state: GatewaySyncState,
}

/// What the sync status check saw last.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// Status reads made.
    pub reads: u32,
    /// The gateway's state in the last read (absent: not listed).
    pub state: Option<String>,
    /// The whole status last read, as the admin served it.
    pub observed: Option<String>,
}

/// One gateway's line in a failure: `gw-… at 127.0.0.1:1 (websocket) STALE, digest ab12…`.
fn line(g: &model::GatewaySyncStatus) -> String {
    let digest = g
        .digest
        .as_deref()
        .map_or("none", |d| &d[..d.len().min(12)]);
    format!(
        "{} at {} ({}) {}, digest {digest}{}",
        g.id,
        g.address,
        g.mode,
        g.state,
        if g.connected { "" } else { ", disconnected" }
    )
}

impl Judge for SyncStatusJudge<'_> {
    /// The status last read, and how many reads were made.
    type Observation = (SyncStatusReport, u32);

    fn judge(&self, (report, reads): &Self::Observation) -> Verdict {
        let found = report.gateways.iter().find(|g| g.address == self.address);
        let mut failures = Vec::new();
        if found.is_none_or(|g| g.state != self.state) {
            let got = found.map_or_else(
                || format!("it is not listed (no gateway at {})", self.address),
                |g| format!("it is {}", g.state),
            );
            let listed: Vec<String> = report.gateways.iter().map(line).collect();
            let digest = &report.admin_digest;
            failures.push(format!(
                "{} should be {}, but {got}; the admin (digest {}) lists {}",
                self.name,
                self.state,
                &digest[..digest.len().min(12)],
                if listed.is_empty() {
                    "no gateway".to_owned()
                } else {
                    listed.join("; ")
                }
            ));
        }
        Verdict {
            failures,
            measurements: Measurements::SyncStatus(Stats {
                reads: *reads,
                state: found.map(|g| g.state.to_string()),
                observed: serde_json::to_string(report).ok(),
            }),
        }
    }
}

/// No request goes to the gateway; as [`CheckSpec::request`] it names the admin's endpoint,
/// which no gateway routes.
static NO_REQUEST: LazyLock<RequestSpec> = LazyLock::new(|| RequestSpec {
    method: "GET".to_owned(),
    path: "/gantry/sync-status".to_owned(),
    headers: Default::default(),
    query: Default::default(),
    body: None,
});

impl CheckSpec for SyncStatusSpec {
    fn request(&self) -> &RequestSpec {
        &NO_REQUEST
    }

    fn validate(&self, cx: &mut dyn ValidateCx, at: &str) {
        if self.within() < POLL_EVERY {
            cx.problem(
                format!("{at}.within"),
                format!("must be at least {POLL_EVERY:?}"),
            );
        }
    }

    fn skip_on(&self, backend: BackendKind) -> Option<String> {
        match backend {
            BackendKind::External => Some(
                "the sync status is gantry's admin's own (`GET /gantry/sync-status`)".to_owned(),
            ),
            // Until the container backends pass `--advertise` (GANTRY_GATEWAY_ADVERTISE).
            BackendKind::Docker | BackendKind::Swarm => Some(
                "a gateway is found in the sync status by the address it advertises, which                  in a container is its listen address, not the harness's for it"
                    .to_owned(),
            ),
            BackendKind::Host => None,
        }
    }
}

impl Measured for Stats {
    fn summary(&self) -> String {
        format!(
            "{} after {} status reads",
            self.state.as_deref().unwrap_or("not listed"),
            self.reads
        )
    }
}

/// What the sync status check asks of the runner.
pub(crate) trait SyncStatusCx {
    /// How the check names gateway `i` and the proxy address it advertises, or why it cannot.
    fn gateway_address(&self, i: usize) -> Result<(String, String), NoVerdict>;

    /// Reads the admin's sync status.
    async fn sync_status(&self) -> Result<SyncStatusReport, NoVerdict>;
}

impl<C: SyncStatusCx> Observe<C> for SyncStatusSpec {
    /// Reads the status every [`POLL_EVERY`] until the judge passes or `within` is over.
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict> {
        let (name, address) = cx.gateway_address(self.gateway)?;
        let judge = SyncStatusJudge {
            name: &name,
            address: &address,
            state: self.state,
        };
        let deadline = tokio::time::Instant::now() + self.within();
        let mut reads = 0;
        loop {
            let report = cx.sync_status().await?;
            reads += 1;
            let verdict = judge.judge(&(report, reads));
            if verdict.passed() || tokio::time::Instant::now() >= deadline {
                return Ok(verdict);
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use model::{GatewaySyncStatus, SyncMode};

    use super::*;

    fn report(states: &[(&str, GatewaySyncState)]) -> SyncStatusReport {
        SyncStatusReport {
            admin_digest: "0123456789abcdef".into(),
            stale_after_ms: 5000,
            gateways: states
                .iter()
                .map(|(address, state)| GatewaySyncStatus {
                    id: format!("gw-{address}"),
                    address: (*address).to_owned(),
                    mode: SyncMode::Websocket,
                    state: *state,
                    digest: Some("fedcba9876543210".into()),
                    applied_at_us: Some(1),
                    confirmed_at_us: Some(2),
                    sent_at_us: None,
                    connected: true,
                })
                .collect(),
        }
    }

    #[test]
    fn the_gateway_at_the_address_must_be_in_the_state() {
        let judge = SyncStatusJudge {
            name: "gateway[1]",
            address: "127.0.0.1:2",
            state: GatewaySyncState::Stale,
        };
        let right = report(&[
            ("127.0.0.1:1", GatewaySyncState::Synced),
            ("127.0.0.1:2", GatewaySyncState::Stale),
        ]);
        let verdict = judge.judge(&(right, 3));
        assert!(verdict.passed(), "{:?}", verdict.failures);
        let Measurements::SyncStatus(stats) = &verdict.measurements else {
            panic!("{:?}", verdict.measurements);
        };
        assert_eq!((stats.reads, stats.state.as_deref()), (3, Some("STALE")));

        // The other gateway stale, this one synced: the wrong one.
        let swapped = report(&[
            ("127.0.0.1:1", GatewaySyncState::Stale),
            ("127.0.0.1:2", GatewaySyncState::Synced),
        ]);
        assert_eq!(
            judge.judge(&(swapped, 1)).failures,
            vec![
                "gateway[1] should be STALE, but it is SYNCED; the admin (digest 0123456789ab) \
                 lists gw-127.0.0.1:1 at 127.0.0.1:1 (websocket) STALE, digest fedcba987654; \
                 gw-127.0.0.1:2 at 127.0.0.1:2 (websocket) SYNCED, digest fedcba987654"
                    .to_owned()
            ]
        );
        let missing = report(&[("127.0.0.1:1", GatewaySyncState::Stale)]);
        let failures = judge.judge(&(missing, 1)).failures;
        assert!(
            failures[0].contains("it is not listed (no gateway at 127.0.0.1:2)"),
            "{failures:?}"
        );
    }
}
