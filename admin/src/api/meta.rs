//! `/meta-data`: paged query, find all, detail, create or update, batch delete and enable.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use model::{AdminResult, BatchEnabled, BatchIds, CommonPager, DEFAULT_NAMESPACE_ID};
use serde::Deserialize;

use super::extract::{AdminJson, AdminQuery};
use super::{Paging, batch_ids, enable_success, name_matches};
use crate::dto::{MetaDataDto, MetaDataVo};
use crate::error::{ApiError, ok};
use crate::service::Admin;
use crate::store::MetaRecord;

fn vo(m: MetaRecord) -> MetaDataVo {
    MetaDataVo {
        id: m.id,
        app_name: m.app_name,
        context_path: m.context_path,
        path: m.path,
        path_desc: m.path_desc,
        rpc_type: m.rpc_type,
        service_name: m.service_name,
        method_name: m.method_name,
        parameter_types: m.parameter_types,
        rpc_ext: m.rpc_ext,
        rule_name: m.rule_name,
        enabled: m.enabled,
        namespace_id: DEFAULT_NAMESPACE_ID.to_owned(),
        date_created: m.date_created,
        date_updated: m.date_updated,
    }
}

/// Query of `GET /meta-data/queryList`.
#[derive(Debug, Deserialize)]
pub(crate) struct MetaQuery {
    path: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

/// `GET /meta-data/queryList`: paged, filtered by a `path` substring.
pub(crate) async fn query_list(
    State(admin): State<Arc<Admin>>,
    AdminQuery(query): AdminQuery<MetaQuery>,
) -> Result<Json<AdminResult<CommonPager<MetaDataVo>>>, ApiError> {
    let items = admin
        .store()
        .meta_data()
        .await?
        .into_iter()
        .filter(|m| name_matches(query.path.as_deref(), &m.path))
        .map(vo)
        .collect();
    Ok(ok("query success", query.paging.page(items)?))
}

/// `GET /meta-data/findAll`.
pub(crate) async fn find_all(
    State(admin): State<Arc<Admin>>,
) -> Result<Json<AdminResult<Vec<MetaDataVo>>>, ApiError> {
    let items = admin
        .store()
        .meta_data()
        .await?
        .into_iter()
        .map(vo)
        .collect();
    Ok(ok("query success", items))
}

/// `GET /meta-data/{id}`.
pub(crate) async fn detail(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> Result<Json<AdminResult<MetaDataVo>>, ApiError> {
    let meta = admin
        .store()
        .meta(&id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("metadata `{id}` does not exist")))?;
    Ok(ok("detail success", vo(meta)))
}

/// `POST /meta-data/createOrUpdate`: answers the id.
pub(crate) async fn create_or_update(
    State(admin): State<Arc<Admin>>,
    AdminJson(dto): AdminJson<MetaDataDto>,
) -> Result<Json<AdminResult<String>>, ApiError> {
    let creating = dto.id.as_deref().is_none_or(|id| id.trim().is_empty());
    let id = admin.save_meta(dto).await?;
    let message = if creating {
        "create success"
    } else {
        "update success"
    };
    Ok(ok(message, id))
}

/// `DELETE /meta-data/batchDeleted`.
pub(crate) async fn batch_deleted(
    State(admin): State<Arc<Admin>>,
    AdminJson(body): AdminJson<BatchIds>,
) -> Result<Json<AdminResult<usize>>, ApiError> {
    let ids = batch_ids(body.ids)?;
    Ok(ok("delete success", admin.delete_meta(&ids).await?))
}

/// `POST /meta-data/batchEnabled`.
pub(crate) async fn batch_enabled(
    State(admin): State<Arc<Admin>>,
    AdminJson(body): AdminJson<BatchEnabled>,
) -> Result<Json<AdminResult<()>>, ApiError> {
    let (ids, enabled) = super::batch_enabled(body)?;
    admin.enable_meta(&ids, enabled).await?;
    Ok(enable_success())
}
