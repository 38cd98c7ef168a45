//! The registry of the gateways this admin syncs, behind `GET /gantry/sync-status` (a gantry
//! extension, like `istioctl proxy-status`): per gateway its address, mode, the digest it last
//! confirmed and when, and its [`GatewaySyncState`] against the admin's own digest.
//!
//! **Changes.** Every committed change (an event of the dispatcher) gets a sequence number
//! the first time anyone here sees it ([`SyncStatus::note`]): the registry's own subscription
//! or a publisher about to send it, whichever comes first, so a send is never counted before
//! the change it sends. The admin's current config is the last change noted.
//!
//! **Sent**, per mode: websocket, the session pushed the change's frame (or a full sync after
//! it); http, the admin answered a long poll of the gateway naming a changed group, or served
//! it a fetch, after the change (the cache it answers from is fed by the same events);
//! zookeeper / etcd, the publisher wrote the change to the store (one mark for every gateway
//! of that mode: the admin does not talk to them).
//!
//! **States.** SYNCED: the gateway's last confirmed digest is the admin's. Otherwise NOT SENT
//! when the admin has not sent its current config to it, SENT when it has, less than the
//! grace period (`--sync-stale-after-ms`) ago, STALE when longer ago. UNKNOWN: the gateway
//! syncs but never confirmed (a ShenYu gateway, or gantry's with `--hide-extras`); in the
//! zookeeper and etcd modes such a gateway writes nothing, so the admin cannot list it at
//! all. A gateway whose link went away stays listed (`connected: false`) for
//! [`FORGET_AFTER`], so a partitioned one shows STALE instead of vanishing.

mod store_reader;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use model::lock::MutexExt;
use model::{
    GatewaySyncState, GatewaySyncStatus, SYNC_CONFIRM_HEADER, SyncConfirmation, SyncMode,
    SyncStatusReport,
};
use tokio::sync::broadcast;
use tokio::time::Instant;

pub(crate) use self::store_reader::read_store;
use crate::service::SharedEvent;

/// The default grace period (`--sync-stale-after-ms`): a gateway on a healthy link applies
/// and confirms a change within milliseconds; five seconds leave room for a loaded CI host.
pub(crate) const DEFAULT_STALE_AFTER: Duration = Duration::from_secs(5);

/// How long a gateway whose link went away stays listed.
const FORGET_AFTER: Duration = Duration::from_secs(600);

/// How long after its last poll a long-polling gateway counts as connected.
const POLL_SILENCE: Duration = Duration::from_secs(10);

/// How many changes are remembered for [`SyncStatus::note`]: as many as a session may fall
/// behind before it is closed.
const REMEMBERED: usize = 1024;

/// The registry (one per admin, shared by the publishers and the endpoint).
#[derive(Debug)]
pub(crate) struct SyncStatus {
    stale_after: Duration,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The changes noted last, with their sequence numbers.
    changes: VecDeque<(SharedEvent, u64)>,
    /// The sequence number of the last change noted (0: none since the start).
    seq: u64,
    /// Zookeeper / etcd: the last change the publisher wrote to the store, and when.
    written: HashMap<SyncMode, Sent>,
    gateways: BTreeMap<String, Gateway>,
    /// Names anonymous websocket sessions.
    sessions: u64,
}

/// A change sent: its sequence number and when.
#[derive(Debug, Clone, Copy)]
struct Sent {
    seq: u64,
    at: Instant,
    at_us: u64,
}

impl Sent {
    fn now(seq: u64) -> Sent {
        Sent {
            seq,
            at: Instant::now(),
            at_us: now_us(),
        }
    }
}

#[derive(Debug)]
struct Gateway {
    address: String,
    mode: SyncMode,
    /// The last confirmation and when it arrived (µs).
    confirmed: Option<(SyncConfirmation, u64)>,
    /// Websocket / http: the last change sent to it.
    sent: Option<Sent>,
    /// Websocket sessions open; for http, polls in flight.
    links: usize,
    /// When it was last heard of (a poll, a session end, its node read).
    seen: Instant,
}

impl Gateway {
    fn new(address: String, mode: SyncMode) -> Gateway {
        Gateway {
            address,
            mode,
            confirmed: None,
            sent: None,
            links: 0,
            seen: Instant::now(),
        }
    }

