//! `/selector`: create, update, detail, paged list, `list/search`, batch delete (with the
//! selectors' rules) and batch enable.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use model::{
    AdminResult, BatchEnabled, BatchIds, CommonPager, DEFAULT_NAMESPACE_ID, MatchMode, SelectorDto,
    SelectorType, SelectorVo,
};
use serde::Deserialize;

use super::extract::{AdminJson, AdminQuery};
use super::{Paging, batch_ids, condition_vo, enable_success, id_in, name_matches, search_page};
use crate::dto::{PageInfo, SearchRequest};
use crate::error::{ApiError, ok};
use crate::service::Admin;
use crate::store::SelectorRecord;

fn vo(s: SelectorRecord) -> SelectorVo {
    SelectorVo {
        match_mode_name: MatchMode::from_code(s.match_mode.into()).name().to_owned(),
        type_name: SelectorType::from_code(s.selector_type.into())
            .name()
            .to_owned(),
        selector_conditions: s.conditions.iter().map(condition_vo).collect(),
        id: s.id,
        plugin_id: s.plugin_id,
        name: s.name,
        match_mode: s.match_mode,
        selector_type: s.selector_type,
        sort: s.sort,
        enabled: s.enabled,
        loged: s.loged,
        continued: s.continued,
        match_restful: s.match_restful,
        handle: s.handle,
        namespace_id: DEFAULT_NAMESPACE_ID.to_owned(),
        date_created: s.date_created,
        date_updated: s.date_updated,
    }
}

/// Query of `GET /selector`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SelectorQuery {
    plugin_id: Option<String>,
    name: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

/// `POST /selector`.
pub(crate) async fn create(
    State(admin): State<Arc<Admin>>,
    AdminJson(dto): AdminJson<SelectorDto>,
) -> Result<Json<AdminResult<String>>, ApiError> {
    let id = admin.create_selector(dto).await?;
    Ok(ok("create success", id))
}

/// `PUT /selector/{id}`.
pub(crate) async fn update(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    AdminJson(dto): AdminJson<SelectorDto>,
) -> Result<Json<AdminResult<i32>>, ApiError> {
    admin.update_selector(&id, dto).await?;
    Ok(ok("update success", 1))
}

/// `GET /selector/{id}`.
pub(crate) async fn detail(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> Result<Json<AdminResult<SelectorVo>>, ApiError> {
    let selector = admin
        .store()
        .selector(&id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("selector `{id}` does not exist")))?;
    Ok(ok("detail success", vo(selector)))
}

/// `GET /selector`.
pub(crate) async fn list(
    State(admin): State<Arc<Admin>>,
    AdminQuery(query): AdminQuery<SelectorQuery>,
) -> Result<Json<AdminResult<CommonPager<SelectorVo>>>, ApiError> {
    let plugin_id = query
        .plugin_id
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let selectors = admin
        .store()
        .selectors()
        .await?
        .into_iter()
        .filter(|s| plugin_id.is_none_or(|p| s.plugin_id == p))
        .filter(|s| name_matches(query.name.as_deref(), &s.name))
        .map(vo)
        .collect();
    Ok(ok("query success", query.paging.page(selectors)?))
}

/// `DELETE /selector/batch`: the selectors' rules go too.
pub(crate) async fn delete_batch(
    State(admin): State<Arc<Admin>>,
    AdminJson(body): AdminJson<BatchIds>,
) -> Result<Json<AdminResult<usize>>, ApiError> {
    let ids = batch_ids(body.ids)?;
    let deleted = admin.delete_selectors(&ids).await?;
    Ok(ok("delete success", deleted))
}

/// `POST /selector/list/search`: a PageHelper `PageInfo` page, filtered by name keyword and
/// owning plugin ids.
pub(crate) async fn search(
    State(admin): State<Arc<Admin>>,
    AdminJson(request): AdminJson<SearchRequest>,
) -> Result<Json<AdminResult<PageInfo<SelectorVo>>>, ApiError> {
    let owners = request.condition.plugin.as_deref();
    let keyword = request.condition.keyword.as_deref();
    let items = admin
        .store()
        .selectors()
        .await?
        .into_iter()
        .filter(|x| id_in(owners, &x.plugin_id))
        .filter(|x| name_matches(keyword, &x.name))
        .map(vo)
        .collect();
    Ok(ok("query success", search_page(&request, items)?))
}

/// `POST /selector/batchEnabled`.
pub(crate) async fn batch_enabled(
    State(admin): State<Arc<Admin>>,
    AdminJson(body): AdminJson<BatchEnabled>,
) -> Result<Json<AdminResult<()>>, ApiError> {
    let (ids, enabled) = super::batch_enabled(body)?;
    admin.enable_selectors(&ids, enabled).await?;
    Ok(enable_success())
}
