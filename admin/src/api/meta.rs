//! `/meta-data` ([`Meta`]): paged query, find all, detail, batch delete and enable through
//! the generic handlers of [`resource`](super::resource), and its own create or update.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use model::{AdminResult, BatchIds, DEFAULT_NAMESPACE_ID};
use serde::Deserialize;

use super::extract::AdminJson;
use super::resource::{Enable, ListQuery, Resource};
use super::{Paging, name_matches};
use crate::dto::{MetaDataDto, MetaDataVo};
use crate::error::{ApiError, ok};
use crate::service::{Admin, ServiceError};
use crate::store::{MetaRecord, StoreError};

/// `/meta-data`, as the generic handlers serve it (a marker type).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta;

impl Resource for Meta {
    const NOUN: &'static str = "metadata";
    type Record = MetaRecord;
    type Vo = MetaDataVo;
    type DeleteBody = BatchIds;

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

    async fn find(admin: &Admin, id: &str) -> Result<Option<MetaRecord>, StoreError> {
        admin.store().meta(id).await
    }

    async fn all(admin: &Admin) -> Result<Vec<MetaRecord>, StoreError> {
        admin.store().meta_data().await
    }

    async fn delete(admin: &Admin, ids: &[String]) -> Result<usize, ServiceError> {
        admin.delete_meta(ids).await
    }
}

impl Enable for Meta {
    async fn enable(admin: &Admin, ids: &[String], enabled: bool) -> Result<(), ServiceError> {
        admin.enable_meta(ids, enabled).await
    }
}

/// Query of `GET /meta-data/queryList`: a `path` substring.
#[derive(Debug, Deserialize)]
pub(crate) struct MetaQuery {
    path: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

impl ListQuery<Meta> for MetaQuery {
    fn paging(&self) -> &Paging {
        &self.paging
    }

    fn filter(&self) -> Result<impl Fn(&MetaRecord) -> bool + Send, ApiError> {
        Ok(|m: &MetaRecord| name_matches(self.path.as_deref(), &m.path))
    }
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
