//! `GET /v3/api-docs`: an OpenAPI 3.1 description of the admin's HTTP API, built from one
//! table of operations, [`OPERATIONS`]. Each entry names its request (a JSON or form body
//! type, or typed query parameters) and its success response type; every schema they need
//! becomes a component. Tests (here and in `tests/it/openapi.rs`) check that every operation
//! listed is routed, that every schema reference resolves, and that the schemas' field names
//! are the ones serde reads and writes.
//!
//! Adding an operation is one entry in [`OPERATIONS`], whose types are the handler's own
//! (`AdminJson<T>` in, `Json<T>` out), e.g.
//!
//! ```text
//! op("POST", "/plugin", "plugin", "Create a plugin", Token,
//!    json::<PluginDto>(), answers::<AdminResult<String>>()),
//! ```
//!
//! A type the document has not seen before also needs `utoipa::ToSchema` (derived; in
//! `model` under `#[cfg_attr(feature = "openapi", ...)]`) and its name in the `component!`
//! list below; the compiler says so when it is missing.

use std::collections::BTreeMap;

use axum::Json;
use model::{
    AdminResult, BatchEnabled, BatchIds, CommonPager, ConfigGroup, DigestReport, LoginRequest,
    LoginResponse, PluginVo, RuleDto, RuleVo, SelectorDto, SelectorVo, WebsocketData,
};
use utoipa::openapi::path::{OperationBuilder, ParameterBuilder, ParameterIn};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Ref, Schema, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, HttpMethod, InfoBuilder, OpenApi, OpenApiBuilder, PathItem,
    PathsBuilder, RefOr, Required,
};
use utoipa::{PartialSchema, ToSchema};

use crate::dto::{
    AppAuthDto, AppAuthVo, AuthApplyDto, MetaDataDto, MetaDataVo, PageInfo, PluginDto,
    PluginHandleDto, PluginHandleVo, SearchRequest,
};

use doc::{ApiDocument, FetchData, Health, IdList, ListenerForm, RegisterAnswer};
use model::{MetaDataRegister, UriRegister};

/// Who may call an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Anyone.
    Open,
    /// A login token in `X-Access-Token`.
    Token,
    /// The websocket sync token, when one is configured.
    SyncToken,
}

/// The schemas collected for the document, by component name.
type Components = BTreeMap<String, RefOr<Schema>>;

/// Registers what a type needs in [`Components`] and answers the schema to use where the
/// type appears (a `$ref` for named types).
type Describe = fn(&mut Components) -> RefOr<Schema>;

/// What an operation takes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Input {
    /// Nothing (besides path parameters, which come from the path).
    Nothing,
    /// A JSON body.
    Json(Describe),
    /// An `application/x-www-form-urlencoded` body.
    Form(Describe),
    /// The same fields as JSON, an urlencoded form or multipart form fields (ShenYu's
    /// `@ModelAttribute` endpoints).
    JsonOrForm(Describe),
    /// Query parameters.
    Query(&'static [Param]),
}

/// What an operation answers on success.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Output {
    /// HTTP 200 with a JSON body.
    Json(Describe),
    /// HTTP 200 with a `text/plain` body.
    Text(Describe),
    /// HTTP 101: a websocket whose text frames are JSON of this schema.
    Upgrade(Describe),
}

/// A query parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Param {
    name: &'static str,
    schema: Describe,
    required: bool,
    description: &'static str,
}

/// An optional query parameter of type `T`.
const fn param<T: Described>(name: &'static str, description: &'static str) -> Param {
    Param {
        name,
        schema: T::describe,
        required: false,
        description,
    }
}

/// A required query parameter of type `T`.
const fn required<T: Described>(name: &'static str, description: &'static str) -> Param {
    Param {
        required: true,
        ..param::<T>(name, description)
    }
}

/// A JSON body of type `T`.
const fn json<T: Described>() -> Input {
    Input::Json(T::describe)
}

/// A form body described by `T`.
const fn form<T: Described>() -> Input {
    Input::Form(T::describe)
}

/// The same fields as JSON, urlencoded or multipart, described by `T`.
const fn json_or_form<T: Described>() -> Input {
    Input::JsonOrForm(T::describe)
}

/// Query parameters.
const fn query(params: &'static [Param]) -> Input {
    Input::Query(params)
}

/// A JSON answer of type `T`.
const fn answers<T: Described>() -> Output {
    Output::Json(T::describe)
}

/// One documented operation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Operation {
    pub(crate) method: &'static str,
    pub(crate) path: &'static str,
    tag: &'static str,
    summary: &'static str,
    access: Access,
    input: Input,
    output: Output,
}

const fn op(
    method: &'static str,
    path: &'static str,
    tag: &'static str,
    summary: &'static str,
    access: Access,
    input: Input,
    output: Output,
) -> Operation {
    Operation {
        method,
        path,
        tag,
        summary,
        access,
        input,
        output,
    }
}

use Access::{Open, SyncToken, Token};
use Input::Nothing;

