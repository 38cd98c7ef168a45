//! `/rule` ([`Rules`]): create, update, detail, paged list, `list/search` (by owning selector
//! ids), batch delete and batch enable, all through the generic handlers of
//! [`resource`](super::resource).

use model::{BatchIds, DEFAULT_NAMESPACE_ID, MatchMode, RuleDto, RuleVo};
use serde::Deserialize;

use super::resource::{Enable, ListQuery, Resource, Search, Write};
use super::{Paging, condition_vo, name_matches};
use crate::dto::SearchCondition;
use crate::error::ApiError;
use crate::service::{Admin, ServiceError};
use crate::store::{RuleRecord, StoreError};

/// `/rule`, as the generic handlers serve it (a marker type).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules;

impl Resource for Rules {
    const NOUN: &'static str = "rule";
    type Record = RuleRecord;
    type Vo = RuleVo;
    type DeleteBody = BatchIds;

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

    async fn find(admin: &Admin, id: &str) -> Result<Option<RuleRecord>, StoreError> {
        admin.store().rule(id).await
    }

    async fn all(admin: &Admin) -> Result<Vec<RuleRecord>, StoreError> {
        admin.store().rules().await
    }

    async fn owned_by(admin: &Admin, owner: &str) -> Result<Option<Vec<RuleRecord>>, StoreError> {
        admin.store().selector_rules(owner).await.map(Some)
    }

    async fn delete(admin: &Admin, ids: &[String]) -> Result<usize, ServiceError> {
        admin.delete_rules(ids).await
    }
}

impl Write for Rules {
    type Dto = RuleDto;
    /// A count, as ShenYu answers.
    type Created = i32;

    async fn create(admin: &Admin, dto: RuleDto) -> Result<i32, ServiceError> {
        admin.create_rule(dto).await?;
        Ok(1)
    }

    async fn update(admin: &Admin, id: &str, dto: RuleDto) -> Result<(), ServiceError> {
        admin.update_rule(id, dto).await
    }
}

impl Enable for Rules {
    async fn enable(admin: &Admin, ids: &[String], enabled: bool) -> Result<(), ServiceError> {
        admin.enable_rules(ids, enabled).await
    }
}

impl Search for Rules {
    fn owners(condition: &SearchCondition) -> Option<&[String]> {
        condition.selectors.as_deref()
    }

    fn owner(record: &RuleRecord) -> &str {
        &record.selector_id
    }

    fn name(record: &RuleRecord) -> &str {
        &record.name
    }
}

/// Query of `GET /rule`: selector id (exact) and name (substring).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RuleQuery {
    selector_id: Option<String>,
    name: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

impl ListQuery<Rules> for RuleQuery {
    fn paging(&self) -> &Paging {
        &self.paging
    }

    fn filter(&self) -> Result<impl Fn(&RuleRecord) -> bool + Send, ApiError> {
        let selector_id = self.owner();
        Ok(move |r: &RuleRecord| {
            selector_id.is_none_or(|s| r.selector_id == s)
                && name_matches(self.name.as_deref(), &r.name)
        })
    }

    fn owner(&self) -> Option<&str> {
        self.selector_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }
}
