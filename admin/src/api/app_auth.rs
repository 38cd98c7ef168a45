//! `/appAuth` ([`AppAuths`]): paged query, batch delete and enable through the generic
//! handlers of [`resource`](super::resource), and its own apply, detail (by `?id=`) and
//! update.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use model::{AdminResult, BatchIds, DEFAULT_NAMESPACE_ID};
use serde::Deserialize;

use super::extract::{AdminJson, AdminQuery};
use super::resource::{DeleteBody, Enable, ListQuery, Resource, not_found};
use super::{Paging, name_matches};
use crate::dto::{AppAuthDto, AppAuthVo, AuthApplyDto, AuthParamDto, AuthPathDto};
use crate::error::{ApiError, ok};
use crate::service::{Admin, ServiceError};
use crate::store::{AppAuthRecord, StoreError};

/// `/appAuth`, as the generic handlers serve it (a marker type).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AppAuths;

impl Resource for AppAuths {
    const NOUN: &'static str = "app auth";
    type Record = AppAuthRecord;
    type Vo = AppAuthVo;
    type DeleteBody = IdList;

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

    async fn find(admin: &Admin, id: &str) -> Result<Option<AppAuthRecord>, StoreError> {
        admin.store().app_auth(id).await
    }

    async fn all(admin: &Admin) -> Result<Vec<AppAuthRecord>, StoreError> {
        admin.store().app_auths().await
    }

    async fn delete(admin: &Admin, ids: &[String]) -> Result<usize, ServiceError> {
        admin.delete_app_auths(ids).await
    }
}

impl Enable for AppAuths {
    async fn enable(admin: &Admin, ids: &[String], enabled: bool) -> Result<(), ServiceError> {
        admin.enable_app_auths(ids, enabled).await
    }
}

/// `POST /appAuth/apply`: answers the new entry, with its key and secret.
pub(crate) async fn apply(
    State(admin): State<Arc<Admin>>,
    AdminJson(dto): AdminJson<AuthApplyDto>,
) -> Result<Json<AdminResult<AppAuthVo>>, ApiError> {
    let record = admin.apply_app_auth(dto).await?;
    Ok(ok("create success", AppAuths::vo(record)))
}

/// Query of `GET /appAuth/findPageByQuery`: `appKey` and `phone` substrings.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AppAuthQuery {
    app_key: Option<String>,
    phone: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

impl ListQuery<AppAuths> for AppAuthQuery {
    fn paging(&self) -> &Paging {
        &self.paging
    }

    fn filter(&self) -> Result<impl Fn(&AppAuthRecord) -> bool + Send, ApiError> {
        Ok(|a: &AppAuthRecord| {
            name_matches(self.app_key.as_deref(), &a.app_key)
                && name_matches(self.phone.as_deref(), a.phone.as_deref().unwrap_or(""))
        })
    }
}

/// Query of `GET /appAuth/detail`.
#[derive(Debug, Deserialize)]
pub(crate) struct IdQuery {
    id: Option<String>,
}

/// `GET /appAuth/detail?id=`: the id is trimmed for the lookup.
pub(crate) async fn detail(
    State(admin): State<Arc<Admin>>,
    AdminQuery(query): AdminQuery<IdQuery>,
) -> Result<Json<AdminResult<AppAuthVo>>, ApiError> {
    let id = query
        .id
        .filter(|id| !id.trim().is_empty())
        .ok_or_else(|| ApiError::field("id", "must not be blank"))?;
    let record = AppAuths::find(&admin, id.trim())
        .await?
        .ok_or_else(|| not_found::<AppAuths>(&id))?;
    Ok(ok("detail success", AppAuths::vo(record)))
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

impl DeleteBody for IdList {
    fn ids(self) -> Option<Vec<String>> {
        match self {
            IdList::Bare(ids) => Some(ids),
            IdList::Wrapped(body) => body.ids,
        }
    }
}
