//! The CRUD shape the resources share: the [`Resource`] trait (with [`Write`], [`Enable`],
//! [`Search`], [`ListQuery`] and [`DeleteBody`] for the parts not every resource has) and the
//! generic handlers the route table instantiates per resource: [`detail`], [`all`], [`list`],
//! [`search`], [`create`], [`update`], [`delete_batch`] and [`batch_enabled`]. Each resource
//! module implements the traits and keeps only the handlers of its own.

use std::future::Future;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use model::{AdminResult, BatchEnabled, BatchIds, CommonPager};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::extract::{AdminJson, AdminQuery};
use super::{DEFAULT_PAGE_SIZE, Paging, name_matches};
use crate::dto::{PageInfo, SearchCondition, SearchRequest};
use crate::error::{ApiError, ok};
use crate::service::{Admin, ServiceError};
use crate::store::StoreError;

/// A stored resource of the REST API: how to read, show and delete its records.
pub(crate) trait Resource: Send + Sync + 'static {
    /// The noun in messages (`"rule"`, `"plugin handle"`).
    const NOUN: &'static str;
    /// The stored record.
    type Record: Send;
    /// The record as the admin shows it.
    type Vo: Serialize + Send;
    /// The body of its batch delete.
    type DeleteBody: DeleteBody;

    /// `record` as the admin shows it.
    fn vo(record: Self::Record) -> Self::Vo;

    /// The record with `id`, if any.
    fn find(
        admin: &Admin,
        id: &str,
    ) -> impl Future<Output = Result<Option<Self::Record>, StoreError>> + Send;

    /// Every record.
    fn all(admin: &Admin) -> impl Future<Output = Result<Vec<Self::Record>, StoreError>> + Send;

    /// The records of `owner` (a rule's selector), in store order, read by an index; `None`
    /// for a resource not read by owner, whose lists read every record and filter.
    fn owned_by(
        _admin: &Admin,
        _owner: &str,
    ) -> impl Future<Output = Result<Option<Vec<Self::Record>>, StoreError>> + Send {
        async { Ok(None) }
    }

    /// Deletes the records with `ids`; answers how many went.
    fn delete(
        admin: &Admin,
        ids: &[String],
    ) -> impl Future<Output = Result<usize, ServiceError>> + Send;
}

/// A resource created with a JSON body and updated with one at `/{id}`.
pub(crate) trait Write: Resource {
    /// The body of create and update.
    type Dto: DeserializeOwned + Send;
    /// What a create answers (the new id, or a count as ShenYu does).
    type Created: Serialize + Send;

    /// Creates a record from `dto`.
    fn create(
        admin: &Admin,
        dto: Self::Dto,
    ) -> impl Future<Output = Result<Self::Created, ServiceError>> + Send;

    /// Updates the record with `id` from `dto`.
    fn update(
        admin: &Admin,
        id: &str,
        dto: Self::Dto,
    ) -> impl Future<Output = Result<(), ServiceError>> + Send;
}

/// A resource with batch enable.
pub(crate) trait Enable: Resource {
    /// Sets the records with `ids` enabled or disabled.
    fn enable(
        admin: &Admin,
        ids: &[String],
        enabled: bool,
    ) -> impl Future<Output = Result<(), ServiceError>> + Send;
}

/// A resource with `list/search`: its records have an owner (a plugin, a selector) and a
/// name.
pub(crate) trait Search: Resource {
    /// The owner ids a search filters by.
    fn owners(condition: &SearchCondition) -> Option<&[String]>;
    /// The owner id of `record`.
    fn owner(record: &Self::Record) -> &str;
    /// The name of `record`.
    fn name(record: &Self::Record) -> &str;
}

/// The query of a resource's paged list: its paging and its filter.
pub(crate) trait ListQuery<R: Resource>: DeserializeOwned + Send + Sync {
    /// The requested page.
    fn paging(&self) -> &Paging;
    /// Which records the query keeps; a malformed parameter is an error, before anything is
    /// read.
    fn filter(&self) -> Result<impl Fn(&R::Record) -> bool + Send, ApiError>;

    /// The one owner the query keeps records of, if it names one (then only that owner's
    /// records are read, see [`Resource::owned_by`]).
    fn owner(&self) -> Option<&str> {
        None
    }
}

/// The body of a batch delete: the ids it names, if any.
pub(crate) trait DeleteBody: DeserializeOwned + Send {
    /// The ids, `None` if the body names none.
    fn ids(self) -> Option<Vec<String>>;
}

impl DeleteBody for BatchIds {
    /// `{"ids":[..]}`.
    fn ids(self) -> Option<Vec<String>> {
        self.ids
    }
}

impl DeleteBody for Vec<String> {
    /// A bare JSON array.
    fn ids(self) -> Option<Vec<String>> {
        Some(self)
    }
}

/// The error of a missing record of `R`.
pub(crate) fn not_found<R: Resource>(id: &str) -> ApiError {
    ApiError::NotFound(format!("{} `{id}` does not exist", R::NOUN))
}

