//! `/selector` ([`Selectors`]): create, update, detail, paged list, `list/search` (by owning
//! plugin ids), batch delete (with the selectors' rules) and batch enable, all through the
//! generic handlers of [`resource`](super::resource).

use model::{BatchIds, DEFAULT_NAMESPACE_ID, MatchMode, SelectorDto, SelectorType, SelectorVo};
use serde::Deserialize;

use super::resource::{Enable, ListQuery, Resource, Search, Write};
use super::{Paging, condition_vo, name_matches};
use crate::dto::SearchCondition;
use crate::error::ApiError;
use crate::service::{Admin, ServiceError};
use crate::store::{SelectorRecord, StoreError};

/// `/selector`, as the generic handlers serve it (a marker type).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Selectors;

impl Resource for Selectors {
    const NOUN: &'static str = "selector";
    type Record = SelectorRecord;
    type Vo = SelectorVo;
    type DeleteBody = BatchIds;

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

    async fn find(admin: &Admin, id: &str) -> Result<Option<SelectorRecord>, StoreError> {
        admin.store().selector(id).await
    }

    async fn all(admin: &Admin) -> Result<Vec<SelectorRecord>, StoreError> {
        admin.store().selectors().await
    }

    /// The selectors' rules go too.
    async fn delete(admin: &Admin, ids: &[String]) -> Result<usize, ServiceError> {
        admin.delete_selectors(ids).await
    }
}

impl Write for Selectors {
    type Dto = SelectorDto;
    /// The new selector's id.
    type Created = String;

    async fn create(admin: &Admin, dto: SelectorDto) -> Result<String, ServiceError> {
        admin.create_selector(dto).await
    }

    async fn update(admin: &Admin, id: &str, dto: SelectorDto) -> Result<(), ServiceError> {
        admin.update_selector(id, dto).await
    }
}

impl Enable for Selectors {
    async fn enable(admin: &Admin, ids: &[String], enabled: bool) -> Result<(), ServiceError> {
        admin.enable_selectors(ids, enabled).await
    }
}

impl Search for Selectors {
    fn owners(condition: &SearchCondition) -> Option<&[String]> {
        condition.plugin.as_deref()
    }

    fn owner(record: &SelectorRecord) -> &str {
        &record.plugin_id
    }

    fn name(record: &SelectorRecord) -> &str {
        &record.name
    }
}

/// Query of `GET /selector`: plugin id (exact) and name (substring).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SelectorQuery {
    plugin_id: Option<String>,
    name: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

impl ListQuery<Selectors> for SelectorQuery {
    fn paging(&self) -> &Paging {
        &self.paging
    }

    fn filter(&self) -> Result<impl Fn(&SelectorRecord) -> bool + Send, ApiError> {
        let plugin_id = self
            .plugin_id
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty());
        Ok(move |s: &SelectorRecord| {
            plugin_id.is_none_or(|p| s.plugin_id == p)
                && name_matches(self.name.as_deref(), &s.name)
        })
    }
}
