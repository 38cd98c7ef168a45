//! Request and response shapes of the REST endpoints that `model` does not cover: plugin
//! writes, plugin handle definitions, metadata, app auth and the `list/search` pages. Field names are ShenYu's; unknown
//! fields (such as `namespaceId`) are accepted and ignored.

use model::PageParameter;
use serde::{Deserialize, Serialize};

/// Body of `PUT /plugin/{id}` (ShenYu `PluginDTO`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PluginDto {
    /// Must be the plugin's current name when given (gateways key plugins by name).
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) role: Option<String>,
    #[serde(default)]
    pub(crate) sort: Option<i32>,
    #[serde(default)]
    pub(crate) enabled: Option<bool>,
    /// Plugin config, a JSON object as a string.
    #[serde(default)]
    pub(crate) config: Option<String>,
}

/// Body of `POST /meta-data/createOrUpdate` (ShenYu `MetaDataDTO`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MetaDataDto {
    /// Present (and existing) to update; absent or blank to create.
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) app_name: Option<String>,
    #[serde(default)]
    pub(crate) context_path: Option<String>,
    #[serde(default)]
    pub(crate) path: Option<String>,
    #[serde(default)]
    pub(crate) path_desc: Option<String>,
    #[serde(default)]
    pub(crate) rpc_type: Option<String>,
    #[serde(default)]
    pub(crate) service_name: Option<String>,
    #[serde(default)]
    pub(crate) method_name: Option<String>,
    #[serde(default)]
    pub(crate) parameter_types: Option<String>,
    #[serde(default)]
    pub(crate) rpc_ext: Option<String>,
    #[serde(default)]
    pub(crate) rule_name: Option<String>,
    #[serde(default)]
    pub(crate) enabled: Option<bool>,
}

/// Metadata as the admin shows it (ShenYu `MetaDataVO`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MetaDataVo {
    pub(crate) id: String,
    pub(crate) app_name: Option<String>,
    pub(crate) context_path: Option<String>,
    pub(crate) path: String,
    pub(crate) path_desc: Option<String>,
    pub(crate) rpc_type: Option<String>,
    pub(crate) service_name: Option<String>,
    pub(crate) method_name: Option<String>,
    pub(crate) parameter_types: Option<String>,
    pub(crate) rpc_ext: Option<String>,
    pub(crate) rule_name: Option<String>,
    pub(crate) enabled: bool,
    pub(crate) namespace_id: String,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

/// Body of `POST /appAuth/apply` (ShenYu `AuthApplyDTO`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuthApplyDto {
    #[serde(default)]
    pub(crate) user_id: Option<String>,
    #[serde(default)]
    pub(crate) app_name: Option<String>,
    /// Generated when absent.
    #[serde(default)]
    pub(crate) app_key: Option<String>,
    #[serde(default)]
    pub(crate) phone: Option<String>,
    #[serde(default)]
    pub(crate) app_param: Option<String>,
    #[serde(default)]
    pub(crate) ext_info: Option<String>,
    #[serde(default)]
    pub(crate) open: Option<bool>,
    #[serde(default)]
    pub(crate) path_list: Option<Vec<String>>,
}

/// An app parameter in the app auth REST shapes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuthParamDto {
    #[serde(default)]
    pub(crate) app_name: Option<String>,
    #[serde(default)]
    pub(crate) app_param: Option<String>,
}

/// An app path in the app auth REST shapes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuthPathDto {
    #[serde(default)]
    pub(crate) app_name: Option<String>,
    #[serde(default)]
    pub(crate) path: Option<String>,
    #[serde(default)]
    pub(crate) enabled: Option<bool>,
}

/// Body of `POST /appAuth/updateDetail` (ShenYu `AppAuthDTO`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AppAuthDto {
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) app_key: Option<String>,
    #[serde(default)]
    pub(crate) app_secret: Option<String>,
    #[serde(default)]
    pub(crate) user_id: Option<String>,
    #[serde(default)]
    pub(crate) phone: Option<String>,
    #[serde(default)]
    pub(crate) ext_info: Option<String>,
    #[serde(default)]
    pub(crate) open: Option<bool>,
    #[serde(default)]
    pub(crate) enabled: Option<bool>,
    #[serde(default)]
    pub(crate) auth_param_list: Option<Vec<AuthParamDto>>,
    #[serde(default)]
    pub(crate) auth_path_list: Option<Vec<AuthPathDto>>,
}

/// An app auth entry as the admin shows it (ShenYu `AppAuthVO`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AppAuthVo {
    pub(crate) id: String,
    pub(crate) app_key: String,
    pub(crate) app_secret: String,
    pub(crate) user_id: Option<String>,
    pub(crate) phone: Option<String>,
    pub(crate) ext_info: Option<String>,
    pub(crate) open: bool,
    pub(crate) enabled: bool,
    pub(crate) auth_param_list: Vec<AuthParamDto>,
    pub(crate) auth_path_list: Vec<AuthPathDto>,
    pub(crate) namespace_id: String,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

/// Body of `POST /selector/list/search` and `POST /rule/list/search`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchRequest {
    #[serde(default)]
    pub(crate) page_num: Option<i64>,
    #[serde(default)]
    pub(crate) page_size: Option<i64>,
    #[serde(default)]
    pub(crate) condition: SearchCondition,
}

/// The `condition` of a search: a name keyword and the owning plugin or selector ids.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchCondition {
    #[serde(default)]
    pub(crate) keyword: Option<String>,
    /// Plugin ids (selector search).
    #[serde(default)]
    pub(crate) plugin: Option<Vec<String>>,
    /// Selector ids (rule search).
    #[serde(default)]
    pub(crate) selectors: Option<Vec<String>>,
}

