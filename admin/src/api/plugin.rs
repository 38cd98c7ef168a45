//! `/plugin`: list, detail, create, update, batch delete, enable. Create and update take
//! JSON or ShenYu's form fields (`@ModelAttribute`: urlencoded or multipart).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use model::{AdminResult, BatchEnabled, CommonPager, PluginVo};
use serde::Deserialize;

use super::extract::{AdminForm, AdminJson, AdminQuery, query_param};
use super::{Paging, enable_success, name_matches};
use crate::dto::PluginDto;
use crate::error::{ApiError, ok};
use crate::service::Admin;
use crate::store::PluginRecord;

fn vo(p: PluginRecord) -> PluginVo {
    PluginVo {
        id: p.id,
        name: p.name,
        role: p.role,
        sort: p.sort,
        enabled: p.enabled,
        config: p.config,
        date_created: p.date_created,
        date_updated: p.date_updated,
    }
}

/// Query of `GET /plugin`.
#[derive(Debug, Deserialize)]
pub(crate) struct PluginQuery {
    name: Option<String>,
    enabled: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

/// `GET /plugin`.
pub(crate) async fn list(
    State(admin): State<Arc<Admin>>,
    AdminQuery(query): AdminQuery<PluginQuery>,
) -> Result<Json<AdminResult<CommonPager<PluginVo>>>, ApiError> {
    let enabled = query_param::<bool>("enabled", query.enabled.as_deref())?;
    let plugins = admin
        .store()
        .plugins()
        .await?
        .into_iter()
        .filter(|p| name_matches(query.name.as_deref(), &p.name))
        .filter(|p| enabled.is_none_or(|e| p.enabled == e))
        .map(vo)
        .collect();
    Ok(ok("query success", query.paging.page(plugins)?))
}

/// `GET /plugin/all`.
pub(crate) async fn all(
    State(admin): State<Arc<Admin>>,
) -> Result<Json<AdminResult<Vec<PluginVo>>>, ApiError> {
    let plugins = admin.store().plugins().await?.into_iter().map(vo).collect();
    Ok(ok("query success", plugins))
}

/// `GET /plugin/{id}`.
pub(crate) async fn detail(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> Result<Json<AdminResult<PluginVo>>, ApiError> {
    let plugin = admin
        .store()
        .plugin(&id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("plugin `{id}` does not exist")))?;
    Ok(ok("detail success", vo(plugin)))
}

/// `POST /plugin/enabled`.
pub(crate) async fn enabled(
    State(admin): State<Arc<Admin>>,
    AdminJson(body): AdminJson<BatchEnabled>,
) -> Result<Json<AdminResult<()>>, ApiError> {
    let (ids, enabled) = super::batch_enabled(body)?;
    admin.enable_plugins(&ids, enabled).await?;
    Ok(enable_success())
}

/// `POST /plugin`: name, role, sort, enabled (default false) and config; the name must be
/// free. Answers a count, as ShenYu does.
pub(crate) async fn create(
    State(admin): State<Arc<Admin>>,
    AdminForm(dto): AdminForm<PluginDto>,
) -> Result<Json<AdminResult<i32>>, ApiError> {
    admin.create_plugin(dto).await?;
    Ok(ok("create success", 1))
}

/// `PUT /plugin/{id}`: role, sort, enabled and config (the name cannot change).
pub(crate) async fn update(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    AdminForm(dto): AdminForm<PluginDto>,
) -> Result<Json<AdminResult<i32>>, ApiError> {
    admin.update_plugin(&id, dto).await?;
    Ok(ok("update success", 1))
}

/// `DELETE /plugin/batch`: a JSON array of ids; each plugin goes with its selectors and
/// rules, all or none.
pub(crate) async fn delete_batch(
    State(admin): State<Arc<Admin>>,
    AdminJson(ids): AdminJson<Vec<String>>,
) -> Result<Json<AdminResult<usize>>, ApiError> {
    let ids = super::batch_ids(Some(ids))?;
    let deleted = admin.delete_plugins(&ids).await?;
    Ok(ok("delete success", deleted))
}
