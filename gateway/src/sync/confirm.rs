//! Sync confirmations (a gantry extension behind the admin's `GET /gantry/sync-status`): after
//! the gateway applies a change (its `GET /actuator/digest` changes) it tells the admin
//! which digest it now serves, in a [`SyncConfirmation`], on its sync channel:
//!
//! - websocket: a text frame on the session (`{"gantrySyncConfirm":{...}}`), sent once the
//!   session is open and after every change;
//! - http long polling: the [`model::SYNC_CONFIRM_HEADER`] on every long poll and fetch;
//! - zookeeper / etcd: an ephemeral znode / a key under a lease ([`STORE_LEASE`]) at
//!   `/gantry/sync-status/<gatewayId>`, rewritten after every change, over a store session of
//!   its own; the node goes away with the session (the lease) when the gateway dies.
//!
//! Off unless the binary turns it on ([`confirm_sync`]): `--hide-extras` leaves it off (a
//! plain ShenYu gateway sends none), and so does an in-process gateway (`gantry sim`, tests).

use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context;
use etcd_client as etcd;
use http::HeaderValue;
use model::{Backoff, SyncConfirmation, SyncMode};
use tokio::sync::watch;
use zookeeper_client as zk;

use super::{SyncState, back_off};

/// The lease of an etcd gateway's key, and the ZooKeeper session timeout of its znode's
/// session: how long the node outlives a gateway that died.
const STORE_LEASE: Duration = Duration::from_secs(10);

/// A bound on each store request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Who this gateway is, once confirmations are on.
#[derive(Debug)]
struct Identity {
    id: String,
    address: String,
}

static IDENTITY: OnceLock<Identity> = OnceLock::new();

/// Turns sync confirmations on for this process, advertising the proxy address `address`
/// (`host:port`); the gateway id is made once per process (its pid and start time). The
/// first call wins.
pub fn confirm_sync(address: String) {
    let started = model::world::since_epoch().as_micros();
    let id = format!("gw-{}-{started:x}", std::process::id());
    let _ = IDENTITY.set(Identity { id, address });
}

/// Tells who waits for it of every config swapped in (its version).
#[derive(Debug)]
pub(crate) struct Applied(watch::Sender<u64>);

impl Default for Applied {
    fn default() -> Self {
        Applied(watch::Sender::new(0))
    }
}

impl Applied {
    /// The config of `version` was swapped in.
    pub(crate) fn tell(&self, version: u64) {
        self.0.send_replace(version);
    }
}

impl SyncState {
    /// Whether confirmations are on.
    pub(crate) fn confirming(&self) -> bool {
        IDENTITY.get().is_some()
    }

    /// The confirmation of the config served now, when confirmations are on.
    pub(crate) fn confirmation(&self) -> Option<SyncConfirmation> {
        Some(self.confirmation_of(IDENTITY.get()?))
    }

    /// The confirmation `identity` sends of the config served now.
    fn confirmation_of(&self, identity: &Identity) -> SyncConfirmation {
        let snapshot = self.snapshot();
        SyncConfirmation {
            gateway_id: identity.id.clone(),
            address: identity.address.clone(),
            mode: self.mode,
            digest: snapshot.digest.digest.clone(),
            applied_at_us: snapshot.applied_at_us,
        }
    }

    /// [`Self::confirmation`] as the long-poll header's value.
    pub(crate) fn confirmation_header(&self) -> Option<HeaderValue> {
        let json = serde_json::to_string(&self.confirmation()?).ok()?;
        HeaderValue::from_str(&json).ok()
    }

    /// A subscription to the configs swapped in from now on.
    pub(crate) fn applied(&self) -> watch::Receiver<u64> {
        self.applied.0.subscribe()
    }
}

/// Runs `subscriber` and, when confirmations are on, keeps the gateway's confirmation node in
/// the store (`url`, of `state`'s mode: zookeeper or etcd) beside it.
pub(crate) async fn beside(
    subscriber: impl Future<Output = ()>,
    state: std::sync::Arc<SyncState>,
    url: String,
) {
    if state.confirming() {
        tokio::join!(subscriber, keep_node(state, url));
    } else {
        subscriber.await;
    }
}

/// Writes the confirmation node after every change, reconnecting (after a back-off) when the
/// store fails.
async fn keep_node(state: std::sync::Arc<SyncState>, url: String) {
    let mut backoff = Backoff::new();
    loop {
        let ended = match state.mode {
            SyncMode::Etcd => etcd_node(&state, &url, &mut backoff).await,
            _ => zookeeper_node(&state, &url, &mut backoff).await,
        };
        if let Err(e) = ended {
            tracing::debug!(
                error = format!("{e:#}"),
                "sync confirmation node lost; writing it again"
            );
        }
        back_off(&mut backoff).await;
    }
}