    fn connected(&self, now: Instant) -> bool {
        match self.mode {
            SyncMode::Http => self.links > 0 || now.duration_since(self.seen) < POLL_SILENCE,
            _ => self.links > 0,
        }
    }
}

/// Wall-clock µs since the Unix epoch (the simulator's clock under `gantry sim`).
fn now_us() -> u64 {
    u64::try_from(model::world::since_epoch().as_micros()).unwrap_or(u64::MAX)
}

impl SyncStatus {
    /// A registry calling a sent, unconfirmed config STALE after `stale_after`, noting every
    /// change `events` carries (the admin's subscription; the task ends with the admin).
    pub(crate) fn start(
        stale_after: Duration,
        mut events: broadcast::Receiver<SharedEvent>,
    ) -> Arc<SyncStatus> {
        let status = Arc::new(SyncStatus {
            stale_after,
            inner: Mutex::default(),
        });
        let weak = Arc::downgrade(&status);
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(event) => match weak.upgrade() {
                        Some(status) => {
                            status.note(&event);
                        }
                        None => return,
                    },
                    // Missed ones are noted by the publishers that send them.
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        status
    }

    /// The sequence number of `event`, numbering it if it is new. Every receiver sees the
    /// events in one order, so whoever sees one first has noted those before it.
    pub(crate) fn note(&self, event: &SharedEvent) -> u64 {
        let mut inner = self.inner.locked();
        let target: *const model::DataEvent = &**event;
        if let Some((_, seq)) = inner
            .changes
            .iter()
            .rev()
            .find(|(e, _)| std::ptr::eq(&**e, target))
        {
            return *seq;
        }
        inner.seq += 1;
        let seq = inner.seq;
        if inner.changes.len() == REMEMBERED {
            inner.changes.pop_front();
        }
        inner.changes.push_back((event.clone(), seq));
        seq
    }

    /// The last change noted.
    pub(crate) fn current(&self) -> u64 {
        self.inner.locked().seq
    }

    /// A websocket session opened from `peer`: its name until it confirms.
    pub(crate) fn session_opened(&self, peer: Option<SocketAddr>) -> String {
        let mut inner = self.inner.locked();
        inner.sessions += 1;
        let key = format!("websocket-session-{}", inner.sessions);
        let address = peer.map(|p| p.to_string()).unwrap_or_default();
        let mut gateway = Gateway::new(address, SyncMode::Websocket);
        gateway.links = 1;
        inner.gateways.insert(key.clone(), gateway);
        key
    }

    /// A websocket session (`key`, as [`Self::session_opened`] or [`Self::confirmed`] named
    /// it) ended.
    pub(crate) fn session_closed(&self, key: &str) {
        let mut inner = self.inner.locked();
        let anonymous = match inner.gateways.get_mut(key) {
            Some(gateway) => {
                gateway.links = gateway.links.saturating_sub(1);
                gateway.seen = Instant::now();
                gateway.confirmed.is_none()
            }
            None => false,
        };
        if anonymous {
            // Nothing to recognise it by when it comes back.
            inner.gateways.remove(key);
        }
    }

    /// A confirmation arrived on the link named `key` (a websocket session); answers the
    /// gateway's key from now on (its id).
    pub(crate) fn confirmed(&self, key: &str, confirmation: SyncConfirmation) -> String {
        let mut inner = self.inner.locked();
        let id = confirmation.gateway_id.clone();
        if key != id
            && let Some(session) = inner.gateways.remove(key)
        {
            let gateway = inner
                .gateways
                .entry(id.clone())
                .or_insert_with(|| Gateway::new(String::new(), session.mode));
            gateway.links += session.links;
            gateway.sent = gateway.sent.max_by_seq(session.sent);
        }
        Self::confirm(&mut inner, confirmation);
        id
    }

    /// Records `confirmation` for its gateway (created if new).
    fn confirm(inner: &mut Inner, confirmation: SyncConfirmation) {
        let gateway = inner
            .gateways
            .entry(confirmation.gateway_id.clone())
            .or_insert_with(|| Gateway::new(String::new(), confirmation.mode));
        gateway.address.clone_from(&confirmation.address);
        gateway.mode = confirmation.mode;
        gateway.seen = Instant::now();
        let same = gateway.confirmed.as_ref().is_some_and(|(c, _)| {
            c.digest == confirmation.digest && c.applied_at_us == confirmation.applied_at_us
        });
        if !same {
            gateway.confirmed = Some((confirmation, now_us()));
        }
    }