/// `GET /{id}`: one record.
pub(crate) async fn detail<R: Resource>(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
) -> Result<Json<AdminResult<R::Vo>>, ApiError> {
    let record = R::find(&admin, &id)
        .await?
        .ok_or_else(|| not_found::<R>(&id))?;
    Ok(ok("detail success", R::vo(record)))
}

/// Every record, unpaged.
pub(crate) async fn all<R: Resource>(
    State(admin): State<Arc<Admin>>,
) -> Result<Json<AdminResult<Vec<R::Vo>>>, ApiError> {
    let items = R::all(&admin).await?.into_iter().map(R::vo).collect();
    Ok(ok("query success", items))
}

/// The paged list: the records `Q` keeps, in store order.
pub(crate) async fn list<R: Resource, Q: ListQuery<R>>(
    State(admin): State<Arc<Admin>>,
    AdminQuery(query): AdminQuery<Q>,
) -> Result<Json<AdminResult<CommonPager<R::Vo>>>, ApiError> {
    let keeps = query.filter()?;
    let items = read::<R>(&admin, query.owner())
        .await?
        .into_iter()
        .filter(|r| keeps(r))
        .map(R::vo)
        .collect();
    Ok(ok("query success", query.paging().page(items)?))
}

/// The records a list may keep: `owner`'s when it names one the resource reads by (a list of
/// one selector's rules costs that selector's rules, not every rule), else every record.
async fn read<R: Resource>(
    admin: &Admin,
    owner: Option<&str>,
) -> Result<Vec<R::Record>, StoreError> {
    if let Some(owner) = owner
        && let Some(records) = R::owned_by(admin, owner).await?
    {
        return Ok(records);
    }
    R::all(admin).await
}

/// `POST list/search`: a PageHelper `PageInfo` page, filtered by name keyword and owner ids.
pub(crate) async fn search<R: Search>(
    State(admin): State<Arc<Admin>>,
    AdminJson(request): AdminJson<SearchRequest>,
) -> Result<Json<AdminResult<PageInfo<R::Vo>>>, ApiError> {
    let owners = R::owners(&request.condition);
    let keyword = request.condition.keyword.as_deref();
    let one_owner = match owners {
        Some([owner]) => Some(owner.as_str()),
        _ => None,
    };
    let items = read::<R>(&admin, one_owner)
        .await?
        .into_iter()
        .filter(|x| id_in(owners, R::owner(x)))
        .filter(|x| name_matches(keyword, R::name(x)))
        .map(R::vo)
        .collect();
    Ok(ok("query success", search_page(&request, items)?))
}

/// `POST`: creates a record.
pub(crate) async fn create<R: Write>(
    State(admin): State<Arc<Admin>>,
    AdminJson(dto): AdminJson<R::Dto>,
) -> Result<Json<AdminResult<R::Created>>, ApiError> {
    let created = R::create(&admin, dto).await?;
    Ok(ok("create success", created))
}

/// `PUT /{id}`: updates a record; answers a count, as ShenYu does.
pub(crate) async fn update<R: Write>(
    State(admin): State<Arc<Admin>>,
    Path(id): Path<String>,
    AdminJson(dto): AdminJson<R::Dto>,
) -> Result<Json<AdminResult<i32>>, ApiError> {
    R::update(&admin, &id, dto).await?;
    Ok(ok("update success", 1))
}

/// The batch delete: answers how many records went.
pub(crate) async fn delete_batch<R: Resource>(
    State(admin): State<Arc<Admin>>,
    AdminJson(body): AdminJson<R::DeleteBody>,
) -> Result<Json<AdminResult<usize>>, ApiError> {
    let ids = batch_ids(body.ids())?;
    let deleted = R::delete(&admin, &ids).await?;
    Ok(ok("delete success", deleted))
}

/// The batch enable: answers `data: null`, `enable success`.
pub(crate) async fn batch_enabled<R: Enable>(
    State(admin): State<Arc<Admin>>,
    AdminJson(body): AdminJson<BatchEnabled>,
) -> Result<Json<AdminResult<()>>, ApiError> {
    let ids = batch_ids(body.ids)?;
    let enabled = body
        .enabled
        .ok_or_else(|| ApiError::field("enabled", "must not be null"))?;
    R::enable(&admin, &ids, enabled).await?;
    Ok(Json(AdminResult {
        data: None,
        ..AdminResult::success("enable success", ())
    }))
}

/// The ids of a batch request.
fn batch_ids(ids: Option<Vec<String>>) -> Result<Vec<String>, ApiError> {
    match ids {
        Some(ids) if !ids.is_empty() => Ok(ids),
        _ => Err(ApiError::field("ids", "must not be empty")),
    }
}

/// The requested `PageInfo` page of `items` for a `list/search` request.
fn search_page<T>(request: &SearchRequest, items: Vec<T>) -> Result<PageInfo<T>, ApiError> {
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
fn id_in(filter: Option<&[String]>, id: &str) -> bool {
    filter.is_none_or(|ids| ids.is_empty() || ids.iter().any(|i| i.trim() == id))
}
