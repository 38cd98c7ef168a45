//! The table of every operation the admin serves, [`OPERATIONS`]: method, path, tag,
//! summary, who may call it ([`Access`]), what it takes ([`Input`]), what it answers
//! ([`Output`]) and whether it can miss an id ([`Operation::by_id`]). The document builder
//! derives each operation's responses from these declarations alone.

use model::{
    AdminResult, BatchEnabled, BatchIds, CommonPager, ConfigGroup, DigestReport, LoginRequest,
    LoginResponse, MetaDataRegister, PluginVo, RuleDto, RuleVo, SelectorDto, SelectorVo,
    SyncStatusReport, UriRegister, WebsocketData,
};

use super::schema::doc::{ApiDocument, FetchData, Health, IdList, ListenerForm, RegisterAnswer};
use super::schema::{Describe, Described};
use crate::dto::{
    AppAuthDto, AppAuthVo, AuthApplyDto, MetaDataDto, MetaDataVo, PageInfo, PluginDto,
    PluginHandleDto, PluginHandleVo, SearchRequest,
};

/// Who may call an operation; it decides the operation's 401 (and 429) answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Anyone.
    Open,
    /// Anyone, with a user name and password: a wrong pair answers 401, too many wrong ones
    /// 429.
    Login,
    /// A login token in `X-Access-Token`.
    Token,
    /// The websocket sync token, when one is configured.
    SyncToken,
}

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
    pub(super) name: &'static str,
    pub(super) schema: Describe,
    pub(super) required: bool,
    pub(super) description: &'static str,
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
    pub(super) tag: &'static str,
    pub(super) summary: &'static str,
    pub(super) access: Access,
    pub(super) input: Input,
    pub(super) output: Output,
    /// Whether the operation names stored records by id (in its path or body), so that an
    /// unknown id answers 404.
    pub(super) by_id: bool,
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
        by_id: false,
    }
}

impl Operation {
    /// The operation names stored records by id: an unknown one answers 404.
    const fn by_id(self) -> Self {
        Self {
            by_id: true,
            ..self
        }
    }
}

use Access::{Login, Open, SyncToken, Token};
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
        Login,
        json::<LoginRequest>(),
        answers::<AdminResult<LoginResponse>>(),
    ),
    op(
        "GET",
        "/platform/login",
        "auth",
        "Log in with query parameters (ShenYu's deprecated form, its only one up to 2.7.1)",
        Login,
        query(&[
            param::<String>("userName", "The user name"),
            param::<String>("password", "The password"),
        ]),
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
        "/gantry/sync-status",
        "gantry",
        "Sync status of every gateway (SYNCED, NOT SENT, SENT, STALE, UNKNOWN)",
        Open,
        Nothing,
        answers::<SyncStatusReport>(),
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
    )
    .by_id(),
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
    )
    .by_id(),
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
    )
    .by_id(),
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
    )
    .by_id(),
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
    )
    .by_id(),
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
    )
    .by_id(),
    op(
        "PUT",
        "/selector/{id}",
        "selector",
        "Replace a selector",
        Token,
        json::<SelectorDto>(),
        answers::<AdminResult<i32>>(),
    )
    .by_id(),
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
    )
    .by_id(),
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
    )
    .by_id(),
    op(
        "PUT",
        "/rule/{id}",
        "rule",
        "Replace a rule",
        Token,
        json::<RuleDto>(),
        answers::<AdminResult<i32>>(),
    )
    .by_id(),
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
    )
    .by_id(),
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
    )
    .by_id(),
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
    )
    .by_id(),
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
    )
    .by_id(),
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
    )
    .by_id(),
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
