//! Registration, the sync channel's long-poll md5 and test-only fault hook, and the admin's
//! config digest.

use super::envelope::envelope;
use super::session::AdminClient;
use crate::error::ClientError;

impl AdminClient {
    /// Posts a registration (`/shenyu-client/register-metadata` or `register-uri`, protocol
    /// §9); the admin must answer the bare text `success`.
    pub async fn register(
        &self,
        path: &str,
        body: &impl serde::Serialize,
    ) -> Result<(), ClientError> {
        let what = format!("POST {path}");
        let (status, text) = self.call(reqwest::Method::POST, path, Some(body)).await?;
        if status == 200 && text.trim() == "success" {
            return Ok(());
        }
        Err(ClientError::Status {
            what,
            status,
            body: text,
        })
    }

    /// The md5 the admin's long-poll cache serves for `group` (`GET /configs/fetch`; the
    /// admin must run the http publisher; 2.7 requires the `namespaceId` parameter).
    pub async fn long_poll_md5(&self, group: model::ConfigGroup) -> Result<String, ClientError> {
        #[derive(serde::Deserialize)]
        struct Fetched {
            md5: String,
        }
        let path = format!("/configs/fetch?groupKeys={group}{}", self.ns_param());
        let mut groups: std::collections::HashMap<String, Fetched> =
            self.data(reqwest::Method::GET, &path, None::<&()>).await?;
        groups
            .remove(group.as_str())
            .map(|g| g.md5)
            .ok_or_else(|| ClientError::Body {
                what: format!("GET {path}"),
                detail: format!("no group {group}"),
                body: String::new(),
            })
    }

    /// Arms a protocol fault on the sync channel for the admin's next pushes (`POST
    /// /test-only/sync-fault`; the admin must run with `--test-only-sync-faults`).
    pub async fn arm_sync_fault(
        &self,
        fault: &crate::scenario::ast::SyncFault,
    ) -> Result<(), ClientError> {
        let path = "/test-only/sync-fault";
        let body = model::SyncFaultRequest {
            kind: fault.kind,
            count: fault.count,
            delay_ms: fault
                .delay
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        };
        let (status, text) = self.call(reqwest::Method::POST, path, Some(&body)).await?;
        envelope::<serde_json::Value>(&format!("POST {path}"), status, text).map(drop)
    }

    /// The admin's sync status (`GET /gantry/sync-status`, gantry's admin only): every
    /// gateway it syncs and its state against the admin's digest.
    pub async fn sync_status(&self) -> Result<model::SyncStatusReport, ClientError> {
        let what = format!("GET {}/gantry/sync-status", self.base);
        let (status, body) = self
            .call(reqwest::Method::GET, "/gantry/sync-status", None::<&()>)
            .await?;
        super::super::gateway::read_digest(what, status, body)
    }

    /// The admin's config digest.
    pub async fn digest(&self) -> Result<model::DigestReport, ClientError> {
        let what = format!("GET {}/actuator/digest", self.base);
        let (status, body) = self
            .call(reqwest::Method::GET, "/actuator/digest", None::<&()>)
            .await?;
        super::super::gateway::read_digest(what, status, body)
    }
}