    /// The admin sent its config as of change `seq` to the gateway named `key`.
    pub(crate) fn sent(&self, key: &str, seq: u64) {
        if let Some(gateway) = self.inner.locked().gateways.get_mut(key) {
            gateway.sent = Some(Sent::now(seq)).max_by_seq(gateway.sent);
        }
    }

    /// A long poll (or fetch) arrived from a gateway: with its confirmation, or from the
    /// client `peer` when it sends none. Answers its key; [`Self::poll_ended`] must follow.
    pub(crate) fn poll_began(
        &self,
        confirmation: Option<SyncConfirmation>,
        peer: Option<SocketAddr>,
    ) -> String {
        let mut inner = self.inner.locked();
        let key = match confirmation {
            Some(confirmation) => {
                let key = confirmation.gateway_id.clone();
                Self::confirm(&mut inner, confirmation);
                key
            }
            None => {
                let ip = peer.map(|p| p.ip().to_string()).unwrap_or_default();
                let key = format!("http-{ip}");
                let address = peer.map(|p| p.to_string()).unwrap_or_default();
                let gateway = inner
                    .gateways
                    .entry(key.clone())
                    .or_insert_with(|| Gateway::new(String::new(), SyncMode::Http));
                gateway.address = address;
                key
            }
        };
        if let Some(gateway) = inner.gateways.get_mut(&key) {
            gateway.links += 1;
            gateway.seen = Instant::now();
        }
        key
    }

    /// [`Self::poll_began`], ended by dropping the answer.
    pub(crate) fn poll(
        self: &Arc<Self>,
        confirmation: Option<SyncConfirmation>,
        peer: Option<SocketAddr>,
    ) -> Poll {
        Poll {
            key: self.poll_began(confirmation, peer),
            status: Arc::clone(self),
        }
    }

    /// The poll [`Self::poll_began`] named `key` was answered.
    pub(crate) fn poll_ended(&self, key: &str) {
        if let Some(gateway) = self.inner.locked().gateways.get_mut(key) {
            gateway.links = gateway.links.saturating_sub(1);
            gateway.seen = Instant::now();
        }
    }

    /// Zookeeper / etcd: the publisher wrote the store up to change `seq`.
    pub(crate) fn written(&self, mode: SyncMode, seq: u64) {
        let mut inner = self.inner.locked();
        let written = Some(Sent::now(seq)).max_by_seq(inner.written.get(&mode).copied());
        if let Some(written) = written {
            inner.written.insert(mode, written);
        }
    }

    /// Zookeeper / etcd: the confirmations read from the store (every gateway of `mode`
    /// present); the gateways of `mode` missing from it are disconnected.
    pub(crate) fn store_read(&self, mode: SyncMode, confirmations: Vec<SyncConfirmation>) {
        let mut inner = self.inner.locked();
        let now = Instant::now();
        for gateway in inner.gateways.values_mut().filter(|g| g.mode == mode) {
            gateway.links = 0;
        }
        for confirmation in confirmations {
            let id = confirmation.gateway_id.clone();
            Self::confirm(&mut inner, confirmation);
            if let Some(gateway) = inner.gateways.get_mut(&id) {
                gateway.links = 1;
                gateway.seen = now;
            }
        }
    }

    /// The report against the admin's digest `admin_digest`.
    pub(crate) fn report(&self, admin_digest: String) -> SyncStatusReport {
        self.report_at(admin_digest, Instant::now())
    }

    /// [`Self::report`] as of `now`.
    fn report_at(&self, admin_digest: String, now: Instant) -> SyncStatusReport {
        let mut inner = self.inner.locked();
        inner
            .gateways
            .retain(|_, g| g.connected(now) || now.duration_since(g.seen) < FORGET_AFTER);
        let gateways = inner
            .gateways
            .iter()
            .map(|(id, g)| {
                let sent = match g.mode {
                    SyncMode::Websocket | SyncMode::Http => g.sent,
                    SyncMode::Zookeeper | SyncMode::Etcd => inner.written.get(&g.mode).copied(),
                };
                GatewaySyncStatus {
                    id: id.clone(),
                    address: g.address.clone(),
                    mode: g.mode,
                    state: self.state(g, sent, inner.seq, &admin_digest, now),
                    digest: g.confirmed.as_ref().map(|(c, _)| c.digest.clone()),
                    applied_at_us: g.confirmed.as_ref().map(|(c, _)| c.applied_at_us),
                    confirmed_at_us: g.confirmed.as_ref().map(|(_, at)| *at),
                    sent_at_us: sent.map(|s| s.at_us),
                    connected: g.connected(now),
                }
            })
            .collect();
        SyncStatusReport {
            admin_digest,
            stale_after_ms: u64::try_from(self.stale_after.as_millis()).unwrap_or(u64::MAX),
            gateways,
        }
    }

