//! The 2.7 discovery upstreams bound to divide selectors (a 2.7 gateway takes divide
//! upstreams from `DISCOVER_UPSTREAM`, not from the selector's handle).

use model::SelectorDto;

use super::envelope::envelope;
use super::session::AdminClient;
use crate::error::ClientError;

impl AdminClient {
    /// Under 2.7, the upstreams of `dto` if it is a divide selector whose handle is an
    /// upstream list (the plugin's name comes from `GET /plugin-template/{pluginId}`); else
    /// `None`, and nothing is bound.
    pub(super) async fn discovery_upstreams(
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
    pub(super) async fn bind_upstreams(
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
    pub(super) async fn replace_upstreams(
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
}

/// The divide plugin's name (`PluginEnum.DIVIDE`).
const DIVIDE: &str = "divide";

/// The name of a plugin template (`GET /plugin-template/{id}`, ShenYu `PluginVO`).
#[derive(Debug, serde::Deserialize)]
struct PluginName {
    name: String,
}

/// One upstream of a divide handle, as ShenYu 2.7's discovery takes it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct DiscoveryUpstream {
    pub(super) protocol: String,
    pub(super) url: String,
    /// `0` healthy, `1` not (the gateway's `DivideUpstreamDataHandler`: `status(0 == s)`).
    pub(super) status: i32,
    pub(super) weight: i64,
    /// JSON object of string properties the gateway reads: `warmup`, `gray`,
    /// `healthCheckEnabled` (only those the handle has).
    pub(super) props: String,
}

impl DiscoveryUpstream {
    /// The upstreams of a divide selector handle (a JSON array of objects with
    /// `upstreamUrl`), or `None` when `handle` is not one.
    pub(super) fn from_handle(handle: &str) -> Option<Vec<Self>> {
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
