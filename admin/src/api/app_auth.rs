//! `/appAuth`: apply, paged query, detail, update, batch delete and enable.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use model::{AdminResult, BatchEnabled, BatchIds, CommonPager, DEFAULT_NAMESPACE_ID};
use serde::Deserialize;

use super::extract::{AdminJson, AdminQuery};
use super::{Paging, batch_ids, enable_success, name_matches};
use crate::dto::{AppAuthDto, AppAuthVo, AuthApplyDto, AuthParamDto, AuthPathDto};
use crate::error::{ApiError, ok};
use crate::service::Admin;
use crate::store::AppAuthRecord;

fn vo(a: AppAuthRecord) -> AppAuthVo {
    AppAuthVo {
        auth_param_list: a
            .params
            .into_iter()
            .map(|p| AuthParamDto {
                app_name: Some(p.app_name),
                app_param: Some(p.app_param),
            })
            .collect(),
        auth_path_list: a
            .paths
            .into_iter()
            .map(|p| AuthPathDto {
                app_name: Some(p.app_name),
                path: Some(p.path),
                enabled: Some(p.enabled),
            })
            .collect(),
        id: a.id,
        app_key: a.app_key,
        app_secret: a.app_secret,
        user_id: a.user_id,
        phone: a.phone,
        ext_info: a.ext_info,
        open: a.open,
        enabled: a.enabled,
        namespace_id: DEFAULT_NAMESPACE_ID.to_owned(),
        date_created: a.date_created,
        date_updated: a.date_updated,
    }
}

/// `POST /appAuth/apply`: answers the new entry, with its key and secret.
pub(crate) async fn apply(
    State(admin): State<Arc<Admin>>,
    AdminJson(dto): AdminJson<AuthApplyDto>,
) -> Result<Json<AdminResult<AppAuthVo>>, ApiError> {
    let record = admin.apply_app_auth(dto).await?;
    Ok(ok("create success", vo(record)))
}

/// Query of `GET /appAuth/findPageByQuery`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AppAuthQuery {
    app_key: Option<String>,
    phone: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

/// `GET /appAuth/findPageByQuery`: paged, filtered by `appKey` and `phone` substrings.
pub(crate) async fn find_page(
    State(admin): State<Arc<Admin>>,
    AdminQuery(query): AdminQuery<AppAuthQuery>,
) -> Result<Json<AdminResult<CommonPager<AppAuthVo>>>, ApiError> {
    let items = admin
        .store()
        .app_auths()
        .await?
        .into_iter()
        .filter(|a| name_matches(query.app_key.as_deref(), &a.app_key))
        .filter(|a| name_matches(query.phone.as_deref(), a.phone.as_deref().unwrap_or("")))
        .map(vo)
        .collect();
    Ok(ok("query success", query.paging.page(items)?))
}

/// Query of `GET /appAuth/detail`.
#[derive(Debug, Deserialize)]
pub(crate) struct IdQuery {
    id: Option<String>,
}

/// `GET /appAuth/detail?id=`.
pub(crate) async fn detail(
    State(admin): State<Arc<Admin>>,
    AdminQuery(query): AdminQuery<IdQuery>,
) -> Result<Json<AdminResult<AppAuthVo>>, ApiError> {
    let id = query
        .id
        .filter(|id| !id.trim().is_empty())
        .ok_or_else(|| ApiError::field("id", "must not be blank"))?;
    let record = admin
        .store()
        .app_auth(id.trim())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("app auth `{id}` does not exist")))?;
    Ok(ok("detail success", vo(record)))
}

/// `POST /appAuth/updateDetail`.
pub(crate) async fn update_detail(
    State(admin): State<Arc<Admin>>,
    AdminJson(dto): AdminJson<AppAuthDto>,
) -> Result<Json<AdminResult<i32>>, ApiError> {
    admin.update_app_auth(dto).await?;
    Ok(ok("update success", 1))
}

/// Body of `POST /appAuth/batchDelete`: ShenYu sends a bare array; `{"ids":[..]}` works too.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum IdList {
    /// `["1","2"]`.
    Bare(Vec<String>),
    /// `{"ids":["1","2"]}`.
    Wrapped(BatchIds),
}

/// `POST /appAuth/batchDelete`.
pub(crate) async fn batch_delete(
    State(admin): State<Arc<Admin>>,
    AdminJson(body): AdminJson<IdList>,
) -> Result<Json<AdminResult<usize>>, ApiError> {
    let ids = batch_ids(match body {
        IdList::Bare(ids) => Some(ids),
        IdList::Wrapped(body) => body.ids,
    })?;
    Ok(ok("delete success", admin.delete_app_auths(&ids).await?))
}

/// `POST /appAuth/batchEnabled`.
pub(crate) async fn batch_enabled(
    State(admin): State<Arc<Admin>>,
    AdminJson(body): AdminJson<BatchEnabled>,
) -> Result<Json<AdminResult<()>>, ApiError> {
    let (ids, enabled) = super::batch_enabled(body)?;
    admin.enable_app_auths(&ids, enabled).await?;
    Ok(enable_success())
}
