//! Zookeeper / etcd: reads the confirmations gantry gateways keep under
//! [`SYNC_STATUS_PREFIX`] (an ephemeral znode, a leased key per gateway) into the registry,
//! every [`READ_EVERY`], over a connection of its own; a failed read reconnects after a
//! back-off. A gateway whose node is gone (its session or lease ended) is disconnected.

use std::sync::Weak;
use std::time::Duration;

use anyhow::Context;
use etcd_client as etcd;
use model::{Backoff, SYNC_STATUS_PREFIX, SyncConfirmation, SyncMode};
use zookeeper_client as zk;

use super::SyncStatus;

/// How often the store is read: a confirmation reaches the report within this.
const READ_EVERY: Duration = Duration::from_millis(200);

/// A bound on each connect and read.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection to the store.
enum Source {
    Zookeeper(zk::Client),
    Etcd(Box<etcd::Client>),
}

impl Source {
    async fn connect(mode: SyncMode, url: &str) -> anyhow::Result<Source> {
        let connect = async {
            match mode {
                SyncMode::Etcd => {
                    let endpoints: Vec<&str> = url
                        .split(',')
                        .map(str::trim)
                        .filter(|e| !e.is_empty())
                        .collect();
                    Ok(Source::Etcd(Box::new(
                        etcd::Client::connect(endpoints, None).await?,
                    )))
                }
                _ => Ok(Source::Zookeeper(
                    zk::Client::connector().connect(url.trim()).await?,
                )),
            }
        };
        tokio::time::timeout(REQUEST_TIMEOUT, connect)
            .await
            .context("connect timed out")?
    }

    /// The confirmations under the prefix (unreadable ones left out).
    async fn read(&mut self) -> anyhow::Result<Vec<SyncConfirmation>> {
        let values: Vec<Vec<u8>> = match self {
            Source::Etcd(client) => {
                let options = etcd::GetOptions::new().with_prefix();
                let prefix = format!("{SYNC_STATUS_PREFIX}/");
                let response = client.get(prefix, Some(options)).await?;
                response
                    .kvs()
                    .iter()
                    .map(|kv| kv.value().to_vec())
                    .collect()
            }
            Source::Zookeeper(client) => {
                let children = match client.list_children(SYNC_STATUS_PREFIX).await {
                    Ok(children) => children,
                    Err(zk::Error::NoNode) => Vec::new(),
                    Err(e) => return Err(e.into()),
                };
                let mut values = Vec::with_capacity(children.len());
                for child in children {
                    match client
                        .get_data(&format!("{SYNC_STATUS_PREFIX}/{child}"))
                        .await
                    {
                        Ok((value, _)) => values.push(value),
                        // Gone since the listing.
                        Err(zk::Error::NoNode) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                values
            }
        };
        Ok(values
            .iter()
            .filter_map(|v| serde_json::from_slice(v).ok())
            .collect())
    }
}

/// Reads the confirmations of `mode` from the store at `url` into `status` until it is gone.
pub(crate) async fn read_store(mode: SyncMode, url: String, status: Weak<SyncStatus>) {
    let mut backoff = Backoff::new();
    loop {
        let session = async {
            let mut source = Source::connect(mode, &url).await?;
            loop {
                let read = tokio::time::timeout(REQUEST_TIMEOUT, source.read())
                    .await
                    .context("read timed out")??;
                let Some(status) = status.upgrade() else {
                    return anyhow::Ok(());
                };
                status.store_read(mode, read);
                backoff.reset();
                tokio::time::sleep(READ_EVERY).await;
            }
        };
        match session.await {
            Ok(()) => return,
            Err(e) => {
                tracing::debug!(%mode, error = format!("{e:#}"), "reading sync confirmations failed; again after a back-off")
            }
        }
        if status.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(backoff.next_step()).await;
    }
}
