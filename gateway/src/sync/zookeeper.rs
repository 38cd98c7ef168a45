//! ZooKeeper subscriber (`--sync zookeeper --zookeeper-url host:port`): one persistent
//! recursive watch on `/shenyu` (ZooKeeper ≥ 3.6 `addWatch PERSISTENT_RECURSIVE`), then a full
//! read of the tree applied in one swap; every created or changed node is read and upserted,
//! every deleted node deleted (ShenYu's ZooKeeper gateway drops deletes; gantry does not).
//!
//! Ordering: events arrive in order within a session, but one queued between the watch and
//! the full read may be older than what the read found; so each node event reads the node and
//! applies its state at that moment (data → upsert, gone → delete), never the event's own
//! claim. ZooKeeper's reads within a session are monotonic, so nothing older is applied.
//!
//! A silent partition: the client pings and gives up on a connection that answers nothing
//! for 2/5 of the session timeout (`--sync-silence-ms`, 10 s by default); the session then
//! reports itself disconnected and this subscriber starts over.
//!
//! With [`SyncStyle::Full`] (`--sync-style full`) a node event is only a signal: the whole
//! tree is read again and swapped in at once, as at the start of a session.
//!
//! Events can be lost while the client reconnects (ZOOKEEPER-4698, and a persistent watch is
//! not reliably re-armed on the reconnected session), so a disconnect, an expired or a closed
//! session all start over: a new session, a new watch, a full read swapped in at once.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use futures_util::future::try_join_all;
use model::{SyncStyle, keyspace};
use zookeeper_client as zk;

use super::{Backoff, Subscriber, SyncState, back_off, keyspace as nodes};

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The ZooKeeper subscriber.
#[derive(Debug)]
pub(crate) struct ZookeeperSubscriber {
    url: String,
    /// The session timeout asked for.
    session_timeout: Duration,
    /// [`SyncStyle::Full`]: a node event reads the whole tree again instead of the node.
    style: SyncStyle,
}

impl ZookeeperSubscriber {
    /// A subscriber for the ensemble `url` (`host:port[,host:port]`), asking for
    /// `session_timeout`, taking changes in `style`.
    pub(crate) fn new(
        url: &str,
        session_timeout: Duration,
        style: SyncStyle,
    ) -> ZookeeperSubscriber {
        ZookeeperSubscriber {
            url: url.trim().to_owned(),
            session_timeout,
            style,
        }
    }

    /// One session: watch, read everything, apply events until the session ends.
    async fn session(&self, state: &SyncState, backoff: &mut Backoff) -> anyhow::Result<()> {
        let client = tokio::time::timeout(
            CONNECT_TIMEOUT,
            zk::Client::connector()
                .with_session_timeout(self.session_timeout)
                .connect(&self.url),
        )
        .await
        .map_err(|_| anyhow::anyhow!("connecting to ZooKeeper at {} timed out", self.url))?
        .with_context(|| format!("connecting to ZooKeeper at {}", self.url))?;
        let mut watcher =
            request(client.watch(keyspace::ROOT, zk::AddWatchMode::PersistentRecursive))
                .await
                .context("watching /shenyu")?;
        let items = full_read(&client, state).await?;
        let session = client.session_id().to_string();
        tracing::info!(url = %self.url, items, %session, "ZooKeeper sync connected; config read in full");
        let _connected = state.connected();
        state.set_zookeeper_session(Some(session));
        backoff.reset();
        loop {
            let event = watcher.changed().await;
            match event.event_type {
                zk::EventType::Session => match event.session_state {
                    zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {}
                    // Disconnected, expired, closed, authentication failed.
                    state => anyhow::bail!("ZooKeeper session {state}"),
                },
                // Whatever the event says, the node's state now is applied: an event queued
                // before the full read (a delete of a node since recreated) cannot roll back
                // what the read found.
                zk::EventType::NodeCreated
                | zk::EventType::NodeDataChanged
                | zk::EventType::NodeDeleted
                    if self.style == SyncStyle::Full =>
                {
                    full_read(&client, state).await?;
                }
                zk::EventType::NodeCreated
                | zk::EventType::NodeDataChanged
                | zk::EventType::NodeDeleted => match request(client.get_data(&event.path)).await {
                    Ok((value, _)) => nodes::put(state, &event.path, &value),
                    Err(zk::Error::NoNode) => nodes::delete(state, &event.path),
                    Err(e) => return Err(e).with_context(|| format!("reading {}", event.path)),
                },
                zk::EventType::NodeChildrenChanged => {}
            }
        }
    }
}

/// Runs one request with [`REQUEST_TIMEOUT`] (a timeout is a connection loss).
async fn request<T>(fut: impl Future<Output = Result<T, zk::Error>>) -> Result<T, zk::Error> {
    tokio::time::timeout(REQUEST_TIMEOUT, fut)
        .await
        .unwrap_or(Err(zk::Error::ConnectionLoss))
}

/// Reads every node under `/shenyu` and replaces the config with them in one swap. The tree
/// is read a level at a time, each node's children and data asked for at once and every
/// request of a level in flight together (one session pipelines them), so a read costs a
/// round trip per level (four), not two per node: a slow link (`partition: { delay }`) or
/// `--sync-style full`, which reads the tree on every change, would otherwise pay hundreds.
async fn full_read(client: &zk::Client, state: &SyncState) -> anyhow::Result<usize> {
    let mut read = Vec::new();
    let mut level = vec![keyspace::ROOT.to_owned()];
    while !level.is_empty() {
        let nodes = try_join_all(level.iter().map(|path| read_node(client, path))).await?;
        let mut next = Vec::new();
        for (path, children, data) in nodes {
            next.extend(children.into_iter().map(|child| format!("{path}/{child}")));
            read.extend(data.map(|value| (path.to_owned(), value)));
        }
        level = next;
    }
    Ok(nodes::replace_all(state, read))
}

/// One node of [`full_read`]: its children, and its data when it holds config (both asked
/// for at once); a node gone meanwhile has neither.
async fn read_node<'a>(
    client: &zk::Client,
    path: &'a str,
) -> anyhow::Result<(&'a str, Vec<String>, Option<Vec<u8>>)> {
    let children = async {
        match request(client.list_children(path)).await {
            Ok(children) => Ok(children),
            Err(zk::Error::NoNode) => Ok(Vec::new()),
            Err(e) => Err(e).with_context(|| format!("listing {path}")),
        }
    };
    let data = async {
        if keyspace::NodeKey::parse(path).is_none() {
            return Ok(None);
        }
        match request(client.get_data(path)).await {
            Ok((value, _)) => Ok(Some(value)),
            Err(zk::Error::NoNode) => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {path}")),
        }
    };
    let (children, data) = tokio::try_join!(children, data)?;
    Ok((path, children, data))
}

impl Subscriber for ZookeeperSubscriber {
    async fn run(self, state: Arc<SyncState>) {
        let mut backoff = Backoff::new();
        loop {
            let ended = self.session(&state, &mut backoff).await;
            state.set_zookeeper_session(None);
            if let Err(e) = ended {
                tracing::warn!(
                    error = format!("{e:#}"),
                    "ZooKeeper sync failed; reconnecting"
                );
            }
            back_off(&mut backoff).await;
        }
    }
}