/// `currentPage` of the paged GET lists.
const CURRENT_PAGE: Param = param::<i64>("currentPage", "1-based page number (default 1)");
/// `pageSize` of the paged GET lists.
const PAGE_SIZE: Param = param::<i64>("pageSize", "Items per page (default 12)");
/// A name filter.
const NAME: Param = param::<String>("name", "Only items whose name contains this");

/// Every operation the admin serves (ShenYu 2.6.0 paths).
pub(crate) const OPERATIONS: &[Operation] = &[
    op(
        "POST",
        "/platform/login",
        "auth",
        "Log in; the token goes in X-Access-Token",
        Open,
        json::<LoginRequest>(),
        answers::<AdminResult<LoginResponse>>(),
    ),
    op(
        "GET",
        "/actuator/health",
        "actuator",
        "Health",
        Open,
        Nothing,
        answers::<Health>(),
    ),
    op(
        "GET",
        "/actuator/digest",
        "actuator",
        "Digest of the committed config",
        Open,
        Nothing,
        answers::<DigestReport>(),
    ),
    op(
        "GET",
        "/v3/api-docs",
        "actuator",
        "This document",
        Open,
        Nothing,
        answers::<ApiDocument>(),
    ),
    op(
        "GET",
        "/plugin",
        "plugin",
        "Paged plugins (name, enabled filters)",
        Token,
        query(&[
            NAME,
            param::<bool>("enabled", "Only plugins in this state"),
            CURRENT_PAGE,
            PAGE_SIZE,
        ]),
        answers::<AdminResult<CommonPager<PluginVo>>>(),
    ),
    op(
        "GET",
        "/plugin/all",
        "plugin",
        "All plugins",
        Token,
        Nothing,
        answers::<AdminResult<Vec<PluginVo>>>(),
    ),
    op(
        "GET",
        "/plugin/{id}",
        "plugin",
        "One plugin",
        Token,
        Nothing,
        answers::<AdminResult<PluginVo>>(),
    ),
    op(
        "POST",
        "/plugin",
        "plugin",
        "Create a plugin (name, role, sort, enabled, config); answers a count",
        Token,
        json_or_form::<PluginDto>(),
        answers::<AdminResult<i32>>(),
    ),
    op(
        "PUT",
        "/plugin/{id}",
        "plugin",
        "Update role, sort, enabled, config",
        Token,
        json_or_form::<PluginDto>(),
        answers::<AdminResult<i32>>(),
    ),
    op(
        "DELETE",
        "/plugin/batch",
        "plugin",
        "Delete plugins with their selectors and rules (a JSON array of ids)",
        Token,
        json::<IdList>(),
        answers::<AdminResult<usize>>(),
    ),
    op(
        "GET",
        "/plugin-handle",
        "plugin-handle",
        "Paged plugin handle field definitions (pluginId, field filters)",
        Token,
        query(&[
            param::<String>("pluginId", "Only this plugin's fields"),
            param::<String>("field", "Field name contains"),
            CURRENT_PAGE,
            PAGE_SIZE,
        ]),
        answers::<AdminResult<CommonPager<PluginHandleVo>>>(),
    ),
    op(
        "GET",
        "/plugin-handle/all/{pluginId}/{type}",
        "plugin-handle",
        "One plugin's fields of one handle type (1 selector, 2 rule, 3 plugin)",
        Token,
        Nothing,
        answers::<AdminResult<Vec<PluginHandleVo>>>(),
    ),
    op(
        "GET",
        "/plugin-handle/{id}",
        "plugin-handle",
        "One plugin handle field definition",
        Token,
        Nothing,
        answers::<AdminResult<PluginHandleVo>>(),
    ),
    op(
        "POST",
        "/plugin-handle",
        "plugin-handle",
        "Create a plugin handle field definition; answers a count",
        Token,
        json::<PluginHandleDto>(),
        answers::<AdminResult<i32>>(),
    ),
    op(
        "PUT",
        "/plugin-handle/{id}",
        "plugin-handle",
        "Update a plugin handle field definition",
        Token,
        json::<PluginHandleDto>(),
        answers::<AdminResult<i32>>(),
    ),
    op(
        "DELETE",
        "/plugin-handle/batch",
        "plugin-handle",
        "Delete plugin handle field definitions (a JSON array of ids)",
        Token,
        json::<IdList>(),
        answers::<AdminResult<usize>>(),
    ),
    op(
        "POST",
        "/plugin/enabled",
        "plugin",
        "Batch enable or disable plugins",
        Token,
        json::<BatchEnabled>(),
        answers::<AdminResult<()>>(),
    ),
    op(
        "GET",
        "/selector",
        "selector",
        "Paged selectors (pluginId, name)",
        Token,
        query(&[
            param::<String>("pluginId", "Only selectors of this plugin id"),
            NAME,
            CURRENT_PAGE,
            PAGE_SIZE,
        ]),
        answers::<AdminResult<CommonPager<SelectorVo>>>(),
    ),
    op(
        "POST",
        "/selector",
        "selector",
        "Create a selector; answers its id",
        Token,
        json::<SelectorDto>(),
        answers::<AdminResult<String>>(),
    ),
    op(
        "GET",
        "/selector/{id}",
        "selector",
        "One selector",
        Token,
        Nothing,
        answers::<AdminResult<SelectorVo>>(),
    ),
    op(
        "PUT",
        "/selector/{id}",
        "selector",
        "Replace a selector",
        Token,
        json::<SelectorDto>(),
        answers::<AdminResult<i32>>(),
    ),
    op(
        "DELETE",
        "/selector/batch",
        "selector",
        "Delete selectors and their rules; answers the count",
        Token,
        json::<BatchIds>(),
        answers::<AdminResult<usize>>(),
    ),
    op(
        "POST",
        "/selector/list/search",
        "selector",
        "PageInfo search (keyword, plugin ids)",
        Token,
        json::<SearchRequest>(),
        answers::<AdminResult<PageInfo<SelectorVo>>>(),
    ),
    op(
        "POST",
        "/selector/batchEnabled",
        "selector",
        "Batch enable or disable selectors",
        Token,
        json::<BatchEnabled>(),
        answers::<AdminResult<()>>(),
    ),
    op(
        "GET",
        "/rule",
        "rule",
        "Paged rules (selectorId, name)",
        Token,
        query(&[
            param::<String>("selectorId", "Only rules of this selector id"),
            NAME,
            CURRENT_PAGE,
            PAGE_SIZE,
        ]),
        answers::<AdminResult<CommonPager<RuleVo>>>(),
    ),
    op(
        "POST",
        "/rule",
        "rule",
        "Create a rule; answers a count",
        Token,
        json::<RuleDto>(),
        answers::<AdminResult<i32>>(),
    ),
    op(
        "GET",
        "/rule/{id}",
        "rule",
        "One rule",
        Token,
        Nothing,
        answers::<AdminResult<RuleVo>>(),
    ),
    op(
        "PUT",
        "/rule/{id}",
        "rule",
        "Replace a rule",
        Token,
        json::<RuleDto>(),
        answers::<AdminResult<i32>>(),
    ),
    op(
        "DELETE",
        "/rule/batch",
        "rule",
        "Delete rules; answers the count",
        Token,
        json::<BatchIds>(),
        answers::<AdminResult<usize>>(),
    ),
    op(
        "POST",
        "/rule/list/search",
        "rule",
        "PageInfo search (keyword, selector ids)",
        Token,
        json::<SearchRequest>(),
        answers::<AdminResult<PageInfo<RuleVo>>>(),
    ),
    op(
        "POST",
        "/rule/batchEnabled",
        "rule",
        "Batch enable or disable rules",
        Token,
        json::<BatchEnabled>(),
        answers::<AdminResult<()>>(),
    ),
    op(
        "GET",
        "/meta-data/queryList",
        "meta-data",
        "Paged metadata (path filter)",
        Token,
        query(&[
            param::<String>("path", "Only entries whose path contains this"),
            CURRENT_PAGE,
            PAGE_SIZE,
        ]),
        answers::<AdminResult<CommonPager<MetaDataVo>>>(),
    ),
    op(
        "GET",
        "/meta-data/findAll",
        "meta-data",
        "All metadata",
        Token,
        Nothing,
        answers::<AdminResult<Vec<MetaDataVo>>>(),
    ),
    op(
        "GET",
        "/meta-data/{id}",
        "meta-data",
        "One metadata entry",
        Token,
        Nothing,
        answers::<AdminResult<MetaDataVo>>(),
    ),
    op(
        "POST",
        "/meta-data/createOrUpdate",
        "meta-data",
        "Create (no id) or update metadata; answers the id",
        Token,
        json::<MetaDataDto>(),
        answers::<AdminResult<String>>(),
    ),
    op(
        "DELETE",
        "/meta-data/batchDeleted",
        "meta-data",
        "Delete metadata; answers the count",
        Token,
        json::<BatchIds>(),
        answers::<AdminResult<usize>>(),
    ),
    op(
        "POST",
        "/meta-data/batchEnabled",
        "meta-data",
        "Batch enable or disable metadata",
        Token,
        json::<BatchEnabled>(),
        answers::<AdminResult<()>>(),
    ),
    op(
        "POST",
        "/appAuth/apply",
        "appAuth",
        "Create app credentials; answers the entry with its key and secret",
        Token,
        json::<AuthApplyDto>(),
        answers::<AdminResult<AppAuthVo>>(),
    ),
    op(
        "GET",
        "/appAuth/findPageByQuery",
        "appAuth",
        "Paged app auth (appKey, phone)",
        Token,
        query(&[
            param::<String>("appKey", "Only entries whose app key contains this"),
            param::<String>("phone", "Only entries whose phone contains this"),
            CURRENT_PAGE,
            PAGE_SIZE,
        ]),
        answers::<AdminResult<CommonPager<AppAuthVo>>>(),
    ),
    op(
        "GET",
        "/appAuth/detail",
        "appAuth",
        "One app auth entry (?id=)",
        Token,
        query(&[required::<String>("id", "The entry's id")]),
        answers::<AdminResult<AppAuthVo>>(),
    ),
    op(
        "POST",
        "/appAuth/updateDetail",
        "appAuth",
        "Update an app auth entry",
        Token,
        json::<AppAuthDto>(),
        answers::<AdminResult<i32>>(),
    ),
    op(
        "POST",
        "/appAuth/batchDelete",
        "appAuth",
        "Delete app auth entries (array of ids); answers the count",
        Token,
        json::<IdList>(),
        answers::<AdminResult<usize>>(),
    ),
    op(
        "POST",
        "/appAuth/batchEnabled",
        "appAuth",
        "Batch enable or disable app auth",
        Token,
        json::<BatchEnabled>(),
        answers::<AdminResult<()>>(),
    ),
    op(
        "POST",
        "/shenyu-client/register-metadata",
        "registration",
        "Register an API (answers `success`)",
        Token,
        json::<MetaDataRegister>(),
        Output::Text(RegisterAnswer::describe),
    ),
    op(
        "POST",
        "/shenyu-client/register-uri",
        "registration",
        "Register or take offline an instance address (answers `success`)",
        Token,
        json::<UriRegister>(),
        Output::Text(RegisterAnswer::describe),
    ),
    op(
        "POST",
        "/shenyu-client/offline",
        "registration",
        "Take an instance address offline (answers `success`)",
        Token,
        json::<UriRegister>(),
        Output::Text(RegisterAnswer::describe),
    ),
    op(
        "GET",
        "/configs/fetch",
        "sync",
        "HTTP long-poll sync: groups with md5 and lastModifyTime (--sync http)",
        Token,
        query(&[required::<Vec<ConfigGroup>>(
            "groupKeys",
            "Groups to fetch; repeat the parameter or separate with commas",
        )]),
        answers::<AdminResult<FetchData>>(),
    ),
    op(
        "POST",
        "/configs/listener",
        "sync",
        "HTTP long-poll sync: changed groups, held until one changes (--sync http); the \
         parameters may also come in the query string",
        Token,
        form::<ListenerForm>(),
        answers::<AdminResult<Vec<ConfigGroup>>>(),
    ),
    op(
        "GET",
        "/websocket",
        "sync",
        "Websocket sync (--sync websocket)",
        SyncToken,
        Nothing,
        Output::Upgrade(WebsocketData::describe),
    ),
];

