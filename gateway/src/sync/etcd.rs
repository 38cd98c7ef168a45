//! etcd subscriber (`--sync etcd --etcd-url http://host:port`): a prefix read of `/shenyu/`
//! applied in one swap, then a prefix watch starting at the read's revision + 1, so nothing
//! between read and watch is missed. PUT events upsert, DELETE events delete.
//!
//! Ordering: events come in revision order, all after the read's revision, so an event is
//! never older than the state it overwrites; a new session reads everything again.
//!
//! A silent partition: HTTP/2 keep-alive pings every half of the silence bound
//! (`--sync-silence-ms`, 10 s by default), each to be acknowledged within the other half;
//! an unanswered one breaks the connection and the watch, and this subscriber starts over.
//!
//! With [`SyncStyle::Full`] (`--sync-style full`) a watch message with events is only a
//! signal: everything is read again and swapped in at once (events of older revisions that
//! follow read it again, which changes nothing).
//!
//! The first watch message is the "created" acknowledgement, with no events. A watch the
//! server cancels (its start revision was compacted), a stream that ends or a lost connection
//! starts over: read everything again (one swap), watch again; so a compacted revision is
//! never asked for (`compact: etcd` in case files). Under
//! [`crate::EmulatedBug::ResumeCompactedWatch`] a new session skips the read and resumes from
//! the last revision seen, which a compaction makes impossible.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use anyhow::Context;
use etcd_client as etcd;
use model::{SyncStyle, keyspace};

use super::{Backoff, Subscriber, SyncState, back_off, keyspace as nodes};

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the initial read may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The etcd subscriber.
#[derive(Debug)]
pub(crate) struct EtcdSubscriber {
    endpoints: Vec<String>,
    /// HTTP/2 keep-alive: a ping every half of it, acknowledged within the other half.
    silence: Duration,
    /// The last revision seen (0: none yet); a session resumes from it only under
    /// [`crate::EmulatedBug::ResumeCompactedWatch`].
    seen: AtomicI64,
    /// [`SyncStyle::Full`]: a watch message with events reads everything again instead.
    style: SyncStyle,
}

impl EtcdSubscriber {
    /// A subscriber for the comma-separated endpoints in `url`, noticing a silent server
    /// within `silence`, taking changes in `style`.
    pub(crate) fn new(url: &str, silence: Duration, style: SyncStyle) -> EtcdSubscriber {
        EtcdSubscriber {
            endpoints: url
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(str::to_owned)
                .collect(),
            silence,
            seen: AtomicI64::new(0),
            style,
        }
    }

    /// One session: read, watch from the next revision, apply events until the watch ends.
    async fn session(&self, state: &SyncState, backoff: &mut Backoff) -> anyhow::Result<()> {
        let endpoints = self.endpoints.join(",");
        let options = etcd::ConnectOptions::new()
            .with_connect_timeout(CONNECT_TIMEOUT)
            .with_keep_alive(self.silence / 2, self.silence / 2);
        let mut client = tokio::time::timeout(
            REQUEST_TIMEOUT,
            etcd::Client::connect(&self.endpoints, Some(options)),
        )
        .await
        .map_err(|_| anyhow::anyhow!("connecting to etcd at {endpoints} timed out"))?
        .with_context(|| format!("connecting to etcd at {endpoints}"))?;
        let prefix = format!("{}/", keyspace::ROOT);
        let seen = self.seen.load(Ordering::Relaxed);
        let revision = if seen > 0 && state.emulates(crate::EmulatedBug::ResumeCompactedWatch) {
            seen
        } else {
            self.read_all(&mut client, &prefix, state).await?
        };
        let options = etcd::WatchOptions::new()
            .with_prefix()
            .with_start_revision(revision + 1);
        let mut watch = client
            .watch(prefix.as_str(), Some(options))
            .await
            .with_context(|| format!("watching {prefix}"))?;
        tracing::info!(%endpoints, revision, "etcd sync connected; watching from the next revision");
        let _connected = state.connected();
        backoff.reset();
        while let Some(response) = watch.message().await.context("watch stream broke")? {
            if response.canceled() {
                anyhow::bail!(
                    "watch cancelled (compacted revision {}): {}",
                    response.compact_revision(),
                    response.cancel_reason()
                );
            }
            if let Some(header) = response.header() {
                self.seen.store(header.revision(), Ordering::Relaxed);
            }
            if self.style == SyncStyle::Full && !response.events().is_empty() {
                self.read_all(&mut client, &prefix, state).await?;
                continue;
            }
            for event in response.events() {
                let Some(kv) = event.kv() else { continue };
                let Ok(key) = kv.key_str() else {
                    tracing::warn!("ignoring a key that is not UTF-8");
                    continue;
                };
                match event.event_type() {
                    etcd::EventType::Put => nodes::put(state, key, kv.value()),
                    etcd::EventType::Delete => nodes::delete(state, key),
                }
            }
        }
        anyhow::bail!("watch stream ended")
    }

    /// Reads everything under `prefix` and applies it in one swap; returns the read's
    /// revision.
    async fn read_all(
        &self,
        client: &mut etcd::Client,
        prefix: &str,
        state: &SyncState,
    ) -> anyhow::Result<i64> {
        let read = tokio::time::timeout(
            REQUEST_TIMEOUT,
            client.get(prefix, Some(etcd::GetOptions::new().with_prefix())),
        )
        .await
        .map_err(|_| anyhow::anyhow!("reading {prefix} timed out"))?
        .with_context(|| format!("reading {prefix}"))?;
        let revision = read
            .header()
            .map(etcd::ResponseHeader::revision)
            .context("the read answer has no header")?;
        let kvs = read
            .kvs()
            .iter()
            .filter_map(|kv| Some((kv.key_str().ok()?.to_owned(), kv.value().to_vec())));
        let items = nodes::replace_all(state, kvs);
        self.seen.store(revision, Ordering::Relaxed);
        tracing::info!(items, revision, "etcd config read in full");
        Ok(revision)
    }
}

impl Subscriber for EtcdSubscriber {
    async fn run(mut self, state: Arc<SyncState>) {
        self.silence = state.keepalive_silence(self.silence);
        let mut backoff = Backoff::new();
        loop {
            if let Err(e) = self.session(&state, &mut backoff).await {
                tracing::warn!(error = format!("{e:#}"), "etcd sync failed; reconnecting");
            }
            back_off(&mut backoff).await;
        }
    }
}
