//! `/plugin-handle` ([`PluginHandles`]): which fields each plugin's selector, rule and plugin
//! handles have (ShenYu `PluginHandleController`): paged list, detail, create, update and
//! batch delete through the generic handlers of [`resource`](super::resource), and its own
//! list per plugin and type. These definitions drive ShenYu's dashboard forms; they are not
//! synced to gateways, so writing them publishes nothing.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use model::AdminResult;
use serde::Deserialize;

use super::resource::{ListQuery, Resource, Write};
use super::{Paging, name_matches};
use crate::dto::{PluginHandleDto, PluginHandleVo};
use crate::error::{ApiError, ok};
use crate::service::{Admin, ServiceError};
use crate::store::{PluginHandleRecord, StoreError};

/// `/plugin-handle`, as the generic handlers serve it (a marker type).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PluginHandles;

impl Resource for PluginHandles {
    const NOUN: &'static str = "plugin handle";
    type Record = PluginHandleRecord;
    type Vo = PluginHandleVo;
    /// A JSON array of ids; all or none.
    type DeleteBody = Vec<String>;

    fn vo(h: PluginHandleRecord) -> PluginHandleVo {
        PluginHandleVo {
            id: h.id,
            plugin_id: h.plugin_id,
            field: h.field,
            label: h.label,
            data_type: h.data_type,
            handle_type: h.handle_type,
            sort: h.sort,
            ext_obj: h.ext_obj,
            date_created: h.date_created,
            date_updated: h.date_updated,
        }
    }

    async fn find(admin: &Admin, id: &str) -> Result<Option<PluginHandleRecord>, StoreError> {
        admin.store().plugin_handle(id).await
    }

    async fn all(admin: &Admin) -> Result<Vec<PluginHandleRecord>, StoreError> {
        admin.store().plugin_handles().await
    }

    async fn delete(admin: &Admin, ids: &[String]) -> Result<usize, ServiceError> {
        admin.delete_plugin_handles(ids).await
    }
}

impl Write for PluginHandles {
    type Dto = PluginHandleDto;
    /// A count, as ShenYu answers.
    type Created = i32;

    async fn create(admin: &Admin, dto: PluginHandleDto) -> Result<i32, ServiceError> {
        admin.save_plugin_handle(None, dto).await?;
        Ok(1)
    }

    async fn update(admin: &Admin, id: &str, dto: PluginHandleDto) -> Result<(), ServiceError> {
        admin.save_plugin_handle(Some(id), dto).await
    }
}

/// Query of `GET /plugin-handle`: plugin id (exact) and field (substring).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PluginHandleQuery {
    plugin_id: Option<String>,
    field: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

impl ListQuery<PluginHandles> for PluginHandleQuery {
    fn paging(&self) -> &Paging {
        &self.paging
    }

    fn filter(&self) -> Result<impl Fn(&PluginHandleRecord) -> bool + Send, ApiError> {
        let plugin_id = self
            .plugin_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        Ok(move |h: &PluginHandleRecord| {
            plugin_id.is_none_or(|p| h.plugin_id == p)
                && name_matches(self.field.as_deref(), &h.field)
        })
    }
}

/// `GET /plugin-handle/all/{pluginId}/{type}`: one plugin's fields of one handle type.
pub(crate) async fn all(
    State(admin): State<Arc<Admin>>,
    Path((plugin_id, handle_type)): Path<(String, String)>,
) -> Result<Json<AdminResult<Vec<PluginHandleVo>>>, ApiError> {
    let handle_type: i32 = handle_type
        .trim()
        .parse()
        .map_err(|_| ApiError::field("type", format!("`{handle_type}` is not an integer")))?;
    let handles = PluginHandles::all(&admin)
        .await?
        .into_iter()
        .filter(|h| h.plugin_id == plugin_id && h.handle_type == handle_type)
        .map(PluginHandles::vo)
        .collect();
    Ok(ok("query success", handles))
}