    /// Where `gateway` stands: `sent` its last change sent, `current` the admin's.
    fn state(
        &self,
        gateway: &Gateway,
        sent: Option<Sent>,
        current: u64,
        admin_digest: &str,
        now: Instant,
    ) -> GatewaySyncState {
        let Some((confirmation, _)) = &gateway.confirmed else {
            return GatewaySyncState::Unknown;
        };
        if confirmation.digest == admin_digest {
            return GatewaySyncState::Synced;
        }
        match sent {
            Some(sent) if sent.seq >= current => {
                if now.duration_since(sent.at) >= self.stale_after {
                    GatewaySyncState::Stale
                } else {
                    GatewaySyncState::Sent
                }
            }
            _ => GatewaySyncState::NotSent,
        }
    }
}

/// A long poll or fetch in progress ([`SyncStatus::poll`]); dropping it ends it.
#[derive(Debug)]
pub(crate) struct Poll {
    status: Arc<SyncStatus>,
    key: String,
}

impl Poll {
    /// The answer sends the gateway the admin's config as of the last change noted (a
    /// listener answer naming changed groups, a fetch).
    pub(crate) fn sent(&self) {
        self.status.sent(&self.key, self.status.current());
    }
}

impl Drop for Poll {
    fn drop(&mut self) {
        self.status.poll_ended(&self.key);
    }
}

/// The later of two sends.
trait Later {
    fn max_by_seq(self, other: Option<Sent>) -> Option<Sent>;
}

impl Later for Option<Sent> {
    fn max_by_seq(self, other: Option<Sent>) -> Option<Sent> {
        match (self, other) {
            (Some(a), Some(b)) if b.seq > a.seq => Some(b),
            (Some(a), _) => Some(a),
            (None, b) => b,
        }
    }
}

/// The client address of a sync connection, when the server records it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub(crate) Option<SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        Ok(Peer(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| *addr),
        ))
    }
}

/// The [`SYNC_CONFIRM_HEADER`] of a long poll, when it carries a readable one.
#[derive(Debug, Clone)]
pub(crate) struct Confirming(pub(crate) Option<SyncConfirmation>);

