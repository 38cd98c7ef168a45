//! `/rule`: create, update, detail, paged list, `list/search`, batch delete and batch enable.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use model::{
    AdminResult, BatchEnabled, BatchIds, CommonPager, DEFAULT_NAMESPACE_ID, MatchMode, RuleDto,
    RuleVo,
};
use serde::Deserialize;

use super::extract::{AdminJson, AdminQuery};
use super::{Paging, batch_ids, condition_vo, enable_success, id_in, name_matches, search_page};
use crate::dto::{PageInfo, SearchRequest};
use crate::error::{ApiError, ok};
use crate::service::Admin;
use crate::store::RuleRecord;

fn vo(r: RuleRecord) -> RuleVo {
    RuleVo {
        match_mode_name: MatchMode::from_code(r.match_mode.into()).name().to_owned(),
        rule_conditions: r.conditions.iter().map(condition_vo).collect(),
        id: r.id,
        selector_id: r.selector_id,
        name: r.name,
        match_mode: r.match_mode,
        sort: r.sort,
        enabled: r.enabled,
        loged: r.loged,
        match_restful: r.match_restful,
        handle: r.handle,
        namespace_id: DEFAULT_NAMESPACE_ID.to_owned(),
        date_created: r.date_created,
        date_updated: r.date_updated,
    }
}

/// Query of `GET /rule`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RuleQuery {
    selector_id: Option<String>,
    name: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

/// `POST /rule`: answers a count, as ShenYu does.
pub(crate) async fn create(
    State(admin): State<Arc<Admin>>,
    AdminJson(dto): AdminJson<RuleDto>,
) -> Result<Json<AdminResult<i32>>, ApiError> {
    admin.create_rule(dto).await?;
    Ok(ok("create success", 1))
}

/// `PUT /rule/{id}`.
pub(crate) async fn update(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    AdminJson(dto): AdminJson<RuleDto>,
) -> Result<Json<AdminResult<i32>>, ApiError> {
    admin.update_rule(&id, dto).await?;
    Ok(ok("update success", 1))
}

/// `GET /rule/{id}`.
pub(crate) async fn detail(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> Result<Json<AdminResult<RuleVo>>, ApiError> {
    let rule = admin
        .store()
        .rule(&id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("rule `{id}` does not exist")))?;
    Ok(ok("detail success", vo(rule)))
}

/// `GET /rule`.
pub(crate) async fn list(
    State(admin): State<Arc<Admin>>,
    AdminQuery(query): AdminQuery<RuleQuery>,
) -> Result<Json<AdminResult<CommonPager<RuleVo>>>, ApiError> {
    let selector_id = query
        .selector_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let rules = admin
        .store()
        .rules()
        .await?
        .into_iter()
        .filter(|r| selector_id.is_none_or(|s| r.selector_id == s))
        .filter(|r| name_matches(query.name.as_deref(), &r.name))
        .map(vo)
        .collect();
    Ok(ok("query success", query.paging.page(rules)?))
}

/// `DELETE /rule/batch`.
pub(crate) async fn delete_batch(
    State(admin): State<Arc<Admin>>,
    AdminJson(body): AdminJson<BatchIds>,
) -> Result<Json<AdminResult<usize>>, ApiError> {
    let ids = batch_ids(body.ids)?;
    let deleted = admin.delete_rules(&ids).await?;
    Ok(ok("delete success", deleted))
}

/// `POST /rule/list/search`: a PageHelper `PageInfo` page, filtered by name keyword and
/// owning selector ids.
pub(crate) async fn search(
    State(admin): State<Arc<Admin>>,
    AdminJson(request): AdminJson<SearchRequest>,
) -> Result<Json<AdminResult<PageInfo<RuleVo>>>, ApiError> {
    let owners = request.condition.selectors.as_deref();
    let keyword = request.condition.keyword.as_deref();
    let items = admin
        .store()
        .rules()
        .await?
        .into_iter()
        .filter(|x| id_in(owners, &x.selector_id))
        .filter(|x| name_matches(keyword, &x.name))
        .map(vo)
        .collect();
    Ok(ok("query success", search_page(&request, items)?))
}

/// `POST /rule/batchEnabled`.
pub(crate) async fn batch_enabled(
    State(admin): State<Arc<Admin>>,
    AdminJson(body): AdminJson<BatchEnabled>,
) -> Result<Json<AdminResult<()>>, ApiError> {
    let (ids, enabled) = super::batch_enabled(body)?;
    admin.enable_rules(&ids, enabled).await?;
    Ok(enable_success())
}
