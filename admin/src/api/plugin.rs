//! `/plugin` ([`Plugins`]): list, all, detail, batch delete and enable through the generic
//! handlers of [`resource`](super::resource); its own create and update take JSON or
//! ShenYu's form fields (`@ModelAttribute`: urlencoded or multipart).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use model::{AdminResult, PluginVo};
use serde::Deserialize;

use super::extract::{AdminForm, query_param};
use super::resource::{Enable, ListQuery, Resource};
use super::{Paging, name_matches};
use crate::dto::PluginDto;
use crate::error::{ApiError, ok};
use crate::service::{Admin, ServiceError};
use crate::store::{PluginRecord, StoreError};

/// `/plugin`, as the generic handlers serve it (a marker type).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plugins;

impl Resource for Plugins {
    const NOUN: &'static str = "plugin";
    type Record = PluginRecord;
    type Vo = PluginVo;
    /// A JSON array of ids.
    type DeleteBody = Vec<String>;

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

    async fn find(admin: &Admin, id: &str) -> Result<Option<PluginRecord>, StoreError> {
        admin.store().plugin(id).await
    }

    async fn all(admin: &Admin) -> Result<Vec<PluginRecord>, StoreError> {
        admin.store().plugins().await
    }

    /// Each plugin goes with its selectors and rules, all or none.
    async fn delete(admin: &Admin, ids: &[String]) -> Result<usize, ServiceError> {
        admin.delete_plugins(ids).await
    }
}

impl Enable for Plugins {
    async fn enable(admin: &Admin, ids: &[String], enabled: bool) -> Result<(), ServiceError> {
        admin.enable_plugins(ids, enabled).await
    }
}

/// Query of `GET /plugin`: name (substring) and enabled.
#[derive(Debug, Deserialize)]
pub(crate) struct PluginQuery {
    name: Option<String>,
    enabled: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

impl ListQuery<Plugins> for PluginQuery {
    fn paging(&self) -> &Paging {
        &self.paging
    }

    fn filter(&self) -> Result<impl Fn(&PluginRecord) -> bool + Send, ApiError> {
        let enabled = query_param::<bool>("enabled", self.enabled.as_deref())?;
        Ok(move |p: &PluginRecord| {
            name_matches(self.name.as_deref(), &p.name) && enabled.is_none_or(|e| p.enabled == e)
        })
    }
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