/// The confirmation's node value, and its path.
fn node(state: &SyncState) -> Option<(String, Vec<u8>)> {
    let confirmation = state.confirmation()?;
    let path = SyncConfirmation::store_path(&confirmation.gateway_id);
    let value = serde_json::to_vec(&confirmation).ok()?;
    Some((path, value))
}

async fn bounded<T, E>(what: &str, fut: impl Future<Output = Result<T, E>>) -> anyhow::Result<T>
where
    E: std::error::Error + Send + Sync + 'static,
{
    tokio::time::timeout(REQUEST_TIMEOUT, fut)
        .await
        .map_err(|_| anyhow::anyhow!("{what} timed out"))?
        .with_context(|| what.to_owned())
}

/// An ephemeral znode, set after every change, until the session fails.
async fn zookeeper_node(state: &SyncState, url: &str, backoff: &mut Backoff) -> anyhow::Result<()> {
    let client = bounded(
        "connecting to ZooKeeper",
        zk::Client::connector()
            .with_session_timeout(STORE_LEASE)
            .connect(url.trim()),
    )
    .await?;
    let mut applied = state.applied();
    let mut session = client.state_watcher();
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let mut created = false;
    loop {
        applied.borrow_and_update();
        let Some((path, value)) = node(state) else {
            return Ok(());
        };
        if created {
            bounded(
                "setting the confirmation znode",
                client.set_data(&path, &value, None),
            )
            .await?;
        } else {
            let parent = &path[..path.rfind('/').unwrap_or(0)];
            match client.mkdir(parent, &persistent).await {
                Ok(()) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(e).context("creating the confirmation parent"),
            }
            bounded(
                "creating the confirmation znode",
                client.create(&path, &value, &ephemeral),
            )
            .await?;
            created = true;
            backoff.reset();
        }
        tokio::select! {
            changed = applied.changed() => changed.context("the gateway is gone")?,
            lost = session.changed() => anyhow::bail!("ZooKeeper session {lost:?}"),
        }
    }
}

/// A key under a lease kept alive, put after every change, until a request fails.
async fn etcd_node(state: &SyncState, url: &str, backoff: &mut Backoff) -> anyhow::Result<()> {
    let endpoints: Vec<&str> = url
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    let mut client = bounded("connecting to etcd", etcd::Client::connect(endpoints, None)).await?;
    let ttl = i64::try_from(STORE_LEASE.as_secs()).unwrap_or(10);
    let lease = bounded("granting a lease", client.lease_grant(ttl, None))
        .await?
        .id();
    let (mut keeper, mut answers) =
        bounded("keeping the lease alive", client.lease_keep_alive(lease)).await?;
    let mut renew = tokio::time::interval(STORE_LEASE / 3);
    let mut applied = state.applied();
    let mut write = true;
    loop {
        if write {
            applied.borrow_and_update();
            let Some((path, value)) = node(state) else {
                return Ok(());
            };
            let options = etcd::PutOptions::new().with_lease(lease);
            bounded(
                "putting the confirmation key",
                client.put(path, value, Some(options)),
            )
            .await?;
            backoff.reset();
        }
        tokio::select! {
            changed = applied.changed() => {
                changed.context("the gateway is gone")?;
                write = true;
            }
            _ = renew.tick() => {
                bounded("renewing the lease", keeper.keep_alive()).await?;
                let answer = bounded("renewing the lease", answers.message()).await?;
                if answer.is_none_or(|a| a.ttl() <= 0) {
                    anyhow::bail!("the lease expired");
                }
                write = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::Registry;

    #[test]
    fn a_change_is_told_and_confirmed_with_the_digest_served() {
        let state = SyncState::new(SyncMode::Websocket, Registry::standard());
        let applied = state.applied();
        let before = state.snapshot().digest.digest.clone();
        state.apply_text(r#"{"groupType":"SELECTOR","eventType":"MYSELF","data":[{"id":"1","pluginName":"divide","sort":1,"enabled":true}]}"#).unwrap();
        assert!(applied.has_changed().unwrap(), "the swap is told");
        // Not through `confirm_sync`: the process-wide switch would reach the other tests.
        assert!(
            !state.confirming() && state.confirmation_header().is_none(),
            "off by default"
        );
        let identity = Identity {
            id: "gw-1".into(),
            address: "127.0.0.1:9195".into(),
        };
        let confirmation = state.confirmation_of(&identity);
        assert_ne!(confirmation.digest, before);
        assert_eq!(confirmation.digest, state.snapshot().digest.digest);
        assert_eq!(confirmation.mode, SyncMode::Websocket);
        assert_eq!(confirmation.applied_at_us, state.snapshot().applied_at_us);
    }
}
