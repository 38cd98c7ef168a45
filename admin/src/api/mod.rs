//! The REST API: one module per resource, the extractors handlers take their input through
//! ([`extract`]), the route table ([`routes`]) and helpers the resources share (paging,
//! batch requests, list filters).

pub(crate) mod actuator;
pub(crate) mod app_auth;
pub(crate) mod extract;
pub(crate) mod meta;
pub(crate) mod plugin;
pub(crate) mod plugin_handle;
pub(crate) mod register;
pub(crate) mod rule;
pub(crate) mod selector;

use axum::routing::{delete, get, post};
use axum::{Json, Router, middleware};
use model::{AdminResult, BatchEnabled, CommonPager, ConditionData, ConditionDto, PageParameter};
use serde::Deserialize;

use self::extract::query_param;
use crate::AppState;
use crate::dto::{PageInfo, SearchRequest};
use crate::error::ApiError;

/// The route table: the REST API (behind the token check), login, actuator, the OpenAPI
/// document and the enabled sync publishers' endpoints; unknown paths answer 404 and known
/// paths with the wrong method 405, in ShenYu's envelope.
pub(crate) fn routes(state: AppState) -> Router {
    let protected = Router::new()
        .route("/plugin", get(plugin::list).post(plugin::create))
        .route("/plugin/all", get(plugin::all))
        .route("/plugin/enabled", post(plugin::enabled))
        .route("/plugin/batch", delete(plugin::delete_batch))
        .route("/plugin/{id}", get(plugin::detail).put(plugin::update))
        .route(
            "/plugin-handle",
            get(plugin_handle::list).post(plugin_handle::create),
        )
        .route(
            "/plugin-handle/all/{pluginId}/{type}",
            get(plugin_handle::all),
        )
        .route("/plugin-handle/batch", delete(plugin_handle::delete_batch))
        .route(
            "/plugin-handle/{id}",
            get(plugin_handle::detail).put(plugin_handle::update),
        )
        .route("/selector", get(selector::list).post(selector::create))
        .route("/selector/batch", delete(selector::delete_batch))
        .route("/selector/list/search", post(selector::search))
        .route("/selector/batchEnabled", post(selector::batch_enabled))
        .route(
            "/selector/{id}",
            get(selector::detail).put(selector::update),
        )
        .route("/rule", get(rule::list).post(rule::create))
        .route("/rule/batch", delete(rule::delete_batch))
        .route("/rule/list/search", post(rule::search))
        .route("/rule/batchEnabled", post(rule::batch_enabled))
        .route("/meta-data/queryList", get(meta::query_list))
        .route("/meta-data/findAll", get(meta::find_all))
        .route("/meta-data/createOrUpdate", post(meta::create_or_update))
        .route("/meta-data/batchDeleted", delete(meta::batch_deleted))
        .route("/meta-data/batchEnabled", post(meta::batch_enabled))
        .route("/meta-data/{id}", get(meta::detail))
        .route("/appAuth/apply", post(app_auth::apply))
        .route("/appAuth/findPageByQuery", get(app_auth::find_page))
        .route("/appAuth/detail", get(app_auth::detail))
        .route("/appAuth/updateDetail", post(app_auth::update_detail))
        .route("/appAuth/batchDelete", post(app_auth::batch_delete))
        .route("/appAuth/batchEnabled", post(app_auth::batch_enabled))
        .route(
            "/shenyu-client/register-metadata",
            post(register::register_metadata),
        )
        .route("/shenyu-client/register-uri", post(register::register_uri))
        .route("/shenyu-client/offline", post(register::offline))
        .route("/rule/{id}", get(rule::detail).put(rule::update))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            crate::auth::require_token,
        ));
    let mut router = Router::new()
        .merge(protected)
        .route("/platform/login", post(crate::auth::login))
        .route("/actuator/health", get(actuator::health))
        .route("/actuator/digest", get(actuator::digest))
        .route("/v3/api-docs", get(crate::openapi::api_docs));
    for publisher in state.publishers.iter() {
        tracing::debug!(mode = %publisher.mode(), "sync publisher enabled");
        router = router.merge(publisher.routes());
    }
    router
        .fallback(|| async { ApiError::NotFound("no such endpoint".to_owned()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .with_state(state)
}

/// ShenYu's default page size.
const DEFAULT_PAGE_SIZE: i64 = 12;

/// The paging part of a list query.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Paging {
    current_page: Option<String>,
    page_size: Option<String>,
}

impl Paging {
    /// The requested page of `items`.
    pub(crate) fn page<T>(&self, items: Vec<T>) -> Result<CommonPager<T>, ApiError> {
        let current_page =
            query_param::<i64>("currentPage", self.current_page.as_deref())?.unwrap_or(1);
        let page_size =
            query_param::<i64>("pageSize", self.page_size.as_deref())?.unwrap_or(DEFAULT_PAGE_SIZE);
        if current_page < 1 {
            return Err(ApiError::field("currentPage", "must be >= 1"));
        }
        if page_size < 1 {
            return Err(ApiError::field("pageSize", "must be >= 1"));
        }
        let total = i64::try_from(items.len()).unwrap_or(i64::MAX);
        let page = PageParameter::new(current_page, page_size, total);
        let offset = usize::try_from(page.offset).unwrap_or(usize::MAX);
        let size = usize::try_from(page.page_size).unwrap_or(usize::MAX);
        let data_list = items.into_iter().skip(offset).take(size).collect();
        Ok(CommonPager { page, data_list })
    }
}

/// Whether `name` matches a list filter (absent or empty matches everything).
pub(crate) fn name_matches(filter: Option<&str>, name: &str) -> bool {
    filter
        .map(str::trim)
        .is_none_or(|f| f.is_empty() || name.contains(f))
}

/// A stored condition as the admin shows it.
pub(crate) fn condition_vo(c: &ConditionData) -> ConditionDto {
    ConditionDto {
        param_type_name: Some(c.param_type.clone()),
        operator_name: Some(c.operator.clone()),
        ..ConditionDto::new(&c.param_type, &c.operator, &c.param_name, &c.param_value)
    }
}

/// The ids of a batch request.
pub(crate) fn batch_ids(ids: Option<Vec<String>>) -> Result<Vec<String>, ApiError> {
    match ids {
        Some(ids) if !ids.is_empty() => Ok(ids),
        _ => Err(ApiError::field("ids", "must not be empty")),
    }
}

/// The ids and new state of a batch enable request.
pub(crate) fn batch_enabled(body: BatchEnabled) -> Result<(Vec<String>, bool), ApiError> {
    let ids = batch_ids(body.ids)?;
    let enabled = body
        .enabled
        .ok_or_else(|| ApiError::field("enabled", "must not be null"))?;
    Ok((ids, enabled))
}

/// The answer of every batch enable: `data: null`, `enable success`.
pub(crate) fn enable_success() -> Json<AdminResult<()>> {
    Json(AdminResult {
        data: None,
        ..AdminResult::success("enable success", ())
    })
}

/// The requested `PageInfo` page of `items` for a `list/search` request.
pub(crate) fn search_page<T>(
    request: &SearchRequest,
    items: Vec<T>,
) -> Result<PageInfo<T>, ApiError> {
    let page_num = request.page_num.unwrap_or(1);
    let page_size = request.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if page_num < 1 {
        return Err(ApiError::field("pageNum", "must be >= 1"));
    }
    if page_size < 1 {
        return Err(ApiError::field("pageSize", "must be >= 1"));
    }
    Ok(PageInfo::new(page_num, page_size, items))
}

/// Whether `id` is in an id filter (absent or empty matches everything).
pub(crate) fn id_in(filter: Option<&[String]>, id: &str) -> bool {
    filter.is_none_or(|ids| ids.is_empty() || ids.iter().any(|i| i.trim() == id))
}