/// A type the document can describe.
#[diagnostic::on_unimplemented(
    message = "the OpenAPI document cannot describe `{Self}`",
    note = "derive `utoipa::ToSchema` on it and add it to `component!(...)` in openapi.rs"
)]
pub(crate) trait Described {
    /// The name used in component names, alone or composed (`AdminResult_CommonPager_PluginVo`).
    fn name() -> String;

    /// Registers the components this type needs and answers the schema to use where it
    /// appears: a `$ref` for named types, inline for scalars and lists.
    fn describe(components: &mut Components) -> RefOr<Schema>;
}

/// Adds `T`'s own component and those it refers to; answers a `$ref` to it.
fn register<T: ToSchema>(components: &mut Components) -> RefOr<Schema> {
    let name = T::name().into_owned();
    if !components.contains_key(&name) {
        components.insert(name.clone(), T::schema());
        let mut referenced = Vec::new();
        T::schemas(&mut referenced);
        for (name, schema) in referenced {
            components.entry(name).or_insert(schema);
        }
    }
    Ref::from_schema_name(name).into()
}

/// Adds `schema` as the component `name` (unless there already is one); answers a `$ref`.
fn register_composed(
    components: &mut Components,
    name: String,
    schema: impl FnOnce(&mut Components) -> RefOr<Schema>,
) -> RefOr<Schema> {
    if !components.contains_key(&name) {
        let schema = schema(components);
        components.insert(name.clone(), schema);
    }
    Ref::from_schema_name(name).into()
}

