//! The REST API: one module per resource (its [`resource::Resource`] impl and the handlers
//! of its own), the generic CRUD handlers they share ([`resource`]), the extractors handlers
//! take their input through ([`extract`]), the route table ([`routes`]) and helpers the
//! resources share (paging, list filters, conditions).

pub(crate) mod actuator;
pub(crate) mod app_auth;
pub(crate) mod extract;
pub(crate) mod meta;
pub(crate) mod plugin;
pub(crate) mod plugin_handle;
pub(crate) mod register;
pub(crate) mod resource;
pub(crate) mod rule;
pub(crate) mod selector;
pub(crate) mod sync_status;

use axum::routing::{delete, get, post};
use axum::{Router, middleware};
use model::{CommonPager, ConditionData, ConditionDto, PageParameter};
use serde::Deserialize;

use self::app_auth::{AppAuthQuery, AppAuths};
use self::extract::query_param;
use self::meta::{Meta, MetaQuery};
use self::plugin::{PluginQuery, Plugins};
use self::plugin_handle::{PluginHandleQuery, PluginHandles};
use self::resource::{all, batch_enabled, create, delete_batch, detail, list, search, update};
use self::rule::{RuleQuery, Rules};
use self::selector::{SelectorQuery, Selectors};
use crate::AppState;
use crate::error::ApiError;

/// The route table: the REST API (behind the token check), login, actuator, the OpenAPI
/// document and the enabled sync publishers' endpoints; unknown paths answer 404 and known
/// paths with the wrong method 405, in ShenYu's envelope.
pub(crate) fn routes(state: AppState) -> Router {
    let protected = Router::new()
        .route(
            "/plugin",
            get(list::<Plugins, PluginQuery>).post(plugin::create),
        )
        .route("/plugin/all", get(all::<Plugins>))
        .route("/plugin/enabled", post(batch_enabled::<Plugins>))
        .route("/plugin/batch", delete(delete_batch::<Plugins>))
        .route("/plugin/{id}", get(detail::<Plugins>).put(plugin::update))
        .route(
            "/plugin-handle",
            get(list::<PluginHandles, PluginHandleQuery>).post(create::<PluginHandles>),
        )
        .route(
            "/plugin-handle/all/{pluginId}/{type}",
            get(plugin_handle::all),
        )
        .route(
            "/plugin-handle/batch",
            delete(delete_batch::<PluginHandles>),
        )
        .route(
            "/plugin-handle/{id}",
            get(detail::<PluginHandles>).put(update::<PluginHandles>),
        )
        .route(
            "/selector",
            get(list::<Selectors, SelectorQuery>).post(create::<Selectors>),
        )
        .route("/selector/batch", delete(delete_batch::<Selectors>))
        .route("/selector/list/search", post(search::<Selectors>))
        .route("/selector/batchEnabled", post(batch_enabled::<Selectors>))
        .route(
            "/selector/{id}",
            get(detail::<Selectors>).put(update::<Selectors>),
        )
        .route("/rule", get(list::<Rules, RuleQuery>).post(create::<Rules>))
        .route("/rule/batch", delete(delete_batch::<Rules>))
        .route("/rule/list/search", post(search::<Rules>))
        .route("/rule/batchEnabled", post(batch_enabled::<Rules>))
        .route("/meta-data/queryList", get(list::<Meta, MetaQuery>))
        .route("/meta-data/findAll", get(all::<Meta>))
        .route("/meta-data/createOrUpdate", post(meta::create_or_update))
        .route("/meta-data/batchDeleted", delete(delete_batch::<Meta>))
        .route("/meta-data/batchEnabled", post(batch_enabled::<Meta>))
        .route("/meta-data/{id}", get(detail::<Meta>))
        .route("/appAuth/apply", post(app_auth::apply))
        .route(
            "/appAuth/findPageByQuery",
            get(list::<AppAuths, AppAuthQuery>),
        )
        .route("/appAuth/detail", get(app_auth::detail))
        .route("/appAuth/updateDetail", post(app_auth::update_detail))
        .route("/appAuth/batchDelete", post(delete_batch::<AppAuths>))
        .route("/appAuth/batchEnabled", post(batch_enabled::<AppAuths>))
        .route(
            "/shenyu-client/register-metadata",
            post(register::register_metadata),
        )
        .route("/shenyu-client/register-uri", post(register::register_uri))
        .route("/shenyu-client/offline", post(register::offline))
        .route("/rule/{id}", get(detail::<Rules>).put(update::<Rules>));
    let protected = crate::sync::fault::routes(protected, state.sync_faults.as_ref()).route_layer(
        middleware::from_fn_with_state(state.clone(), crate::auth::require_token),
    );
    let mut router = Router::new()
        .merge(protected)
        .route(
            "/platform/login",
            post(crate::auth::login).get(crate::auth::login_by_query),
        )
        .route("/actuator/health", get(actuator::health))
        .route("/actuator/digest", get(actuator::digest))
        .route("/gantry/sync-status", get(sync_status::sync_status))
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
