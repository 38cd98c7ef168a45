//! Plugins: lookup, enabling, updating (2.7: the namespace's plugins).

use model::{CommonPager, PluginVo};

use super::envelope::envelope;
use super::session::{AdminClient, PAGE, query_value};
use crate::error::ClientError;

impl AdminClient {
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