/// Named wire types: each is one component.
macro_rules! component {
    ($($ty:ty),+ $(,)?) => {$(
        impl Described for $ty {
            fn name() -> String {
                <$ty as ToSchema>::name().into_owned()
            }

            fn describe(components: &mut Components) -> RefOr<Schema> {
                register::<$ty>(components)
            }
        }
    )+};
}

component!(
    LoginRequest,
    LoginResponse,
    PluginVo,
    PluginDto,
    PluginHandleVo,
    PluginHandleDto,
    BatchEnabled,
    BatchIds,
    SelectorDto,
    SelectorVo,
    RuleDto,
    RuleVo,
    SearchRequest,
    MetaDataDto,
    MetaDataVo,
    AuthApplyDto,
    AppAuthDto,
    AppAuthVo,
    DigestReport,
    ConfigGroup,
    WebsocketData,
    Health,
    ApiDocument,
    IdList,
    MetaDataRegister,
    UriRegister,
    RegisterAnswer,
    FetchData,
    ListenerForm,
);

/// Scalars: inline, never components.
macro_rules! scalar {
    ($($ty:ty => $name:literal),+ $(,)?) => {$(
        impl Described for $ty {
            fn name() -> String {
                $name.to_owned()
            }

            fn describe(_: &mut Components) -> RefOr<Schema> {
                <$ty as PartialSchema>::schema()
            }
        }
    )+};
}

