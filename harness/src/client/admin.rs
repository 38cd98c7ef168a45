//! [`AdminClient`]: login, plugin lookup, and selector and rule CRUD on the admin.
//!
//! The client speaks one [`Profile`] of ShenYu's admin REST API: 2.6 (gantry's own admin, the
//! default) or 2.7 (namespaces, namespace plugins, discovery-bound divide upstreams). What
//! differs, and the ShenYu sources it follows, is in `docs/profiles.md`.

use model::{
    AdminResult, BatchIds, CommonPager, LoginRequest, LoginResponse, PluginVo, RuleDto, RuleVo,
    SelectorDto, SelectorVo,
};
use serde::de::DeserializeOwned;

use super::profile::Profile;
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
    profile: Profile,
    /// The namespace a [`Profile::V2_7`] client works in.
    namespace_id: String,
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
    /// Logs in at `base` (e.g. `http://127.0.0.1:9095`) with the given credentials, speaking
    /// [`Profile::V2_6`] to gantry's own admin: `POST /platform/login` with a JSON body.
    pub async fn login(base: &str, user: &str, password: &str) -> Result<Self, ClientError> {
        let http = http();
        let body = LoginRequest {
            user_name: user.to_owned(),
            password: password.to_owned(),
        };
        let req = http.post(format!("{}/platform/login", base.trim_end_matches('/')));
        Self::logged_in(
            base,
            http,
            "POST /platform/login",
            req.json(&body),
            Profile::V2_6,
        )
        .await
    }

    /// Logs in at `base` with the given credentials, speaking `profile`'s REST API.
    ///
    /// Both profiles send `GET /platform/login?userName=&password=`: the only login ShenYu's
    /// releases have, 2.6.0 to 2.7.1 (`POST` came after 2.7.1), and one gantry's admin takes
    /// too. A 2.7 client works in the namespace
    /// [`model::DEFAULT_NAMESPACE_ID`]; see [`AdminClient::with_namespace`].
    pub async fn login_as(
        base: &str,
        user: &str,
        password: &str,
        profile: Profile,
    ) -> Result<Self, ClientError> {
        let http = http();
        let req = http.get(format!(
            "{}/platform/login?userName={}&password={}",
            base.trim_end_matches('/'),
            query_value(user),
            query_value(password)
        ));
        Self::logged_in(base, http, "GET /platform/login", req, profile)
            .await
            .map_err(|e| match e {
                // The URL carries the password: a transport error must not show it.
                ClientError::Http { what, source } => ClientError::Http {
                    what,
                    source: source.without_url(),
                },
                other => other,
            })
    }

    /// The client that `req`, a login, makes.
    async fn logged_in(
        base: &str,
        http: reqwest::Client,
        what: &str,
        req: reqwest::RequestBuilder,
        profile: Profile,
    ) -> Result<Self, ClientError> {
        let base = base.trim_end_matches('/');
        let (status, text) = send(what, req).await?;
        let login: LoginResponse = required(what, envelope(what, status, text)?)?;
        Ok(Self {
            base: base.to_owned(),
            token: login.token,
            http,
            profile,
            namespace_id: model::DEFAULT_NAMESPACE_ID.to_owned(),
        })
    }

    /// The REST API profile this client speaks.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The namespace a [`Profile::V2_7`] client sends as `namespaceId` (by default
    /// [`model::DEFAULT_NAMESPACE_ID`]; a 2.6 client sends none).
    pub fn namespace_id(&self) -> &str {
        &self.namespace_id
    }

    /// This client working in namespace `namespace_id` (only [`Profile::V2_7`] sends it).
    #[must_use]
    pub fn with_namespace(mut self, namespace_id: impl Into<String>) -> Self {
        self.namespace_id = namespace_id.into();
        self
    }

    /// `&namespaceId=<ns>` for a 2.7 client's query strings, empty for 2.6.
    fn ns_param(&self) -> String {
        if self.profile.has_namespaces() {
            format!("&namespaceId={}", query_value(&self.namespace_id))
        } else {
            String::new()
        }
    }

    /// The namespace to put on a body whose `namespaceId` is `given`: the caller's if set,
    /// else the client's under 2.7, else none (2.6).
    fn body_ns(&self, given: Option<&String>) -> Option<String> {
        if self.profile.has_namespaces() {
            Some(given.cloned().unwrap_or_else(|| self.namespace_id.clone()))
        } else {
            given.cloned()
        }
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

    /// The id of the plugin named `name`, if the admin has it. Under 2.7 this is the plugin
    /// (template) id of the namespace's plugin, the id selectors name as `pluginId`.
    pub async fn plugin_id(&self, name: &str) -> Result<Option<String>, ClientError> {
        Ok(self.plugin(name).await?.map(|p| p.id))
    }

    /// The plugin named `name`, if the admin has it. Under 2.7 it comes from the namespace's
    /// plugins (`GET /namespace-plugin`): `id` is the plugin id, and the enabled flag, sort and
    /// config are the namespace's.
    pub async fn plugin(&self, name: &str) -> Result<Option<PluginVo>, ClientError> {
        if self.profile.has_namespaces() {
            return Ok(self
                .namespace_plugin(name)
                .await?
                .map(NamespacePluginVo::into_plugin));
        }
        let path = format!("/plugin?name={name}&currentPage=1&pageSize=100");
        let page: CommonPager<PluginVo> =
            self.data(reqwest::Method::GET, &path, None::<&()>).await?;
        Ok(page.data_list.into_iter().find(|p| p.name == name))
    }

    /// The namespace's relation to the plugin named `name` (2.7, `GET /namespace-plugin`).
    async fn namespace_plugin(&self, name: &str) -> Result<Option<NamespacePluginVo>, ClientError> {
        let path = format!(
            "/namespace-plugin?name={}&currentPage=1&pageSize=100{}",
            query_value(name),
            self.ns_param()
        );
        let page: CommonPager<NamespacePluginVo> =
            self.data(reqwest::Method::GET, &path, None::<&()>).await?;
        Ok(page.data_list.into_iter().find(|p| p.name == name))
    }

    /// Sets the enabled flag of plugins `ids` (`POST /plugin/enabled`; under 2.7 in the
    /// client's namespace, `POST /namespace-plugin/enabledByNamespace`, which takes plugin ids).
    pub async fn enable_plugins(&self, ids: &[String], enabled: bool) -> Result<(), ClientError> {
        let (path, body) = if self.profile.has_namespaces() {
            (
                "/namespace-plugin/enabledByNamespace",
                serde_json::json!({
                    "ids": ids, "enabled": enabled, "namespaceId": self.namespace_id,
                }),
            )
        } else {
            (
                "/plugin/enabled",
                serde_json::json!({ "ids": ids, "enabled": enabled }),
            )
        };
        let what = format!("POST {path}");
        let (status, text) = self.call(reqwest::Method::POST, path, Some(&body)).await?;
        envelope::<serde_json::Value>(&what, status, text).map(drop)
    }

    /// Replaces the role, sort, enabled flag and config of plugin `plugin.id` with
    /// `plugin`'s (`PUT /plugin/{id}`; the name stays).
    ///
    /// Under 2.7 the sort, enabled flag and config are the namespace's: the relation is looked
    /// up by name and replaced with `PUT /namespace-plugin/{relationId}`. The role belongs to
    /// the plugin template (`PUT /plugin-template/{id}`, a multipart form) and is not changed.
    pub async fn update_plugin(&self, plugin: &PluginVo) -> Result<(), ClientError> {
        if self.profile.has_namespaces() {
            let relation = self
                .namespace_plugin(&plugin.name)
                .await?
                .filter(|r| r.plugin_id == plugin.id)
                .ok_or_else(|| ClientError::Body {
                    what: "GET /namespace-plugin".to_owned(),
                    detail: format!(
                        "no plugin {} (id {}) in namespace {}",
                        plugin.name, plugin.id, self.namespace_id
                    ),
                    body: String::new(),
                })?;
            let path = format!("/namespace-plugin/{}", relation.id);
            let what = format!("PUT {path}");
            let body = serde_json::json!({
                "pluginId": plugin.id,
                "name": plugin.name,
                "sort": plugin.sort,
                "enabled": plugin.enabled,
                "config": plugin.config,
                "namespaceId": self.namespace_id,
            });
            let (status, text) = self.call(reqwest::Method::PUT, &path, Some(&body)).await?;
            return envelope::<serde_json::Value>(&what, status, text).map(drop);
        }
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
    ///
    /// Under 2.7 the body carries `namespaceId`, and a divide selector whose handle lists
    /// upstreams then has them bound through discovery (`POST /proxy-selector/binding`, a
    /// "local" discovery): a 2.7 gateway takes divide upstreams from `DISCOVER_UPSTREAM`, not
    /// from the handle.
    pub async fn create_selector(&self, dto: &SelectorDto) -> Result<String, ClientError> {
        let dto = self.selector_body(dto);
        let id: String = self
            .data(reqwest::Method::POST, "/selector", Some(&dto))
            .await?;
        if let Some(upstreams) = self.discovery_upstreams(&dto).await? {
            self.bind_upstreams(&id, &dto, &upstreams).await?;
        }
        Ok(id)
    }

    /// Updates selector `id`.
    ///
    /// Under 2.7 the body carries `namespaceId`, and a divide selector's discovery upstreams
    /// are replaced with its handle's (`PUT /discovery-upstream/{discoveryHandlerId}`, the
    /// handler read from `GET /selector/{id}`; bound as on create if it has none yet).
    pub async fn update_selector(&self, id: &str, dto: &SelectorDto) -> Result<(), ClientError> {
        let dto = self.selector_body(dto);
        self.data::<i64>(reqwest::Method::PUT, &format!("/selector/{id}"), Some(&dto))
            .await?;
        if let Some(upstreams) = self.discovery_upstreams(&dto).await? {
            let path = format!("/selector/{id}");
            let selector: serde_json::Value =
                self.data(reqwest::Method::GET, &path, None::<&()>).await?;
            let handler = selector
                .pointer("/discoveryHandler/id")
                .and_then(serde_json::Value::as_str);
            match handler {
                Some(handler) => self.replace_upstreams(handler, &upstreams).await?,
                None => self.bind_upstreams(id, &dto, &upstreams).await?,
            }
        }
        Ok(())
    }

    /// `dto` as this profile sends it (2.7: with `namespaceId`).
    fn selector_body(&self, dto: &SelectorDto) -> SelectorDto {
        SelectorDto {
            namespace_id: self.body_ns(dto.namespace_id.as_ref()),
            ..dto.clone()
        }
    }

    /// Under 2.7, the upstreams of `dto` if it is a divide selector whose handle is an
    /// upstream list (the plugin's name comes from `GET /plugin-template/{pluginId}`); else
    /// `None`, and nothing is bound.
    async fn discovery_upstreams(
        &self,
        dto: &SelectorDto,
    ) -> Result<Option<Vec<DiscoveryUpstream>>, ClientError> {
        if !self.profile.binds_discovery_upstreams() {
            return Ok(None);
        }
        let (Some(handle), Some(plugin_id)) = (dto.handle.as_deref(), dto.plugin_id.as_deref())
        else {
            return Ok(None);
        };
        let Some(upstreams) = DiscoveryUpstream::from_handle(handle) else {
            return Ok(None);
        };
        let path = format!("/plugin-template/{plugin_id}");
        let plugin: PluginName = self.data(reqwest::Method::GET, &path, None::<&()>).await?;
        Ok((plugin.name == DIVIDE).then_some(upstreams))
    }

    /// Binds a "local" discovery with `upstreams` to selector `id` (2.7,
    /// `POST /proxy-selector/binding`, as ShenYu's own e2e `AdminClient.bindingData` does).
    async fn bind_upstreams(
        &self,
        id: &str,
        dto: &SelectorDto,
        upstreams: &[DiscoveryUpstream],
    ) -> Result<(), ClientError> {
        let path = "/proxy-selector/binding";
        let body = serde_json::json!({
            "selectorId": id,
            "name": dto.name,
            "pluginName": DIVIDE,
            "type": "http",
            "namespaceId": self.namespace_id,
            "discovery": { "discoveryType": "local", "props": "{}" },
            "discoveryUpstreams": upstreams
                .iter()
                .map(|u| u.json(&self.namespace_id, None))
                .collect::<Vec<_>>(),
        });
        let (status, text) = self.call(reqwest::Method::POST, path, Some(&body)).await?;
        envelope::<serde_json::Value>(&format!("POST {path}"), status, text).map(drop)
    }

    /// Replaces the upstreams of discovery handler `handler` (2.7,
    /// `PUT /discovery-upstream/{handler}`; the admin deletes the old ones and publishes
    /// `DISCOVER_UPSTREAM`).
    async fn replace_upstreams(
        &self,
        handler: &str,
        upstreams: &[DiscoveryUpstream],
    ) -> Result<(), ClientError> {
        let path = format!("/discovery-upstream/{handler}");
        let body: Vec<_> = upstreams
            .iter()
            .map(|u| u.json(&self.namespace_id, Some(handler)))
            .collect();
        let (status, text) = self.call(reqwest::Method::PUT, &path, Some(&body)).await?;
        envelope::<serde_json::Value>(&format!("PUT {path}"), status, text).map(drop)
    }

    /// Selector `id`, or `None` when the admin answers 404.
    pub async fn get_selector(&self, id: &str) -> Result<Option<SelectorVo>, ClientError> {
        self.get_opt(&format!("/selector/{id}")).await
    }

    /// The selectors of plugin `plugin_id` (first 100; under 2.7 in the client's namespace).
    pub async fn list_selectors(&self, plugin_id: &str) -> Result<Vec<SelectorVo>, ClientError> {
        let path = format!(
            "/selector?pluginId={plugin_id}&currentPage=1&pageSize=100{}",
            self.ns_param()
        );
        let page: CommonPager<SelectorVo> =
            self.data(reqwest::Method::GET, &path, None::<&()>).await?;
        Ok(page.data_list)
    }

    /// Deletes selectors (and their rules; under 2.7 also their discovery bindings, which the
    /// admin removes itself); returns the count the admin reports.
    pub async fn delete_selectors(&self, ids: &[String]) -> Result<i64, ClientError> {
        let body = BatchIds {
            ids: Some(ids.to_vec()),
            namespace_id: self.body_ns(None),
        };
        self.data(reqwest::Method::DELETE, "/selector/batch", Some(&body))
            .await
    }

    /// Creates a rule. `POST /rule` answers a count, so the new rule is found by listing its
    /// selector's rules by name; returns its id.
    pub async fn create_rule(&self, dto: &RuleDto) -> Result<Option<String>, ClientError> {
        let dto = &self.rule_body(dto);
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
        let dto = self.rule_body(dto);
        self.data::<i64>(reqwest::Method::PUT, &format!("/rule/{id}"), Some(&dto))
            .await
            .map(drop)
    }

    /// `dto` as this profile sends it (2.7: with `namespaceId`).
    fn rule_body(&self, dto: &RuleDto) -> RuleDto {
        RuleDto {
            namespace_id: self.body_ns(dto.namespace_id.as_ref()),
            ..dto.clone()
        }
    }

    /// Rule `id`, or `None` when the admin answers 404.
    pub async fn get_rule(&self, id: &str) -> Result<Option<RuleVo>, ClientError> {
        self.get_opt(&format!("/rule/{id}")).await
    }

    /// The rules of `selector_id` whose name contains `name` (first 100; under 2.7 in the
    /// client's namespace).
    pub async fn list_rules(
        &self,
        selector_id: &str,
        name: &str,
    ) -> Result<Vec<RuleVo>, ClientError> {
        let path = format!(
            "/rule?selectorId={selector_id}&name={name}&currentPage=1&pageSize=100{}",
            self.ns_param()
        );
        let page: CommonPager<RuleVo> = self.data(reqwest::Method::GET, &path, None::<&()>).await?;
        Ok(page.data_list)
    }

    /// Deletes rules; returns the count the admin reports.
    pub async fn delete_rules(&self, ids: &[String]) -> Result<i64, ClientError> {
        let body = BatchIds {
            ids: Some(ids.to_vec()),
            namespace_id: self.body_ns(None),
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

    /// The admin's config digest.
    pub async fn digest(&self) -> Result<model::DigestReport, ClientError> {
        super::gateway::digest(&self.http, &self.base).await
    }

    /// Every plugin the admin has (pages of 100 until one comes back short).
    /// (Under 2.7, the namespace's plugins, `GET /namespace-plugin`.)
    pub async fn plugins(&self) -> Result<Vec<PluginVo>, ClientError> {
        if self.profile.has_namespaces() {
            let ns = self.ns_param();
            let all: Vec<NamespacePluginVo> = self
                .all_pages(|page| {
                    format!("/namespace-plugin?currentPage={page}&pageSize={PAGE}{ns}")
                })
                .await?;
            return Ok(all
                .into_iter()
                .map(NamespacePluginVo::into_plugin)
                .collect());
        }
        self.all_pages(|page| format!("/plugin?currentPage={page}&pageSize={PAGE}"))
            .await
    }

    /// Every selector of plugin `plugin_id` (pages of 100 until one comes back short).
    pub async fn all_selectors(&self, plugin_id: &str) -> Result<Vec<SelectorVo>, ClientError> {
        self.all_pages(|page| {
            format!(
                "/selector?pluginId={plugin_id}&currentPage={page}&pageSize={PAGE}{}",
                self.ns_param()
            )
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
        if self.profile == Profile::V2_7 && status == 200 && is_not_existed(&text) {
            return Ok(None);
        }
        envelope(&what, status, text)
    }
}

/// Whether `body` is ShenYu's answer for a missing path id: HTTP 200 with an error code and an
/// `@Existed` message such as `selector is not existed` (ShenYu has no 404 for those).
fn is_not_existed(body: &str) -> bool {
    serde_json::from_str::<AdminResult<serde_json::Value>>(body)
        .is_ok_and(|r| r.code != model::admin_code::SUCCESS && r.message.contains("is not existed"))
}

/// The divide plugin's name (`PluginEnum.DIVIDE`).
const DIVIDE: &str = "divide";

/// Percent-encodes `value` for a query string (RFC 3986 unreserved characters stay).
fn query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A namespace's plugin as ShenYu 2.7 lists it (`NamespacePluginVO`: `id` is the relation id,
/// `pluginId` the plugin's).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct NamespacePluginVo {
    id: String,
    plugin_id: String,
    name: String,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    sort: Option<i32>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    config: Option<String>,
    #[serde(default)]
    date_created: Option<String>,
    #[serde(default)]
    date_updated: Option<String>,
}

impl NamespacePluginVo {
    /// The plugin as the 2.6 API shows it: the plugin id, the namespace's settings.
    fn into_plugin(self) -> PluginVo {
        PluginVo {
            id: self.plugin_id,
            name: self.name,
            role: self.role.unwrap_or_default(),
            sort: self.sort.unwrap_or_default(),
            enabled: self.enabled.unwrap_or_default(),
            config: self.config,
            date_created: self.date_created.unwrap_or_default(),
            date_updated: self.date_updated.unwrap_or_default(),
        }
    }
}

/// The name of a plugin template (`GET /plugin-template/{id}`, ShenYu `PluginVO`).
#[derive(Debug, serde::Deserialize)]
struct PluginName {
    name: String,
}

/// One upstream of a divide handle, as ShenYu 2.7's discovery takes it.
#[derive(Debug, Clone, PartialEq)]
struct DiscoveryUpstream {
    protocol: String,
    url: String,
    /// `0` healthy, `1` not (the gateway's `DivideUpstreamDataHandler`: `status(0 == s)`).
    status: i32,
    weight: i64,
    /// JSON object of string properties the gateway reads: `warmup`, `gray`,
    /// `healthCheckEnabled` (only those the handle has).
    props: String,
}

impl DiscoveryUpstream {
    /// The upstreams of a divide selector handle (a JSON array of objects with
    /// `upstreamUrl`), or `None` when `handle` is not one.
    fn from_handle(handle: &str) -> Option<Vec<Self>> {
        let items: Vec<serde_json::Map<String, serde_json::Value>> =
            serde_json::from_str(handle).ok()?;
        items
            .iter()
            .map(|item| {
                let url = item.get("upstreamUrl")?.as_str()?.to_owned();
                let protocol = item
                    .get("protocol")
                    .and_then(serde_json::Value::as_str)
                    .filter(|p| !p.is_empty())
                    .unwrap_or("http://")
                    .to_owned();
                let weight = item
                    .get("weight")
                    .and_then(serde_json::Value::as_i64)
                    .unwrap_or(50);
                let healthy = item
                    .get("status")
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(true);
                let props: serde_json::Map<String, serde_json::Value> =
                    ["warmup", "gray", "healthCheckEnabled"]
                        .into_iter()
                        .filter_map(|key| {
                            let value = match item.get(key)? {
                                serde_json::Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            Some((key.to_owned(), serde_json::Value::String(value)))
                        })
                        .collect();
                Some(Self {
                    protocol,
                    url,
                    status: if healthy { 0 } else { 1 },
                    weight,
                    props: serde_json::Value::Object(props).to_string(),
                })
            })
            .collect()
    }

    /// The JSON of a binding's `discoveryUpstreams` item, or with `handler`, of a
    /// `DiscoveryUpstreamDTO` (which requires `discoveryHandlerId`).
    fn json(&self, namespace_id: &str, handler: Option<&str>) -> serde_json::Value {
        let mut value = serde_json::json!({
            "protocol": self.protocol,
            "url": self.url,
            "status": self.status,
            "weight": self.weight,
            "props": self.props,
            "namespaceId": namespace_id,
        });
        if let Some(handler) = handler {
            value["discoveryHandlerId"] = handler.into();
        }
        value
    }
}

/// The requests' shapes under each profile, against a wiremock admin that answers only the
/// shape the profile must send (a fake admin: nothing here checks ShenYu's behaviour).
#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use wiremock::matchers::{body_json, body_partial_json, method, path, query_param};
    use wiremock::{Mock, MockServer, Request, ResponseTemplate};

    use super::*;

    const NS: &str = model::DEFAULT_NAMESPACE_ID;

    /// A success envelope around `data`.
    fn ok(data: Value) -> ResponseTemplate {
        let mut body = json!({"code": 200, "message": "ok"});
        body["data"] = data;
        ResponseTemplate::new(200).set_body_json(body)
    }

    /// A `CommonPager` of `list`.
    fn page(list: Value) -> Value {
        let mut page = json!({"page": {"currentPage": 1, "prePage": 1, "nextPage": 1,
                                       "pageSize": 100, "offset": 0, "totalPage": 1,
                                       "totalCount": 1}});
        page["dataList"] = list;
        page
    }

    fn login_data() -> Value {
        json!({"id": "1", "userName": "admin", "role": 1, "enabled": true,
               "token": "tok", "expiredTime": 86_400_000})
    }

    /// A client logged in at a fresh fake admin (both profiles log in with `GET`).
    async fn client(profile: Profile) -> (MockServer, AdminClient) {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/platform/login"))
            .and(query_param("userName", "admin"))
            .and(query_param("password", "123456"))
            .respond_with(ok(login_data()))
            .expect(1)
            .named("login")
            .mount(&server)
            .await;
        let admin = AdminClient::login_as(&server.uri(), ADMIN_USER, ADMIN_PASSWORD, profile)
            .await
            .expect("login");
        assert_eq!(admin.profile(), profile);
        (server, admin)
    }

    /// The fake admin says plugin `5` is `name` (the 2.7 profile asks before binding).
    async fn plugin_5_is(server: &MockServer, name: &str) {
        Mock::given(method("GET"))
            .and(path("/plugin-template/5"))
            .respond_with(ok(json!({"id": "5", "name": name})))
            .mount(server)
            .await;
    }

    /// `server.verify()` fails if anything is bound through `/proxy-selector/binding`.
    async fn nothing_bound(server: &MockServer) {
        Mock::given(path("/proxy-selector/binding"))
            .respond_with(ok(json!(null)))
            .expect(0)
            .mount(server)
            .await;
    }

    fn divide_selector() -> SelectorDto {
        SelectorDto {
            plugin_id: Some("5".into()),
            name: Some("/http".into()),
            selector_type: Some(1),
            match_mode: Some(0),
            sort: Some(1),
            enabled: Some(true),
            loged: Some(true),
            continued: Some(true),
            match_restful: Some(false),
            handle: Some(
                r#"[{"upstreamUrl":"127.0.0.1:8189","protocol":"http://","weight":50,"status":true,"warmup":10},
                    {"upstreamUrl":"127.0.0.1:8190","status":false}]"#
                    .into(),
            ),
            selector_conditions: Some(vec![model::ConditionDto::new(
                "uri", "startsWith", "/", "/http/",
            )]),
            ..Default::default()
        }
    }

    fn has_namespace(req: &Request) -> bool {
        serde_json::from_slice::<Value>(&req.body)
            .is_ok_and(|body| body.get("namespaceId").is_some())
    }

    #[tokio::test]
    async fn v2_7_login_is_a_get_with_encoded_credentials() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/platform/login"))
            .and(query_param("userName", "a b&c"))
            .and(query_param("password", "p=1%"))
            .respond_with(ok(login_data()))
            .expect(1)
            .mount(&server)
            .await;
        let admin = AdminClient::login_as(&server.uri(), "a b&c", "p=1%", Profile::V2_7)
            .await
            .expect("login");
        assert_eq!(admin.namespace_id(), NS);
        // The same fake admin refuses the 2.6 login (no POST route).
        assert!(
            AdminClient::login(&server.uri(), "a b&c", "p=1%")
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn v2_7_create_divide_selector_sends_namespace_and_binds_its_upstreams() {
        let (server, admin) = client(Profile::V2_7).await;
        Mock::given(method("POST"))
            .and(path("/selector"))
            .and(body_partial_json(
                json!({"namespaceId": NS, "name": "/http", "pluginId": "5"}),
            ))
            .respond_with(ok(json!("sel-1")))
            .expect(1)
            .mount(&server)
            .await;
        plugin_5_is(&server, "divide").await;
        Mock::given(method("POST"))
            .and(path("/proxy-selector/binding"))
            .and(body_json(json!({
                "selectorId": "sel-1", "name": "/http", "pluginName": "divide", "type": "http",
                "namespaceId": NS,
                "discovery": {"discoveryType": "local", "props": "{}"},
                "discoveryUpstreams": [
                    {"protocol": "http://", "url": "127.0.0.1:8189", "status": 0, "weight": 50,
                     "props": r#"{"warmup":"10"}"#, "namespaceId": NS},
                    {"protocol": "http://", "url": "127.0.0.1:8190", "status": 1, "weight": 50,
                     "props": "{}", "namespaceId": NS},
                ],
            })))
            .respond_with(ok(json!(null)))
            .expect(1)
            .mount(&server)
            .await;
        assert_eq!(
            admin.create_selector(&divide_selector()).await.unwrap(),
            "sel-1"
        );
        server.verify().await;
    }

    #[tokio::test]
    async fn v2_7_does_not_bind_upstreams_of_other_plugins() {
        let (server, admin) = client(Profile::V2_7).await;
        Mock::given(method("POST"))
            .and(path("/selector"))
            .and(body_partial_json(json!({"namespaceId": NS})))
            .respond_with(ok(json!("sel-2")))
            .mount(&server)
            .await;
        plugin_5_is(&server, "websocket").await;
        nothing_bound(&server).await;
        assert_eq!(
            admin.create_selector(&divide_selector()).await.unwrap(),
            "sel-2"
        );
        server.verify().await;
    }

    #[tokio::test]
    async fn v2_7_update_divide_selector_replaces_its_discovery_upstreams() {
        let (server, admin) = client(Profile::V2_7).await;
        Mock::given(method("PUT"))
            .and(path("/selector/sel-1"))
            .and(body_partial_json(json!({"namespaceId": NS})))
            .respond_with(ok(json!(1)))
            .expect(1)
            .mount(&server)
            .await;
        plugin_5_is(&server, "divide").await;
        Mock::given(method("GET"))
            .and(path("/selector/sel-1"))
            .respond_with(ok(
                json!({"id": "sel-1", "discoveryHandler": {"id": "h-1"}}),
            ))
            .mount(&server)
            .await;
        Mock::given(method("PUT"))
            .and(path("/discovery-upstream/h-1"))
            .and(body_partial_json(json!([
                {"discoveryHandlerId": "h-1", "namespaceId": NS, "url": "127.0.0.1:8189",
                 "status": 0, "weight": 50, "props": r#"{"warmup":"10"}"#},
                {"discoveryHandlerId": "h-1", "url": "127.0.0.1:8190", "status": 1},
            ])))
            .respond_with(ok(json!(0)))
            .expect(1)
            .mount(&server)
            .await;
        nothing_bound(&server).await;
        admin
            .update_selector("sel-1", &divide_selector())
            .await
            .unwrap();
        server.verify().await;
    }

    #[tokio::test]
    async fn v2_6_selector_bodies_have_no_namespace_and_nothing_is_bound() {
        let (server, admin) = client(Profile::V2_6).await;
        Mock::given(method("POST"))
            .and(path("/selector"))
            .and(|req: &Request| !has_namespace(req))
            .and(body_partial_json(
                json!({"name": "/http", "handle": divide_selector().handle}),
            ))
            .respond_with(ok(json!("sel-1")))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("PUT"))
            .and(path("/selector/sel-1"))
            .and(|req: &Request| !has_namespace(req))
            .respond_with(ok(json!(1)))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("DELETE"))
            .and(path("/selector/batch"))
            .and(body_json(json!({"ids": ["sel-1"]})))
            .respond_with(ok(json!(1)))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/selector"))
            .and(|req: &Request| !req.url.query().unwrap_or_default().contains("namespaceId"))
            .respond_with(ok(page(json!([]))))
            .expect(1)
            .mount(&server)
            .await;
        let id = admin.create_selector(&divide_selector()).await.unwrap();
        admin
            .update_selector(&id, &divide_selector())
            .await
            .unwrap();
        assert!(admin.list_selectors("5").await.unwrap().is_empty());
        assert_eq!(admin.delete_selectors(&[id]).await.unwrap(), 1);
        server.verify().await;
        let unexpected: Vec<_> = server
            .received_requests()
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.url.path().to_owned())
            .filter(|p| p.starts_with("/proxy-selector") || p.starts_with("/plugin-template"))
            .collect();
        assert!(unexpected.is_empty(), "{unexpected:?}");
    }

    #[tokio::test]
    async fn v2_7_lists_and_batch_deletes_carry_the_namespace() {
        let (server, admin) = client(Profile::V2_7).await;
        let admin = admin.with_namespace("ns 1");
        Mock::given(method("GET"))
            .and(path("/selector"))
            .and(query_param("pluginId", "5"))
            .and(query_param("namespaceId", "ns 1"))
            .respond_with(ok(page(json!([]))))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("DELETE"))
            .and(path("/selector/batch"))
            .and(body_json(json!({"ids": ["sel-1"], "namespaceId": "ns 1"})))
            .respond_with(ok(json!(1)))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/rule"))
            .and(query_param("selectorId", "sel-1"))
            .and(query_param("namespaceId", "ns 1"))
            .respond_with(ok(page(json!([]))))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("DELETE"))
            .and(path("/rule/batch"))
            .and(body_json(json!({"ids": ["rule-1"], "namespaceId": "ns 1"})))
            .respond_with(ok(json!(1)))
            .expect(1)
            .mount(&server)
            .await;
        assert!(admin.list_selectors("5").await.unwrap().is_empty());
        assert_eq!(admin.delete_selectors(&["sel-1".into()]).await.unwrap(), 1);
        assert!(admin.list_rules("sel-1", "").await.unwrap().is_empty());
        assert_eq!(admin.delete_rules(&["rule-1".into()]).await.unwrap(), 1);
        server.verify().await;
    }

    #[tokio::test]
    async fn v2_7_rule_bodies_carry_the_namespace() {
        let (server, admin) = client(Profile::V2_7).await;
        let rule = RuleDto {
            selector_id: Some("sel-1".into()),
            name: Some("/http/get".into()),
            ..Default::default()
        };
        Mock::given(method("POST"))
            .and(path("/rule"))
            .and(body_partial_json(
                json!({"namespaceId": NS, "selectorId": "sel-1"}),
            ))
            .respond_with(ok(json!(1)))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("PUT"))
            .and(path("/rule/rule-1"))
            .and(body_partial_json(json!({"namespaceId": NS})))
            .respond_with(ok(json!(1)))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/rule"))
            .and(query_param("namespaceId", NS))
            .respond_with(ok(page(json!([{
                "id": "rule-1", "selectorId": "sel-1", "name": "/http/get", "matchMode": 0,
                "matchModeName": "and", "sort": 1, "enabled": true, "loged": true,
                "matchRestful": false, "handle": null, "ruleConditions": [],
                "namespaceId": NS, "dateCreated": "", "dateUpdated": ""}]))))
            .mount(&server)
            .await;
        assert_eq!(
            admin.create_rule(&rule).await.unwrap().as_deref(),
            Some("rule-1")
        );
        admin.update_rule("rule-1", &rule).await.unwrap();
        server.verify().await;
    }

    #[tokio::test]
    async fn v2_7_plugins_are_looked_up_enabled_and_updated_per_namespace() {
        let (server, admin) = client(Profile::V2_7).await;
        Mock::given(method("GET"))
            .and(path("/namespace-plugin"))
            .and(query_param("name", "divide"))
            .and(query_param("namespaceId", NS))
            .respond_with(ok(page(json!([{
                "id": "rel-5", "pluginId": "5", "pluginRelId": "rel-5", "name": "divide",
                "role": "Proxy", "sort": 200, "enabled": false, "config": null,
                "namespaceId": NS, "dateCreated": "2024-01-01 00:00:00.0",
                "dateUpdated": "2024-01-01 00:00:00.0"}]))))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/namespace-plugin/enabledByNamespace"))
            .and(body_json(
                json!({"ids": ["5"], "enabled": true, "namespaceId": NS}),
            ))
            .respond_with(ok(json!(null)))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("PUT"))
            .and(path("/namespace-plugin/rel-5"))
            .and(body_json(
                json!({"pluginId": "5", "name": "divide", "sort": 10,
                                  "enabled": true, "config": "{}", "namespaceId": NS}),
            ))
            .respond_with(ok(json!("update success")))
            .expect(1)
            .mount(&server)
            .await;
        assert_eq!(
            admin.plugin_id("divide").await.unwrap().as_deref(),
            Some("5")
        );
        let mut plugin = admin.plugin("divide").await.unwrap().expect("divide");
        assert_eq!(
            (plugin.id.as_str(), plugin.sort, plugin.enabled),
            ("5", 200, false)
        );
        admin
            .enable_plugins(&[plugin.id.clone()], true)
            .await
            .unwrap();
        plugin.sort = 10;
        plugin.enabled = true;
        plugin.config = Some("{}".into());
        admin.update_plugin(&plugin).await.unwrap();
        server.verify().await;
    }

    #[tokio::test]
    async fn v2_7_missing_selector_is_none_and_long_poll_names_the_namespace() {
        let (server, admin) = client(Profile::V2_7).await;
        Mock::given(method("GET"))
            .and(path("/selector/nope"))
            .respond_with(ResponseTemplate::new(200).set_body_json(
                json!({"code": 500, "message": "selector is not existed", "data": null}),
            ))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/configs/fetch"))
            .and(query_param("groupKeys", "SELECTOR"))
            .and(query_param("namespaceId", NS))
            .respond_with(ok(
                json!({"SELECTOR": {"md5": "abc", "lastModifyTime": 1, "data": []}}),
            ))
            .expect(1)
            .mount(&server)
            .await;
        assert_eq!(admin.get_selector("nope").await.unwrap(), None);
        assert_eq!(
            admin
                .long_poll_md5(model::ConfigGroup::Selector)
                .await
                .unwrap(),
            "abc"
        );
        server.verify().await;
    }

    #[test]
    fn divide_handles_become_discovery_upstreams() {
        let ups = DiscoveryUpstream::from_handle(
            r#"[{"upstreamUrl":"h:1","protocol":"https://","weight":7,"status":false,"gray":true,"healthCheckEnabled":false}]"#,
        )
        .unwrap();
        assert_eq!(
            ups,
            [DiscoveryUpstream {
                protocol: "https://".into(),
                url: "h:1".into(),
                status: 1,
                weight: 7,
                props: r#"{"gray":"true","healthCheckEnabled":"false"}"#.into(),
            }]
        );
        assert_eq!(DiscoveryUpstream::from_handle("[]"), Some(vec![]));
        assert_eq!(
            DiscoveryUpstream::from_handle(r#"{"loadBalance":"random"}"#),
            None
        );
        assert_eq!(DiscoveryUpstream::from_handle(r#"[{"host":"h"}]"#), None);
        assert_eq!(query_value("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
