//! The admin REST API's shapes: the [`AdminResult`] envelope, paging, login, and the selector
//! and rule DTOs (requests) and VOs (responses). The admin serves them; the harness sends and
//! reads them.

use serde::{Deserialize, Serialize};

/// ShenYu admin result codes (`CommonErrorCode`).
pub mod admin_code {
    /// Success.
    pub const SUCCESS: i32 = 200;
    /// Bad input or a failed operation.
    pub const ERROR: i32 = 500;
    /// Missing or invalid token.
    pub const TOKEN_ERROR: i32 = 600;
    /// No permission.
    pub const NO_PERMISSION: i32 = 601;
    /// Not found.
    pub const NOT_FOUND: i32 = 404;
}

/// The admin's response envelope, `{code, message, data}` (ShenYu `ShenyuAdminResult`).
/// Like Jackson, it writes `data: null` when there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdminResult<T> {
    /// One of [`admin_code`].
    pub code: i32,
    /// A human message, e.g. `create success`.
    pub message: String,
    /// The payload.
    pub data: Option<T>,
}

impl<T> AdminResult<T> {
    /// A success envelope.
    pub fn success(message: impl Into<String>, data: T) -> Self {
        Self {
            code: admin_code::SUCCESS,
            message: message.into(),
            data: Some(data),
        }
    }

    /// An error envelope with no data.
    pub fn error(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// Body of `POST /platform/login`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LoginRequest {
    /// User name.
    pub user_name: String,
    /// Password.
    pub password: String,
}

/// `data` of a successful login.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LoginResponse {
    /// User id.
    pub id: String,
    /// User name.
    pub user_name: String,
    /// Role (1 = admin).
    pub role: i32,
    /// Whether the user is enabled.
    pub enabled: bool,
    /// Token for `X-Access-Token`.
    pub token: String,
    /// Token lifetime in **milliseconds**, always a JSON integer.
    pub expired_time: i64,
}

/// A page description in [`CommonPager`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PageParameter {
    /// 1-based page number.
    pub current_page: i64,
    /// Previous page.
    pub pre_page: i64,
    /// Next page.
    pub next_page: i64,
    /// Page size.
    pub page_size: i64,
    /// Offset of the first item.
    pub offset: i64,
    /// Number of pages.
    pub total_page: i64,
    /// Number of items.
    pub total_count: i64,
}

impl PageParameter {
    /// The page `current_page` (1-based) of `total_count` items in pages of `page_size`.
    /// Arithmetic saturates: a page far beyond the last has offset `i64::MAX` (and no items).
    pub fn new(current_page: i64, page_size: i64, total_count: i64) -> Self {
        let page_size = page_size.max(1);
        let current_page = current_page.max(1);
        let total_page = match total_count {
            ..=0 => 0,
            n => (n - 1) / page_size + 1,
        };
        Self {
            current_page,
            pre_page: (current_page - 1).max(1),
            next_page: if current_page < total_page {
                current_page + 1
            } else {
                current_page
            },
            page_size,
            offset: (current_page - 1).saturating_mul(page_size),
            total_page,
            total_count,
        }
    }
}

/// A paged list (ShenYu `CommonPager`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CommonPager<T> {
    /// The page.
    pub page: PageParameter,
    /// The items of the page.
    pub data_list: Vec<T>,
}

/// A condition in the admin's REST shapes (`selectorConditions` / `ruleConditions`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ConditionDto {
    /// Condition id (responses only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Parameter type.
    #[serde(default)]
    pub param_type: Option<String>,
    /// Operator alias.
    #[serde(default)]
    pub operator: Option<String>,
    /// Parameter name.
    #[serde(default)]
    pub param_name: Option<String>,
    /// Parameter value.
    #[serde(default)]
    pub param_value: Option<String>,
    /// Display name of the param type (responses only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param_type_name: Option<String>,
    /// Display name of the operator (responses only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_name: Option<String>,
}

impl ConditionDto {
    /// A request condition from its four parts.
    pub fn new(param_type: &str, operator: &str, param_name: &str, param_value: &str) -> Self {
        Self {
            param_type: Some(param_type.to_owned()),
            operator: Some(operator.to_owned()),
            param_name: Some(param_name.to_owned()),
            param_value: Some(param_value.to_owned()),
            ..Default::default()
        }
    }
}

/// Body of `POST /selector` and `PUT /selector/{id}` (ShenYu `SelectorDTO`). Fields are
/// optional here so that the admin can name the one that is missing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SelectorDto {
    /// Id (ignored on create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Owning plugin id, e.g. `"5"`.
    #[serde(default)]
    pub plugin_id: Option<String>,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// `0` full flow, `1` custom.
    #[serde(default, rename = "type")]
    pub selector_type: Option<i32>,
    /// `0` and, `1` or.
    #[serde(default)]
    pub match_mode: Option<i32>,
    /// Ordering key.
    #[serde(default)]
    pub sort: Option<i32>,
    /// Enabled.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Log matches.
    #[serde(default)]
    pub loged: Option<bool>,
    /// Evaluate rules.
    #[serde(default)]
    pub continued: Option<bool>,
    /// ShenYu match-cache flag.
    #[serde(default)]
    pub match_restful: Option<bool>,
    /// Plugin handle JSON string.
    #[serde(default)]
    pub handle: Option<String>,
    /// Conditions.
    #[serde(default)]
    pub selector_conditions: Option<Vec<ConditionDto>>,
    /// Namespace id: accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_id: Option<String>,
}