scalar!(String => "String", i32 => "Int32", i64 => "Int64", usize => "Count", bool => "Boolean");

/// `data: null`.
impl Described for () {
    fn name() -> String {
        "Null".to_owned()
    }

    fn describe(_: &mut Components) -> RefOr<Schema> {
        ObjectBuilder::new().schema_type(Type::Null).into()
    }
}

impl<T: Described> Described for Vec<T> {
    fn name() -> String {
        format!("List_{}", T::name())
    }

    fn describe(components: &mut Components) -> RefOr<Schema> {
        ArrayBuilder::new().items(T::describe(components)).into()
    }
}

/// `base`, the derived schema of a generic wire type, with its property `field` (the one of
/// the generic type) replaced by `schema`. Panics if `field` is not a property, so a rename
/// in serde cannot go unnoticed.
fn with_property(base: RefOr<Schema>, field: &str, schema: RefOr<Schema>) -> RefOr<Schema> {
    let RefOr::T(Schema::Object(mut object)) = base else {
        unreachable!("derived struct schemas are inline objects")
    };
    let slot = object
        .properties
        .get_mut(field)
        .unwrap_or_else(|| panic!("the schema has no property `{field}`"));
    *slot = schema;
    if !object.required.iter().any(|r| r == field) {
        object.required.push(field.to_owned());
    }
    RefOr::T(Schema::Object(object))
}

/// The envelope: `data` is always written (`null` only when `T` is `()`).
impl<T: Described> Described for AdminResult<T> {
    fn name() -> String {
        format!("AdminResult_{}", T::name())
    }

    fn describe(components: &mut Components) -> RefOr<Schema> {
        register_composed(components, Self::name(), |components| {
            let data = T::describe(components);
            with_property(AdminResult::<()>::schema(), "data", data)
        })
    }
}

impl<T: Described> Described for CommonPager<T> {
    fn name() -> String {
        format!("CommonPager_{}", T::name())
    }

    fn describe(components: &mut Components) -> RefOr<Schema> {
        register_composed(components, Self::name(), |components| {
            let mut referenced = Vec::new();
            <CommonPager<()> as ToSchema>::schemas(&mut referenced);
            for (name, schema) in referenced {
                components.entry(name).or_insert(schema);
            }
            let items = Vec::<T>::describe(components);
            with_property(CommonPager::<()>::schema(), "dataList", items)
        })
    }
}

impl<T: Described> Described for PageInfo<T> {
    fn name() -> String {
        format!("PageInfo_{}", T::name())
    }

    fn describe(components: &mut Components) -> RefOr<Schema> {
        register_composed(components, Self::name(), |components| {
            let items = Vec::<T>::describe(components);
            with_property(PageInfo::<()>::schema(), "list", items)
        })
    }
}

/// Shapes that have no Rust type of their own in the admin (or whose type lives in a module
/// this document cannot annotate): described here. Unit tests check the mirrors against the
/// real types.
#[allow(dead_code)]
pub(crate) mod doc {
    use model::{AppAuthData, ConfigGroup, MetaData, PluginData, RuleData, SelectorData};
    use serde::Serialize;
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
    use utoipa::{PartialSchema, ToSchema};

    /// What `GET /actuator/health` answers.
    #[derive(Debug, ToSchema)]
    pub(crate) struct Health {
        /// Always `UP`.
        #[schema(example = "UP")]
        pub(crate) status: String,
    }

    /// An OpenAPI 3.1 document (this one).
    #[derive(Debug)]
    pub(crate) struct ApiDocument;

