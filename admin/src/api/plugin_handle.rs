//! `/plugin-handle`: which fields each plugin's selector, rule and plugin handles have (ShenYu
//! `PluginHandleController`): paged list, list per plugin and type, detail, create, update,
//! batch delete. These definitions drive ShenYu's dashboard forms; they are not synced to
//! gateways, so writing them publishes nothing.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use model::{AdminResult, CommonPager};
use serde::Deserialize;

use super::extract::{AdminJson, AdminQuery};
use super::{Paging, batch_ids};
use crate::dto::{PluginHandleDto, PluginHandleVo};
use crate::error::{ApiError, ok};
use crate::service::Admin;
use crate::store::PluginHandleRecord;

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

/// Query of `GET /plugin-handle`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PluginHandleQuery {
    plugin_id: Option<String>,
    field: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

/// `GET /plugin-handle`: filtered by plugin id (exact) and field (substring).
pub(crate) async fn list(
    State(admin): State<Arc<Admin>>,
    AdminQuery(query): AdminQuery<PluginHandleQuery>,
) -> Result<Json<AdminResult<CommonPager<PluginHandleVo>>>, ApiError> {
    let plugin_id = query
        .plugin_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let handles = admin
        .store()
        .plugin_handles()
        .await?
        .into_iter()
        .filter(|h| plugin_id.is_none_or(|p| h.plugin_id == p))
        .filter(|h| super::name_matches(query.field.as_deref(), &h.field))
        .map(vo)
        .collect();
    Ok(ok("query success", query.paging.page(handles)?))
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
    let handles = admin
        .store()
        .plugin_handles()
        .await?
        .into_iter()
        .filter(|h| h.plugin_id == plugin_id && h.handle_type == handle_type)
        .map(vo)
        .collect();
    Ok(ok("query success", handles))
}

/// `GET /plugin-handle/{id}`.
pub(crate) async fn detail(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> Result<Json<AdminResult<PluginHandleVo>>, ApiError> {
    let handle = admin
        .store()
        .plugin_handle(&id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("plugin handle `{id}` does not exist")))?;
    Ok(ok("detail success", vo(handle)))
}

/// `POST /plugin-handle`: answers a count, as ShenYu does.
pub(crate) async fn create(
    State(admin): State<Arc<Admin>>,
    AdminJson(dto): AdminJson<PluginHandleDto>,
) -> Result<Json<AdminResult<i32>>, ApiError> {
    admin.save_plugin_handle(None, dto).await?;
    Ok(ok("create success", 1))
}

/// `PUT /plugin-handle/{id}`.
pub(crate) async fn update(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    AdminJson(dto): AdminJson<PluginHandleDto>,
) -> Result<Json<AdminResult<i32>>, ApiError> {
    admin.save_plugin_handle(Some(&id), dto).await?;
    Ok(ok("update success", 1))
}

/// `DELETE /plugin-handle/batch`: a JSON array of ids; all or none.
pub(crate) async fn delete_batch(
    State(admin): State<Arc<Admin>>,
    AdminJson(ids): AdminJson<Vec<String>>,
) -> Result<Json<AdminResult<usize>>, ApiError> {
    let ids = batch_ids(Some(ids))?;
    let deleted = admin.delete_plugin_handles(&ids).await?;
    Ok(ok("delete success", deleted))
}