/// PageHelper's `PageInfo`, as the `list/search` endpoints answer.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageInfo<T> {
    pub(crate) page_num: i64,
    pub(crate) page_size: i64,
    pub(crate) size: i64,
    pub(crate) start_row: i64,
    pub(crate) end_row: i64,
    pub(crate) total: i64,
    pub(crate) pages: i64,
    pub(crate) list: Vec<T>,
    pub(crate) pre_page: i64,
    pub(crate) next_page: i64,
    pub(crate) is_first_page: bool,
    pub(crate) is_last_page: bool,
    pub(crate) has_previous_page: bool,
    pub(crate) has_next_page: bool,
    pub(crate) navigate_pages: i64,
    pub(crate) navigatepage_nums: Vec<i64>,
    pub(crate) navigate_first_page: i64,
    pub(crate) navigate_last_page: i64,
}

/// PageHelper's default number of navigation page numbers.
const NAVIGATE_PAGES: i64 = 8;

impl<T> PageInfo<T> {
    /// Page `page_num` (1-based, `>= 1`) of `items` in pages of `page_size` (`>= 1`).
    pub(crate) fn new(page_num: i64, page_size: i64, items: Vec<T>) -> Self {
        let total = i64::try_from(items.len()).unwrap_or(i64::MAX);
        let page = PageParameter::new(page_num, page_size, total);
        let offset = usize::try_from(page.offset).unwrap_or(usize::MAX);
        let take = usize::try_from(page_size).unwrap_or(usize::MAX);
        let list: Vec<T> = items.into_iter().skip(offset).take(take).collect();
        let size = i64::try_from(list.len()).unwrap_or(i64::MAX);
        let pages = page.total_page;
        let (start_row, end_row) = if size == 0 {
            (0, 0)
        } else {
            (page.offset + 1, page.offset.saturating_add(size))
        };
        let first_nav =
            (page_num - NAVIGATE_PAGES / 2).clamp(1, (pages - NAVIGATE_PAGES + 1).max(1));
        let last_nav = (first_nav + NAVIGATE_PAGES - 1).min(pages);
        let navigatepage_nums: Vec<i64> = (first_nav..=last_nav).collect();
        Self {
            page_num,
            page_size,
            size,
            start_row,
            end_row,
            total,
            pages,
            list,
            pre_page: if page_num > 1 { page_num - 1 } else { 0 },
            next_page: if page_num < pages { page_num + 1 } else { 0 },
            is_first_page: page_num == 1,
            is_last_page: page_num >= pages,
            has_previous_page: page_num > 1,
            has_next_page: page_num < pages,
            navigate_pages: NAVIGATE_PAGES,
            navigate_first_page: navigatepage_nums.first().copied().unwrap_or(0),
            navigate_last_page: navigatepage_nums.last().copied().unwrap_or(0),
            navigatepage_nums,
        }
    }
}

/// Body of `POST /plugin-handle` and `PUT /plugin-handle/{id}` (ShenYu `PluginHandleDTO`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PluginHandleDto {
    /// The plugin whose handle has this field.
    #[serde(default)]
    pub(crate) plugin_id: Option<String>,
    /// The handle's JSON field name, e.g. `upstreamUrl`.
    #[serde(default)]
    pub(crate) field: Option<String>,
    /// What the dashboard shows.
    #[serde(default)]
    pub(crate) label: Option<String>,
    /// 1 number, 2 string, 3 select.
    #[serde(default)]
    pub(crate) data_type: Option<i32>,
    /// 1 selector handle, 2 rule handle, 3 plugin config.
    #[serde(default, rename = "type")]
    pub(crate) handle_type: Option<i32>,
    /// Position in the form.
    #[serde(default)]
    pub(crate) sort: Option<i32>,
    /// Extra settings, a JSON object as a string.
    #[serde(default)]
    pub(crate) ext_obj: Option<String>,
}

/// A plugin handle field definition as the admin shows it (ShenYu `PluginHandleVO`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PluginHandleVo {
    pub(crate) id: String,
    pub(crate) plugin_id: String,
    pub(crate) field: String,
    pub(crate) label: String,
    pub(crate) data_type: i32,
    #[serde(rename = "type")]
    pub(crate) handle_type: i32,
    pub(crate) sort: i32,
    pub(crate) ext_obj: Option<String>,
    pub(crate) date_created: String,
    pub(crate) date_updated: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_page_numbers_and_sizes_give_an_empty_page() {
        let page = PageInfo::new(i64::MAX, i64::MAX, vec![1, 2, 3]);
        assert!(page.list.is_empty());
        assert_eq!((page.start_row, page.end_row, page.pages), (0, 0, 1));
        let page = PageInfo::new(1, i64::MAX, vec![1, 2, 3]);
        assert_eq!(page.list, vec![1, 2, 3]);
        assert_eq!((page.start_row, page.end_row), (1, 3));
    }

    #[test]
    fn page_info_counts_like_pagehelper() {
        let page = PageInfo::new(2, 2, vec![1, 2, 3, 4, 5]);
        assert_eq!(page.list, vec![3, 4]);
        assert_eq!((page.total, page.pages, page.size), (5, 3, 2));
        assert_eq!((page.start_row, page.end_row), (3, 4));
        assert_eq!((page.pre_page, page.next_page), (1, 3));
        assert!(page.has_previous_page && page.has_next_page);
        assert_eq!(page.navigatepage_nums, vec![1, 2, 3]);
        let empty = PageInfo::<i32>::new(1, 10, vec![]);
        assert_eq!((empty.total, empty.pages, empty.size), (0, 0, 0));
        assert!(empty.is_first_page && empty.is_last_page && !empty.has_next_page);
        assert!(empty.navigatepage_nums.is_empty());
    }
}