    impl PartialSchema for ApiDocument {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some("An OpenAPI 3.1 document"))
                .into()
        }
    }

    impl ToSchema for ApiDocument {
        fn name() -> std::borrow::Cow<'static, str> {
            "OpenApiDocument".into()
        }
    }

    /// Body of `POST /appAuth/batchDelete`: a bare array of ids, as ShenYu sends, or
    /// `{"ids": [...]}`.
    #[derive(Debug)]
    pub(crate) struct IdList;

    impl PartialSchema for IdList {
        fn schema() -> RefOr<Schema> {
            OneOfBuilder::new()
                .item(Vec::<String>::schema())
                .item(utoipa::openapi::Ref::from_schema_name(
                    model::BatchIds::name(),
                ))
                .description(Some(
                    "A bare array of ids (as ShenYu sends) or `{\"ids\": [...]}`",
                ))
                .into()
        }
    }

    impl ToSchema for IdList {
        fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
            schemas.push((
                model::BatchIds::name().into_owned(),
                model::BatchIds::schema(),
            ));
        }
    }

    /// What the registration endpoints answer: the bare text `success`.
    #[derive(Debug)]
    pub(crate) struct RegisterAnswer;

    impl PartialSchema for RegisterAnswer {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["success"]))
                .into()
        }
    }

    impl ToSchema for RegisterAnswer {}

    /// One group of a `GET /configs/fetch` answer; mirrors the long-poll publisher's
    /// `FetchGroup`.
    #[derive(Debug, Serialize, ToSchema)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct FetchGroup {
        /// md5 of the group's JSON list.
        md5: String,
        /// When the group last changed, in epoch milliseconds.
        last_modify_time: i64,
        /// The group's items (`[]` for groups gantry does not model).
        data: Vec<GroupItem>,
    }

    /// An item of a synced group: a plugin, selector, rule, metadata or app auth entry.
    #[derive(Debug, Serialize)]
    pub(crate) struct GroupItem;

    impl PartialSchema for GroupItem {
        fn schema() -> RefOr<Schema> {
            OneOfBuilder::new()
                .item(utoipa::openapi::Ref::from_schema_name(PluginData::name()))
                .item(utoipa::openapi::Ref::from_schema_name(SelectorData::name()))
                .item(utoipa::openapi::Ref::from_schema_name(RuleData::name()))
                .item(utoipa::openapi::Ref::from_schema_name(MetaData::name()))
                .item(utoipa::openapi::Ref::from_schema_name(AppAuthData::name()))
                .description(Some(
                    "PluginData, SelectorData, RuleData, MetaData or AppAuthData, by group",
                ))
                .into()
        }
    }

    impl ToSchema for GroupItem {
        fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
            fn add<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                schemas.push((T::name().into_owned(), T::schema()));
                T::schemas(schemas);
            }
            add::<PluginData>(schemas);
            add::<SelectorData>(schemas);
            add::<RuleData>(schemas);
            add::<MetaData>(schemas);
            add::<AppAuthData>(schemas);
        }
    }

    /// `data` of a `GET /configs/fetch` answer: the requested groups by name.
    #[derive(Debug)]
    pub(crate) struct FetchData;

    impl PartialSchema for FetchData {
        fn schema() -> RefOr<Schema> {
            let mut object = ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some("The requested groups, by group name"));
            for group in ConfigGroup::ALL {
                object = object.property(
                    group.as_str(),
                    utoipa::openapi::Ref::from_schema_name(FetchGroup::name()),
                );
            }
            object.into()
        }
    }

    impl ToSchema for FetchData {
        fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
            schemas.push((FetchGroup::name().into_owned(), FetchGroup::schema()));
            FetchGroup::schemas(schemas);
        }
    }

    /// The form of `POST /configs/listener`: `GROUP=md5,lastModifyTime` for each group the
    /// client holds; groups left out are not watched, other names are ignored.
    #[derive(Debug)]
    pub(crate) struct ListenerForm;

    impl PartialSchema for ListenerForm {
        fn schema() -> RefOr<Schema> {
            let mut object = ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some(
                    "`GROUP=md5,lastModifyTime` for each group the client holds; groups left out \
                 are not watched",
                ));
            for group in ConfigGroup::ALL {
                object = object.property(
                    group.as_str(),
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .pattern(Some("^[^,]+,-?[0-9]+$"))
                        .examples(["d751713988987e9331980363e24189ce,1700000000000"]),
                );
            }
            object
                .property(
                    "namespaceId",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .description(Some("Accepted and ignored")),
                )
                .into()
        }
    }

    impl ToSchema for ListenerForm {}
}

fn method(name: &str) -> HttpMethod {
    match name {
        "GET" => HttpMethod::Get,
        "POST" => HttpMethod::Post,
        "PUT" => HttpMethod::Put,
        "DELETE" => HttpMethod::Delete,
        other => unreachable!("no operation uses {other}"),
    }
}

/// A response whose body is JSON of `schema`.
fn json_response(description: &str, schema: RefOr<Schema>) -> utoipa::openapi::Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new().schema(Some(schema)).build(),
        )
        .build()
}

/// A client-friendly operation id: `GET /plugin/{id}` is `getPluginById`,
/// `POST /selector/list/search` is `postSelectorListSearch`.
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_lowercase();
    for word in path.split(|c: char| !c.is_ascii_alphanumeric() && c != '{' && c != '}') {
        if let Some(name) = word.strip_prefix('{').and_then(|w| w.strip_suffix('}')) {
            id.push_str("By");
            id.extend(name.chars().next().map(|c| c.to_ascii_uppercase()));
            id.push_str(&name[1..]);
        } else if let Some(first) = word.chars().next() {
            id.push(first.to_ascii_uppercase());
            id.push_str(&word[1..]);
        }
    }
    id
}

/// The names of the `{name}` parameters of `path`.
fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}

