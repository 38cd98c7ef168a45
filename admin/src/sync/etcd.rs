//! etcd publisher (`--sync etcd --etcd-url http://host:port`): keeps ShenYu 2.6.0's keys
//! (the ZooKeeper paths of [`model::keyspace`], leading `/` included) equal to the database,
//! values being the item's JSON. The loop is [`super::keyspace::run`]; a request that fails
//! (etcd down) makes it reconnect and bring every key up to the database again.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use etcd_client as etcd;
use model::SyncMode;
use model::keyspace;

use super::Publisher;
use super::keyspace::{Entries, NodeStore};
use crate::AppState;
use crate::service::Admin;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Writes the config to etcd; the writer task stops when this is dropped.
#[derive(Debug)]
pub(crate) struct EtcdPublisher {
    task: tokio::task::AbortHandle,
}

impl EtcdPublisher {
    /// Starts writing `admin`'s config to the endpoints in `url`
    /// (`http://host:port[,http://host:port]`).
    pub(crate) fn start(
        admin: &Arc<Admin>,
        url: &str,
        status: &Arc<super::status::SyncStatus>,
    ) -> Self {
        // Beside the writes: the gateways' confirmations, read back from the store.
        let confirmations =
            super::status::read_store(SyncMode::Etcd, url.to_owned(), Arc::downgrade(status));
        let endpoints: Vec<String> = url
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_owned)
            .collect();
        let publish = super::keyspace::run(
            SyncMode::Etcd,
            Arc::downgrade(admin),
            move || EtcdStore::connect(endpoints.clone()),
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

impl Drop for EtcdPublisher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Publisher for EtcdPublisher {
    fn mode(&self) -> SyncMode {
        SyncMode::Etcd
    }

    fn routes(&self) -> Router<AppState> {
        Router::new()
    }
}

/// One etcd client, and a watch that only ends with its connection.
struct EtcdStore {
    client: etcd::Client,
    /// A watch on [`LIVENESS_KEY`], which nobody writes: it ends when the connection breaks
    /// (etcd stopped, killed or wiped), which [`NodeStore::lost`] reports even while the
    /// admin writes nothing.
    liveness: etcd::WatchStream,
}

/// The key the liveness watch names: outside ShenYu's layout, never written.
const LIVENESS_KEY: &str = "/gantry/admin-liveness";

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore").finish_non_exhaustive()
    }
}

/// Runs one request with [`REQUEST_TIMEOUT`], naming it in the error.
async fn request<T>(
    what: impl Fn() -> String,
    fut: impl Future<Output = Result<T, etcd::Error>>,
) -> anyhow::Result<T> {
    tokio::time::timeout(REQUEST_TIMEOUT, fut)
        .await
        .map_err(|_| anyhow::anyhow!("{} timed out", what()))?
        .with_context(what)
}

impl EtcdStore {
    async fn connect(endpoints: Vec<String>) -> anyhow::Result<EtcdStore> {
        let options = etcd::ConnectOptions::new()
            .with_connect_timeout(CONNECT_TIMEOUT)
            .with_keep_alive(Duration::from_secs(5), Duration::from_secs(5));
        let what = || format!("connecting to etcd at {}", endpoints.join(","));
        let mut client = request(what, etcd::Client::connect(&endpoints, Some(options))).await?;
        let liveness = request(
            || format!("watching {LIVENESS_KEY}"),
            client.watch(LIVENESS_KEY, None),
        )
        .await?;
        tracing::info!(endpoints = %endpoints.join(","), "etcd publisher connected");
        Ok(EtcdStore { client, liveness })
    }
}

impl NodeStore for EtcdStore {
    async fn entries(&mut self) -> anyhow::Result<Entries> {
        let options = etcd::GetOptions::new().with_prefix();
        let root = format!("{}/", keyspace::ROOT);
        let response = request(
            || format!("reading {root}"),
            self.client.get(root.as_str(), Some(options)),
        )
        .await?;
        Ok(response
            .kvs()
            .iter()
            .filter_map(|kv| Some((kv.key_str().ok()?, kv.value())))
            .filter(|(key, _)| {
                keyspace::PARENTS
                    .iter()
                    .any(|p| key.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
            })
            .map(|(key, value)| (key.to_owned(), value.to_vec()))
            .collect())
    }

    async fn put(&mut self, path: &str, value: &[u8]) -> anyhow::Result<()> {
        request(
            || format!("writing {path}"),
            self.client.put(path, value, None),
        )
        .await?;
        Ok(())
    }

    async fn delete(&mut self, path: &str) -> anyhow::Result<()> {
        request(
            || format!("deleting {path}"),
            self.client.delete(path, None),
        )
        .await?;
        Ok(())
    }

    async fn delete_prefix(&mut self, prefix: &str) -> anyhow::Result<()> {
        let options = etcd::DeleteOptions::new().with_prefix();
        request(
            || format!("deleting {prefix}*"),
            self.client.delete(prefix, Some(options)),
        )
        .await?;
        Ok(())
    }

    async fn lost(&mut self) -> String {
        // etcd has no session: a broken connection shows as a failed request, or as the end
        // of the liveness watch when nothing is written (a wiped etcd must be written again).
        loop {
            match self.liveness.message().await {
                Ok(Some(_)) => {}
                Ok(None) => return "the etcd connection ended".to_owned(),
                Err(e) => return format!("the etcd connection broke: {e}"),
            }
        }
    }
}
