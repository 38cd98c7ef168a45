//! Selectors: create, update, get, list and delete.

use model::{BatchIds, CommonPager, SelectorDto, SelectorVo};

use super::session::{AdminClient, PAGE};
use crate::error::ClientError;

impl AdminClient {
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
}
