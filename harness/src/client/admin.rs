//! [`AdminClient`]: login, plugin lookup, and selector and rule CRUD on the admin.

use model::{
    AdminResult, BatchIds, CommonPager, LoginRequest, LoginResponse, PluginVo, RuleDto, RuleVo,
    SelectorDto, SelectorVo,
};
use serde::de::DeserializeOwned;

use super::{http, send};
use crate::error::ClientError;

/// The admin's built-in user (a fresh database has it; ShenYu's default).
pub const ADMIN_USER: &str = "admin";
/// The password of [`ADMIN_USER`].
pub const ADMIN_PASSWORD: &str = "123456";

/// The page size of the admin client's list calls.
const PAGE: usize = 100;

/// A logged-in admin client.
#[derive(Debug, Clone)]
pub struct AdminClient {
    base: String,
    token: String,
    http: reqwest::Client,
}

/// Decodes an envelope whose HTTP status must be 200 and code 200.
fn envelope<T: DeserializeOwned>(
    what: &str,
    status: u16,
    body: String,
) -> Result<Option<T>, ClientError> {
    if status != 200 {
        return Err(ClientError::Status {
            what: what.to_owned(),
            status,
            body,
        });
    }
    match serde_json::from_str::<AdminResult<T>>(&body) {
        Ok(r) if r.code == model::admin_code::SUCCESS => Ok(r.data),
        Ok(r) => Err(ClientError::Body {
            what: what.to_owned(),
            detail: format!("code {}", r.code),
            body,
        }),
        Err(e) => Err(ClientError::Body {
            what: what.to_owned(),
            detail: e.to_string(),
            body,
        }),
    }
}

fn required<T>(what: &str, data: Option<T>) -> Result<T, ClientError> {
    data.ok_or_else(|| ClientError::Body {
        what: what.to_owned(),
        detail: "no data".into(),
        body: "null".into(),
    })
}

impl AdminClient {
    /// Logs in at `base` (e.g. `http://127.0.0.1:9095`) with the given credentials.
    pub async fn login(base: &str, user: &str, password: &str) -> Result<Self, ClientError> {
        let http = http();
        let what = "POST /platform/login";
        let body = LoginRequest {
            user_name: user.to_owned(),
            password: password.to_owned(),
        };
        let (status, text) = send(
            what,
            http.post(format!("{base}/platform/login")).json(&body),
        )
        .await?;
        let login: LoginResponse = required(what, envelope(what, status, text)?)?;
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            token: login.token,
            http,
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&impl serde::Serialize>,
    ) -> Result<(u16, String), ClientError> {
        let what = format!("{method} {path}");
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("X-Access-Token", &self.token);
        if let Some(body) = body {
            req = req.json(body);
        }
        send(&what, req).await
    }

