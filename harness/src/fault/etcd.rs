//! etcd compaction (a case file's `compact: etcd`): every revision up to the current one is
//! compacted away (physically), through etcd's JSON gateway (`/v3/kv/range`,
//! `/v3/kv/compaction`), so a watch that resumes from an older revision is cancelled with
//! "required revision has been compacted" and must read everything again.
//!
//! The admin writes to etcd after its REST answer, so a compaction first waits (within
//! [`WRITE_DEADLINE`]) until etcd's revision has reached the one the step's admin changes make
//! at least (one write each): what the step changed is then compacted, but for the last write
//! (etcd keeps the compaction revision itself).

use std::time::Duration;

use serde_json::{Value, json};

use crate::error::BackendError;

/// How long a compaction waits for the admin's write to reach etcd.
pub(crate) const WRITE_DEADLINE: Duration = Duration::from_secs(5);

/// The current revision of the etcd at `url` (`http://host:port`).
pub(crate) async fn revision(url: &str) -> Result<i64, BackendError> {
    Gateway::new(url).revision().await
}

/// Waits until the revision of the etcd at `url` is at least `least` (within
/// [`WRITE_DEADLINE`]), then compacts it to its current revision; returns that revision.
pub(crate) async fn compact_at_least(url: &str, least: i64) -> Result<i64, BackendError> {
    let etcd = Gateway::new(url);
    let deadline = tokio::time::Instant::now() + WRITE_DEADLINE;
    let revision = loop {
        let revision = etcd.revision().await?;
        if revision >= least {
            break revision;
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(etcd.fail(
                "/v3/kv/range",
                format!("revision {revision}, not {least}, after {WRITE_DEADLINE:?}"),
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    etcd.post(
        "/v3/kv/compaction",
        json!({ "revision": revision.to_string(), "physical": true }),
    )
    .await?;
    Ok(revision)
}

/// etcd's JSON gateway.
struct Gateway<'a> {
    http: reqwest::Client,
    url: &'a str,
}

impl<'a> Gateway<'a> {
    fn new(url: &'a str) -> Self {
        Self {
            http: reqwest::Client::new(),
            url,
        }
    }

    fn fail(&self, path: &str, detail: String) -> BackendError {
        BackendError::Io {
            what: format!("etcd at {}: POST {path}", self.url),
            source: std::io::Error::other(detail),
        }
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, BackendError> {
        let resp = self
            .http
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await
            .map_err(|e| self.fail(path, e.to_string()))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| self.fail(path, e.to_string()))?;
        if !status.is_success() {
            return Err(self.fail(path, format!("HTTP {status}: {text}")));
        }
        serde_json::from_str(&text).map_err(|e| self.fail(path, format!("{e}: {text}")))
    }

    /// The store's current revision, from the header of a read of any key.
    async fn revision(&self) -> Result<i64, BackendError> {
        let path = "/v3/kv/range";
        let range = self.post(path, json!({ "key": "Lw==" })).await?;
        // The JSON gateway writes 64-bit integers as strings.
        range["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse::<i64>().ok())
            .ok_or_else(|| self.fail(path, format!("no revision in {range}")))
    }
}