impl Operation {
    fn build(&self, components: &mut Components) -> utoipa::openapi::path::Operation {
        let mut operation = OperationBuilder::new()
            .tag(self.tag)
            .summary(Some(self.summary))
            .operation_id(Some(operation_id(self.method, self.path)));
        for name in path_params(self.path) {
            operation = operation.parameter(
                ParameterBuilder::new()
                    .name(name)
                    .parameter_in(ParameterIn::Path)
                    .required(Required::True)
                    .schema(Some(String::schema())),
            );
        }
        let body = |media: &str, describe: Describe, components: &mut Components| {
            let content = ContentBuilder::new()
                .schema(Some(describe(components)))
                .build();
            RequestBodyBuilder::new()
                .content(media, content)
                .required(Some(Required::True))
                .build()
        };
        let takes_input = match self.input {
            Input::Nothing => false,
            Input::Json(describe) => {
                let body = body("application/json", describe, components);
                operation = operation.request_body(Some(body));
                true
            }
            Input::Form(describe) => {
                let body = body("application/x-www-form-urlencoded", describe, components);
                operation = operation.request_body(Some(body));
                true
            }
            Input::JsonOrForm(describe) => {
                let schema = describe(components);
                let mut request = RequestBodyBuilder::new().required(Some(Required::True));
                for media in [
                    "application/json",
                    "application/x-www-form-urlencoded",
                    "multipart/form-data",
                ] {
                    let content = ContentBuilder::new().schema(Some(schema.clone())).build();
                    request = request.content(media, content);
                }
                operation = operation.request_body(Some(request.build()));
                true
            }
            Input::Query(params) => {
                for p in params {
                    operation = operation.parameter(
                        ParameterBuilder::new()
                            .name(p.name)
                            .parameter_in(ParameterIn::Query)
                            .required(if p.required {
                                Required::True
                            } else {
                                Required::False
                            })
                            .description(Some(p.description))
                            .schema(Some((p.schema)(components))),
                    );
                }
                true
            }
        };
        let error = <AdminResult<()>>::describe(components);
        operation = match self.output {
            Output::Json(describe) => operation.response(
                "200",
                json_response(
                    "Success: the `{code,message,data}` envelope (code 200)",
                    describe(components),
                ),
            ),
            Output::Text(describe) => operation.response(
                "200",
                ResponseBuilder::new()
                    .description("Success")
                    .content(
                        "text/plain",
                        ContentBuilder::new()
                            .schema(Some(describe(components)))
                            .build(),
                    )
                    .build(),
            ),
            Output::Upgrade(describe) => operation.response(
                "101",
                json_response(
                    "Switching to a websocket; every text frame the admin sends is JSON of \
                     this schema",
                    describe(components),
                ),
            ),
        };
        let takes_body = !matches!(self.input, Input::Nothing | Input::Query(_));
        if takes_input {
            operation = operation.response(
                "400",
                json_response("Bad input; the message names the field", error.clone()),
            );
        }
        if takes_body {
            operation = operation.response(
                "413",
                json_response("Body over the 2 MiB limit (code 413)", error.clone()),
            );
        }
        if self.path == "/platform/login" {
            operation = operation
                .response(
                    "401",
                    json_response("Wrong user name or password (code 600)", error.clone()),
                )
                .response(
                    "429",
                    json_response(
                        "Too many failed logins for this user name or client address (code \
                         429); the `Retry-After` header gives the seconds to wait",
                        error.clone(),
                    ),
                );
        }
        if self.path.contains("{id}")
            || self.path.ends_with("Enabled")
            || self.path.ends_with("/enabled")
            || self.path == "/appAuth/detail"
        {
            operation = operation.response("404", json_response("Unknown id", error.clone()));
        }
        match self.access {
            Open => operation,
            Token => operation
                .response(
                    "401",
                    json_response("Missing, invalid or expired token (code 600)", error),
                )
                .security(SecurityRequirement::new("token", Vec::<String>::new())),
            SyncToken => operation
                .response(
                    "401",
                    ResponseBuilder::new()
                        .description("Wrong X-Shenyu-Sync-Token when --sync-token is set")
                        .build(),
                )
                .security(SecurityRequirement::new("syncToken", Vec::<String>::new())),
        }
        .build()
    }
}

/// The document.
pub(crate) fn document() -> OpenApi {
    let mut paths = PathsBuilder::new();
    let mut components = Components::new();
    for o in OPERATIONS {
        let operation = o.build(&mut components);
        paths = paths.path(o.path, PathItem::new(method(o.method), operation));
    }
    let components = ComponentsBuilder::new()
        .schemas_from_iter(components)
        .security_scheme(
            "token",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Access-Token"))),
        )
        .security_scheme(
            "syncToken",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Shenyu-Sync-Token"))),
        )
        .build();
    OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("gantry-admin")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(
                    "gantry's reference admin: the ShenYu 2.6.0 admin REST API, sync \
                     publishers and HTTP registration center",
                ))
                .build(),
        )
        .paths(paths.build())
        .components(Some(components))
        .build()
}