/// Body of `POST /rule` and `PUT /rule/{id}` (ShenYu `RuleDTO`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RuleDto {
    /// Id (ignored on create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Owning selector id.
    #[serde(default)]
    pub selector_id: Option<String>,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// `0` and, `1` or.
    #[serde(default)]
    pub match_mode: Option<i32>,
    /// Ordering key.
    #[serde(default)]
    pub sort: Option<i32>,
    /// Enabled.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Log matches.
    #[serde(default)]
    pub loged: Option<bool>,
    /// ShenYu match-cache flag.
    #[serde(default)]
    pub match_restful: Option<bool>,
    /// Plugin rule handle JSON string.
    #[serde(default)]
    pub handle: Option<String>,
    /// Conditions (ShenYu requires at least one).
    #[serde(default)]
    pub rule_conditions: Option<Vec<ConditionDto>>,
    /// Namespace id: accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_id: Option<String>,
}

/// A selector as the admin shows it (ShenYu `SelectorVO`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SelectorVo {
    /// Id.
    pub id: String,
    /// Owning plugin id.
    pub plugin_id: String,
    /// Display name.
    pub name: String,
    /// `0` and, `1` or.
    pub match_mode: i32,
    /// `and` / `or`.
    pub match_mode_name: String,
    /// `0` full flow, `1` custom.
    #[serde(rename = "type")]
    pub selector_type: i32,
    /// `full` / `custom`.
    pub type_name: String,
    /// Ordering key.
    pub sort: i32,
    /// Enabled.
    pub enabled: bool,
    /// Log matches.
    pub loged: bool,
    /// Evaluate rules.
    pub continued: bool,
    /// ShenYu match-cache flag.
    pub match_restful: bool,
    /// Plugin handle JSON string.
    pub handle: Option<String>,
    /// Conditions.
    pub selector_conditions: Vec<ConditionDto>,
    /// Namespace id.
    pub namespace_id: String,
    /// Creation time, `yyyy-MM-dd HH:mm:ss`.
    pub date_created: String,
    /// Last update time, `yyyy-MM-dd HH:mm:ss`.
    pub date_updated: String,
}

/// A rule as the admin shows it (ShenYu `RuleVO`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RuleVo {
    /// Id.
    pub id: String,
    /// Owning selector id.
    pub selector_id: String,
    /// Display name.
    pub name: String,
    /// `0` and, `1` or.
    pub match_mode: i32,
    /// `and` / `or`.
    pub match_mode_name: String,
    /// Ordering key.
    pub sort: i32,
    /// Enabled.
    pub enabled: bool,
    /// Log matches.
    pub loged: bool,
    /// ShenYu match-cache flag.
    pub match_restful: bool,
    /// Plugin rule handle JSON string.
    pub handle: Option<String>,
    /// Conditions.
    pub rule_conditions: Vec<ConditionDto>,
    /// Namespace id.
    pub namespace_id: String,
    /// Creation time, `yyyy-MM-dd HH:mm:ss`.
    pub date_created: String,
    /// Last update time, `yyyy-MM-dd HH:mm:ss`.
    pub date_updated: String,
}

/// A plugin as the admin shows it (ShenYu `PluginVO`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PluginVo {
    /// Id, e.g. `"5"`.
    pub id: String,
    /// Name.
    pub name: String,
    /// Role.
    pub role: String,
    /// Chain order.
    pub sort: i32,
    /// Enabled.
    pub enabled: bool,
    /// Config JSON string.
    pub config: Option<String>,
    /// Creation time.
    pub date_created: String,
    /// Last update time.
    pub date_updated: String,
}

/// Body of the batch deletes (`DELETE /selector/batch`, `DELETE /rule/batch`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BatchIds {
    /// Ids.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Namespace id: accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_id: Option<String>,
}

/// Body of the batch enables (`POST /plugin/enabled`, `POST /selector/batchEnabled`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BatchEnabled {
    /// Ids.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// New state.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Namespace id: accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_count_like_shenyu() {
        let page = PageParameter::new(2, 5, 12);
        assert_eq!((page.offset, page.total_page), (5, 3));
        assert_eq!((page.pre_page, page.next_page), (1, 3));
        assert_eq!(PageParameter::new(1, 12, 0).total_page, 0);
    }

    #[test]
    fn huge_pages_saturate_instead_of_overflowing() {
        let page = PageParameter::new(i64::MAX, i64::MAX, 5);
        assert_eq!((page.offset, page.total_page), (i64::MAX, 1));
        assert_eq!(page.next_page, i64::MAX);
        let page = PageParameter::new(3, i64::MAX, i64::MAX);
        assert_eq!((page.offset, page.total_page), (i64::MAX, 1));
    }
}
