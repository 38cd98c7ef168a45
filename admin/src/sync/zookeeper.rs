//! ZooKeeper publisher (`--sync zookeeper --zookeeper-url host:port`): keeps ShenYu 2.6.0's
//! znodes (`/shenyu/plugin/{name}`, `/shenyu/selector/{plugin}/{id}`, ...; see
//! [`model::keyspace`]) equal to the database. Nodes are PERSISTENT, values are the item's
//! JSON, missing parents are created with empty data. The loop is [`super::keyspace::run`];
//! a session that disconnects or expires is replaced by a new one that brings every node up to
//! the database again.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use model::SyncMode;
use model::keyspace;
use zookeeper_client as zk;

use super::Publisher;
use super::keyspace::{Entries, NodeStore};
use crate::AppState;
use crate::service::Admin;

/// ZooKeeper session timeout asked for.
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

const PERSISTENT: zk::CreateOptions<'static> =
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());

/// Writes the config to ZooKeeper; the writer task stops when this is dropped.
#[derive(Debug)]
pub(crate) struct ZookeeperPublisher {
    task: tokio::task::AbortHandle,
}

impl ZookeeperPublisher {
    /// Starts writing `admin`'s config to the ensemble `url` (`host:port[,host:port]`).
    pub(crate) fn start(
        admin: &Arc<Admin>,
        url: &str,
        status: &Arc<super::status::SyncStatus>,
    ) -> Self {
        // Beside the writes: the gateways' confirmations, read back from the store.
        let confirmations =
            super::status::read_store(SyncMode::Zookeeper, url.to_owned(), Arc::downgrade(status));
        let url = url.trim().to_owned();
        let publish = super::keyspace::run(
            SyncMode::Zookeeper,
            Arc::downgrade(admin),
            move || ZkStore::connect(url.clone()),
            Arc::clone(status),
        );
        let task = tokio::spawn(async move {
            tokio::join!(publish, confirmations);
        });
        Self {
            task: task.abort_handle(),
        }
    }
}

impl Drop for ZookeeperPublisher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Publisher for ZookeeperPublisher {
    fn mode(&self) -> SyncMode {
        SyncMode::Zookeeper
    }

    fn routes(&self) -> Router<AppState> {
        Router::new()
    }
}

/// One ZooKeeper session.
#[derive(Debug)]
struct ZkStore {
    client: zk::Client,
    state: zk::StateWatcher,
}

/// Runs one request with [`REQUEST_TIMEOUT`].
async fn request<T>(
    what: impl FnOnce() -> String,
    fut: impl Future<Output = Result<T, zk::Error>>,
) -> anyhow::Result<Result<T, zk::Error>> {
    tokio::time::timeout(REQUEST_TIMEOUT, fut)
        .await
        .map_err(|_| anyhow::anyhow!("{} timed out", what()))
}

impl ZkStore {
    async fn connect(url: String) -> anyhow::Result<ZkStore> {
        let client = tokio::time::timeout(
            CONNECT_TIMEOUT,
            zk::Client::connector()
                .with_session_timeout(SESSION_TIMEOUT)
                .connect(&url),
        )
        .await
        .map_err(|_| anyhow::anyhow!("connecting to ZooKeeper at {url} timed out"))?
        .with_context(|| format!("connecting to ZooKeeper at {url}"))?;
        let mut state = client.state_watcher();
        // Consume the current state, so `lost` sees changes only.
        state.state();
        tracing::info!(%url, session = ?client.session_id(), "ZooKeeper publisher connected");
        Ok(ZkStore { client, state })
    }
}

impl NodeStore for ZkStore {
    async fn entries(&mut self) -> anyhow::Result<Entries> {
        let mut entries = Entries::new();
        let mut stack: Vec<String> = keyspace::PARENTS.iter().map(|p| (*p).to_owned()).collect();
        while let Some(path) = stack.pop() {
            match request(
                || format!("listing {path}"),
                self.client.list_children(&path),
            )
            .await?
            {
                Ok(children) => {
                    for child in children {
                        let child = format!("{path}/{child}");
                        match request(|| format!("reading {child}"), self.client.get_data(&child))
                            .await?
                        {
                            Ok((value, _)) => {
                                entries.insert(child.clone(), value);
                            }
                            // Deleted since the listing: it is not there.
                            Err(zk::Error::NoNode) => continue,
                            Err(e) => return Err(e).with_context(|| format!("reading {child}")),
                        }
                        stack.push(child);
                    }
                }
                Err(zk::Error::NoNode) => {}
                Err(e) => return Err(e).with_context(|| format!("listing {path}")),
            }
        }
        Ok(entries)
    }

    async fn put(&mut self, path: &str, value: &[u8]) -> anyhow::Result<()> {
        let what = || format!("writing {path}");
        loop {
            match request(what, self.client.set_data(path, value, None)).await? {
                Ok(_) => return Ok(()),
                Err(zk::Error::NoNode) => {}
                Err(e) => return Err(e).with_context(what),
            }
            match request(what, self.client.create(path, value, &PERSISTENT)).await? {
                Ok(_) => return Ok(()),
                // Created meanwhile: set it on the next turn.
                Err(zk::Error::NodeExists) => continue,
                Err(zk::Error::NoNode) => {}
                Err(e) => return Err(e).with_context(what),
            }
            let parent = &path[..path.rfind('/').unwrap_or(0)];
            request(what, self.client.mkdir(parent, &PERSISTENT))
                .await?
                .with_context(|| format!("creating {parent}"))?;
        }
    }

    async fn delete(&mut self, path: &str) -> anyhow::Result<()> {
        match request(
            || format!("deleting {path}"),
            self.client.delete(path, None),
        )
        .await?
        {
            Ok(()) | Err(zk::Error::NoNode) => Ok(()),
            Err(e) => Err(e).with_context(|| format!("deleting {path}")),
        }
    }

    async fn delete_prefix(&mut self, prefix: &str) -> anyhow::Result<()> {
        let (parent, name_prefix) = prefix.rsplit_once('/').unwrap_or(("", prefix));
        let children = match request(
            || format!("listing {parent}"),
            self.client.list_children(parent),
        )
        .await?
        {
            Ok(children) => children,
            Err(zk::Error::NoNode) => return Ok(()),
            Err(e) => return Err(e).with_context(|| format!("listing {parent}")),
        };
        for child in children.iter().filter(|c| c.starts_with(name_prefix)) {
            self.delete(&format!("{parent}/{child}")).await?;
        }
        Ok(())
    }

    async fn lost(&mut self) -> String {
        loop {
            match self.state.changed().await {
                zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {}
                // Disconnected, expired, closed, authentication failed: a new session writes
                // everything again (the server may have lost or missed writes meanwhile).
                state => return format!("ZooKeeper session {state}"),
            }
        }
    }
}
