//! Database rows shared by the SQL backends, and their conversion into records (the JSON
//! list columns are parsed here).

use super::{AppAuthRecord, RuleRecord, SelectorRecord, StoreError, parse_list};

#[derive(sqlx::FromRow)]
pub(super) struct SelectorRow {
    pub(super) id: String,
    pub(super) plugin_id: String,
    pub(super) name: String,
    pub(super) selector_type: i32,
    pub(super) match_mode: i32,
    pub(super) sort: i32,
    pub(super) enabled: bool,
    pub(super) loged: bool,
    pub(super) continued: bool,
    pub(super) match_restful: bool,
    pub(super) handle: Option<String>,
    pub(super) conditions: String,
    pub(super) date_created: String,
    pub(super) date_updated: String,
}

impl TryFrom<SelectorRow> for SelectorRecord {
    type Error = StoreError;

    fn try_from(row: SelectorRow) -> Result<Self, StoreError> {
        let conditions = parse_list("selector", &row.id, &row.conditions)?;
        Ok(SelectorRecord {
            id: row.id,
            plugin_id: row.plugin_id,
            name: row.name,
            selector_type: row.selector_type,
            match_mode: row.match_mode,
            sort: row.sort,
            enabled: row.enabled,
            loged: row.loged,
            continued: row.continued,
            match_restful: row.match_restful,
            handle: row.handle,
            conditions,
            date_created: row.date_created,
            date_updated: row.date_updated,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct RuleRow {
    pub(super) id: String,
    pub(super) selector_id: String,
    pub(super) name: String,
    pub(super) match_mode: i32,
    pub(super) sort: i32,
    pub(super) enabled: bool,
    pub(super) loged: bool,
    pub(super) match_restful: bool,
    pub(super) handle: Option<String>,
    pub(super) conditions: String,
    pub(super) date_created: String,
    pub(super) date_updated: String,
}

impl TryFrom<RuleRow> for RuleRecord {
    type Error = StoreError;

    fn try_from(row: RuleRow) -> Result<Self, StoreError> {
        let conditions = parse_list("rule", &row.id, &row.conditions)?;
        Ok(RuleRecord {
            id: row.id,
            selector_id: row.selector_id,
            name: row.name,
            match_mode: row.match_mode,
            sort: row.sort,
            enabled: row.enabled,
            loged: row.loged,
            match_restful: row.match_restful,
            handle: row.handle,
            conditions,
            date_created: row.date_created,
            date_updated: row.date_updated,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct AppAuthRow {
    pub(super) id: String,
    pub(super) app_key: String,
    pub(super) app_secret: String,
    pub(super) user_id: Option<String>,
    pub(super) phone: Option<String>,
    pub(super) ext_info: Option<String>,
    pub(super) open: bool,
    pub(super) enabled: bool,
    pub(super) params: String,
    pub(super) paths: String,
    pub(super) date_created: String,
    pub(super) date_updated: String,
}

impl TryFrom<AppAuthRow> for AppAuthRecord {
    type Error = StoreError;

    fn try_from(row: AppAuthRow) -> Result<Self, StoreError> {
        Ok(AppAuthRecord {
            params: parse_list("app auth", &row.id, &row.params)?,
            paths: parse_list("app auth", &row.id, &row.paths)?,
            id: row.id,
            app_key: row.app_key,
            app_secret: row.app_secret,
            user_id: row.user_id,
            phone: row.phone,
            ext_info: row.ext_info,
            open: row.open,
            enabled: row.enabled,
            date_created: row.date_created,
            date_updated: row.date_updated,
        })
    }
}

pub(super) fn rows<R, T>(rows: Vec<R>) -> Result<Vec<T>, StoreError>
where
    T: TryFrom<R, Error = StoreError>,
{
    rows.into_iter().map(T::try_from).collect()
}