    async fn data<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&impl serde::Serialize>,
    ) -> Result<T, ClientError> {
        let what = format!("{method} {path}");
        let (status, text) = self.call(method, path, body).await?;
        required(&what, envelope(&what, status, text)?)
    }

    /// The id of the plugin named `name`, if the admin has it.
    pub async fn plugin_id(&self, name: &str) -> Result<Option<String>, ClientError> {
        let path = format!("/plugin?name={name}&currentPage=1&pageSize=100");
        let page: CommonPager<PluginVo> =
            self.data(reqwest::Method::GET, &path, None::<&()>).await?;
        Ok(page
            .data_list
            .into_iter()
            .find(|p| p.name == name)
            .map(|p| p.id))
    }

    /// The plugin named `name`, if the admin has it.
    pub async fn plugin(&self, name: &str) -> Result<Option<PluginVo>, ClientError> {
        let path = format!("/plugin?name={name}&currentPage=1&pageSize=100");
        let page: CommonPager<PluginVo> =
            self.data(reqwest::Method::GET, &path, None::<&()>).await?;
        Ok(page.data_list.into_iter().find(|p| p.name == name))
    }

    /// Sets the enabled flag of plugins `ids` (`POST /plugin/enabled`).
    pub async fn enable_plugins(&self, ids: &[String], enabled: bool) -> Result<(), ClientError> {
        let what = "POST /plugin/enabled";
        let body = serde_json::json!({ "ids": ids, "enabled": enabled });
        let (status, text) = self
            .call(reqwest::Method::POST, "/plugin/enabled", Some(&body))
            .await?;
        envelope::<serde_json::Value>(what, status, text).map(drop)
    }

    /// Replaces the role, sort, enabled flag and config of plugin `plugin.id` with
    /// `plugin`'s (`PUT /plugin/{id}`; the name stays).
    pub async fn update_plugin(&self, plugin: &PluginVo) -> Result<(), ClientError> {
        let path = format!("/plugin/{}", plugin.id);
        let what = format!("PUT {path}");
        let body = serde_json::json!({
            "name": plugin.name,
            "role": plugin.role,
            "sort": plugin.sort,
            "enabled": plugin.enabled,
            "config": plugin.config,
        });
        let (status, text) = self.call(reqwest::Method::PUT, &path, Some(&body)).await?;
        envelope::<serde_json::Value>(&what, status, text).map(drop)
    }

    /// Creates a selector; returns its id.
    pub async fn create_selector(&self, dto: &SelectorDto) -> Result<String, ClientError> {
        self.data(reqwest::Method::POST, "/selector", Some(dto))
            .await
    }

    /// Updates selector `id`.
    pub async fn update_selector(&self, id: &str, dto: &SelectorDto) -> Result<(), ClientError> {
        self.data::<i64>(reqwest::Method::PUT, &format!("/selector/{id}"), Some(dto))
            .await
            .map(drop)
    }

    /// Selector `id`, or `None` when the admin answers 404.
    pub async fn get_selector(&self, id: &str) -> Result<Option<SelectorVo>, ClientError> {
        self.get_opt(&format!("/selector/{id}")).await
    }

    /// The selectors of plugin `plugin_id` (first 100).
    pub async fn list_selectors(&self, plugin_id: &str) -> Result<Vec<SelectorVo>, ClientError> {
        let path = format!("/selector?pluginId={plugin_id}&currentPage=1&pageSize=100");
        let page: CommonPager<SelectorVo> =
            self.data(reqwest::Method::GET, &path, None::<&()>).await?;
        Ok(page.data_list)
    }

    /// Deletes selectors (and their rules); returns the count the admin reports.
    pub async fn delete_selectors(&self, ids: &[String]) -> Result<i64, ClientError> {
        let body = BatchIds {
            ids: Some(ids.to_vec()),
            namespace_id: None,
        };
        self.data(reqwest::Method::DELETE, "/selector/batch", Some(&body))
            .await
    }

    /// Creates a rule. `POST /rule` answers a count, so the new rule is found by listing its
    /// selector's rules by name; returns its id.
    pub async fn create_rule(&self, dto: &RuleDto) -> Result<Option<String>, ClientError> {
        self.data::<i64>(reqwest::Method::POST, "/rule", Some(dto))
            .await?;
        let selector = dto.selector_id.as_deref().unwrap_or_default();
        let name = dto.name.as_deref().unwrap_or_default();
        Ok(self
            .list_rules(selector, name)
            .await?
            .into_iter()
            .find(|r| r.name == name)
            .map(|r| r.id))
    }

    /// Updates rule `id`.
    pub async fn update_rule(&self, id: &str, dto: &RuleDto) -> Result<(), ClientError> {
        self.data::<i64>(reqwest::Method::PUT, &format!("/rule/{id}"), Some(dto))
            .await
            .map(drop)
    }

    /// Rule `id`, or `None` when the admin answers 404.
    pub async fn get_rule(&self, id: &str) -> Result<Option<RuleVo>, ClientError> {
        self.get_opt(&format!("/rule/{id}")).await
    }

    /// The rules of `selector_id` whose name contains `name` (first 100).
    pub async fn list_rules(
        &self,
        selector_id: &str,
        name: &str,
    ) -> Result<Vec<RuleVo>, ClientError> {
        let path = format!("/rule?selectorId={selector_id}&name={name}&currentPage=1&pageSize=100");
        let page: CommonPager<RuleVo> = self.data(reqwest::Method::GET, &path, None::<&()>).await?;
        Ok(page.data_list)
    }

    /// Deletes rules; returns the count the admin reports.
    pub async fn delete_rules(&self, ids: &[String]) -> Result<i64, ClientError> {
        let body = BatchIds {
            ids: Some(ids.to_vec()),
            namespace_id: None,
        };
        self.data(reqwest::Method::DELETE, "/rule/batch", Some(&body))
            .await
    }

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
    /// admin must run the http publisher).
    pub async fn long_poll_md5(&self, group: model::ConfigGroup) -> Result<String, ClientError> {
        #[derive(serde::Deserialize)]
        struct Fetched {
            md5: String,
        }
        let path = format!("/configs/fetch?groupKeys={group}");
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

    /// The admin's config digest.
    pub async fn digest(&self) -> Result<model::DigestReport, ClientError> {
        super::gateway::digest(&self.http, &self.base).await
    }

    /// Every plugin the admin has (pages of 100 until one comes back short).
    pub async fn plugins(&self) -> Result<Vec<PluginVo>, ClientError> {
        self.all_pages(|page| format!("/plugin?currentPage={page}&pageSize={PAGE}"))
            .await
    }

    /// Every selector of plugin `plugin_id` (pages of 100 until one comes back short).
    pub async fn all_selectors(&self, plugin_id: &str) -> Result<Vec<SelectorVo>, ClientError> {
        self.all_pages(|page| {
            format!("/selector?pluginId={plugin_id}&currentPage={page}&pageSize={PAGE}")
        })
        .await
    }

    /// Every item of a paged list, `path(page)` being page `page` (from 1) of [`PAGE`].
    async fn all_pages<T: DeserializeOwned>(
        &self,
        path: impl Fn(usize) -> String,
    ) -> Result<Vec<T>, ClientError> {
        let mut all = Vec::new();
        for page in 1.. {
            let got: CommonPager<T> = self
                .data(reqwest::Method::GET, &path(page), None::<&()>)
                .await?;
            let short = got.data_list.len() < PAGE;
            all.extend(got.data_list);
            if short {
                break;
            }
        }
        Ok(all)
    }

    async fn get_opt<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>, ClientError> {
        let what = format!("GET {path}");
        let (status, text) = self.call(reqwest::Method::GET, path, None::<&()>).await?;
        if status == 404 {
            return Ok(None);
        }
        envelope(&what, status, text)
    }
}