impl<S: Send + Sync> FromRequestParts<S> for Confirming {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        Ok(Confirming(
            parts
                .headers
                .get(SYNC_CONFIRM_HEADER)
                .and_then(|v| serde_json::from_slice(v.as_bytes()).ok()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use model::{DataEvent, DataEventType, EventPayload};

    use super::*;

    fn event() -> SharedEvent {
        SharedEvent::new(DataEvent::new(
            DataEventType::Update,
            EventPayload::Plugin(Vec::new()),
        ))
    }

    fn confirmation(id: &str, mode: SyncMode, digest: &str) -> SyncConfirmation {
        SyncConfirmation {
            gateway_id: id.into(),
            address: format!("{id}:9195"),
            mode,
            digest: digest.into(),
            applied_at_us: 1,
        }
    }

    fn registry(stale_after: Duration) -> Arc<SyncStatus> {
        let (_tx, rx) = broadcast::channel(4);
        SyncStatus::start(stale_after, rx)
    }

    fn state_of(report: &SyncStatusReport, id: &str) -> GatewaySyncState {
        report
            .gateways
            .iter()
            .find(|g| g.id == id)
            .unwrap_or_else(|| panic!("{id} not in {report:?}"))
            .state
    }

    #[tokio::test]
    async fn a_change_is_numbered_once_whoever_sees_it_first() {
        let status = registry(DEFAULT_STALE_AFTER);
        let (a, b) = (event(), event());
        // The same change as another receiver of the broadcast holds it.
        let a_elsewhere = a.clone();
        assert_eq!(status.note(&a), 1);
        assert_eq!(status.note(&b), 2);
        assert_eq!(status.note(&a_elsewhere), 1, "the same change");
        assert_eq!(status.current(), 2);
    }

    /// A websocket gateway goes UNKNOWN → SYNCED → NOT SENT → SENT → STALE → SYNCED.
    #[tokio::test]
    async fn a_websocket_gateway_moves_through_every_state() {
        let status = registry(Duration::from_secs(5));
        let key = status.session_opened(None);
        assert_eq!(
            state_of(&status.report("d1".into()), &key),
            GatewaySyncState::Unknown
        );
        let id = status.confirmed(&key, confirmation("gw", SyncMode::Websocket, "d1"));
        assert_eq!(id, "gw");
        let report = status.report("d1".into());
        assert_eq!(report.gateways.len(), 1, "the session became the gateway");
        assert_eq!(state_of(&report, "gw"), GatewaySyncState::Synced);
        assert!(report.gateways[0].connected);

        let change = status.note(&event());
        assert_eq!(
            state_of(&status.report("d2".into()), "gw"),
            GatewaySyncState::NotSent
        );
        status.sent(&id, change);
        assert_eq!(
            state_of(&status.report("d2".into()), "gw"),
            GatewaySyncState::Sent
        );
        let later = Instant::now() + Duration::from_secs(5);
        assert_eq!(
            state_of(&status.report_at("d2".into(), later), "gw"),
            GatewaySyncState::Stale
        );
        status.confirmed(&id, confirmation("gw", SyncMode::Websocket, "d2"));
        assert_eq!(
            state_of(&status.report("d2".into()), "gw"),
            GatewaySyncState::Synced
        );

        status.session_closed(&id);
        let report = status.report("d2".into());
        assert!(!report.gateways[0].connected, "kept, disconnected");
    }

    #[tokio::test]
    async fn an_anonymous_session_is_unknown_and_forgotten_when_it_closes() {
        let status = registry(DEFAULT_STALE_AFTER);
        let key = status.session_opened(Some("10.0.0.9:4000".parse().unwrap()));
        let report = status.report("d".into());
        assert_eq!(report.gateways[0].address, "10.0.0.9:4000");
        assert_eq!(report.gateways[0].state, GatewaySyncState::Unknown);
        status.session_closed(&key);
        assert!(status.report("d".into()).gateways.is_empty());
    }

    #[tokio::test]
    async fn store_gateways_share_the_publishers_write_and_stay_listed_when_gone() {
        let status = registry(Duration::from_secs(1));
        status.store_read(
            SyncMode::Zookeeper,
            vec![
                confirmation("a", SyncMode::Zookeeper, "d1"),
                confirmation("b", SyncMode::Zookeeper, "d1"),
            ],
        );
        let change = status.note(&event());
        let report = status.report("d2".into());
        assert_eq!(state_of(&report, "a"), GatewaySyncState::NotSent);
        status.written(SyncMode::Zookeeper, change);
        status.store_read(
            SyncMode::Zookeeper,
            vec![confirmation("a", SyncMode::Zookeeper, "d2")],
        );
        let report = status.report_at("d2".into(), Instant::now() + Duration::from_secs(1));
        assert_eq!(state_of(&report, "a"), GatewaySyncState::Synced);
        assert_eq!(state_of(&report, "b"), GatewaySyncState::Stale);
        let b = report.gateways.iter().find(|g| g.id == "b").unwrap();
        assert!(!b.connected, "its node is gone");
    }

    #[tokio::test]
    async fn a_poll_without_a_confirmation_is_keyed_by_the_client_ip() {
        let status = registry(DEFAULT_STALE_AFTER);
        let key = status.poll_began(None, Some("10.0.0.7:5000".parse().unwrap()));
        assert_eq!(key, "http-10.0.0.7");
        status.poll_ended(&key);
        let key = status.poll_began(
            Some(confirmation("gw", SyncMode::Http, "d")),
            Some("10.0.0.8:5000".parse().unwrap()),
        );
        assert_eq!(key, "gw");
        let report = status.report("d".into());
        assert_eq!(
            state_of(&report, "http-10.0.0.7"),
            GatewaySyncState::Unknown
        );
        assert_eq!(state_of(&report, "gw"), GatewaySyncState::Synced);
    }
}