/// `GET /v3/api-docs`.
pub(crate) async fn api_docs() -> Json<OpenApi> {
    Json(document())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use model::{ConditionDto, PageParameter};
    use serde::Serialize;
    use serde::de::{self, DeserializeOwned, Deserializer, Visitor};

    use super::*;
    use crate::dto::{AuthParamDto, AuthPathDto, SearchCondition};

    /// A deserializer that only records the field names a struct's `Deserialize` asks for.
    struct FieldNames<'a>(&'a mut Option<&'static [&'static str]>);

    impl<'de> Deserializer<'de> for FieldNames<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = Some(fields);
            Err(de::Error::custom("recorded"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    /// The JSON field names `T`'s `Deserialize` reads.
    fn read_fields<T: DeserializeOwned>() -> BTreeSet<String> {
        let mut fields = None;
        let _ = T::deserialize(FieldNames(&mut fields));
        let fields = fields.expect("a struct without flatten");
        fields.iter().map(|f| (*f).to_owned()).collect()
    }

    /// The JSON field names `value` serialises with.
    fn written_fields(value: &impl Serialize) -> BTreeSet<String> {
        let value = serde_json::to_value(value).unwrap();
        value.as_object().unwrap().keys().cloned().collect()
    }

    /// The property names of an inline object schema.
    fn properties(schema: RefOr<Schema>) -> BTreeSet<String> {
        match schema {
            RefOr::T(Schema::Object(object)) => object.properties.keys().cloned().collect(),
            other => panic!(
                "not an inline object: {}",
                serde_json::to_string(&other).unwrap()
            ),
        }
    }

    fn check_read<T: DeserializeOwned + ToSchema>() {
        assert_eq!(properties(T::schema()), read_fields::<T>(), "{}", T::name());
    }

    fn check_written<T: Serialize + ToSchema>(sample: &T) {
        assert_eq!(
            properties(T::schema()),
            written_fields(sample),
            "{}",
            T::name()
        );
    }

    #[test]
    fn the_recorder_sees_serde_names() {
        let fields = read_fields::<SelectorDto>();
        assert!(
            fields.contains("type") && fields.contains("loged"),
            "{fields:?}"
        );
        assert!(!fields.contains("selector_type"), "{fields:?}");
    }

    #[test]
    fn request_schemas_name_the_fields_serde_reads() {
        check_read::<LoginRequest>();
        check_read::<PluginDto>();
        check_read::<SelectorDto>();
        check_read::<RuleDto>();
        check_read::<ConditionDto>();
        check_read::<BatchIds>();
        check_read::<BatchEnabled>();
        check_read::<SearchRequest>();
        check_read::<SearchCondition>();
        check_read::<MetaDataDto>();
        check_read::<AuthApplyDto>();
        check_read::<AppAuthDto>();
        check_read::<AuthParamDto>();
        check_read::<AuthPathDto>();
        check_read::<MetaDataRegister>();
        check_read::<UriRegister>();
    }

    #[test]
    fn response_schemas_name_the_fields_serde_writes() {
        let text = || Some("x".to_owned());
        check_written(&MetaDataVo {
            id: "1".to_owned(),
            app_name: text(),
            context_path: text(),
            path: "/p".to_owned(),
            path_desc: text(),
            rpc_type: text(),
            service_name: text(),
            method_name: text(),
            parameter_types: text(),
            rpc_ext: text(),
            rule_name: text(),
            enabled: true,
            namespace_id: "n".to_owned(),
            date_created: "d".to_owned(),
            date_updated: "d".to_owned(),
        });
        check_written(&AppAuthVo {
            id: "1".to_owned(),
            app_key: "k".to_owned(),
            app_secret: "s".to_owned(),
            user_id: text(),
            phone: text(),
            ext_info: text(),
            open: true,
            enabled: true,
            auth_param_list: vec![AuthParamDto::default()],
            auth_path_list: vec![AuthPathDto::default()],
            namespace_id: "n".to_owned(),
            date_created: "d".to_owned(),
            date_updated: "d".to_owned(),
        });
        check_written(&AuthParamDto::default());
        check_written(&AuthPathDto::default());
        check_written(&PageInfo::<()>::new(1, 1, vec![()]));
        check_written(&CommonPager::<()> {
            page: PageParameter::new(1, 1, 1),
            data_list: vec![()],
        });
        check_written(&AdminResult::success("ok", ()));
    }

    #[test]
    fn operation_ids_are_identifiers_and_unique() {
        assert_eq!(operation_id("GET", "/plugin/{id}"), "getPluginById");
        assert_eq!(
            operation_id("POST", "/shenyu-client/register-uri"),
            "postShenyuClientRegisterUri"
        );
        assert_eq!(operation_id("GET", "/v3/api-docs"), "getV3ApiDocs");
        let ids: BTreeSet<String> = OPERATIONS
            .iter()
            .map(|o| operation_id(o.method, o.path))
            .collect();
        assert_eq!(ids.len(), OPERATIONS.len());
        for id in &ids {
            assert!(id.chars().all(|c| c.is_ascii_alphanumeric()), "{id}");
        }
    }

    #[test]
    fn composed_components_replace_the_generic_field() {
        let mut components = Components::new();
        let reference = <AdminResult<CommonPager<PluginVo>>>::describe(&mut components);
        let RefOr::Ref(reference) = reference else {
            panic!("a $ref")
        };
        assert_eq!(
            reference.ref_location,
            "#/components/schemas/AdminResult_CommonPager_PluginVo"
        );
        let json = serde_json::to_value(&components).unwrap();
        assert_eq!(
            json["AdminResult_CommonPager_PluginVo"]["properties"]["data"]["$ref"],
            "#/components/schemas/CommonPager_PluginVo"
        );
        assert_eq!(
            json["CommonPager_PluginVo"]["properties"]["dataList"]["items"]["$ref"],
            "#/components/schemas/PluginVo"
        );
        assert!(json["PluginVo"].is_object() && json["PageParameter"].is_object());
    }
}
