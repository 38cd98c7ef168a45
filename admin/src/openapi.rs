//! `GET /v3/api-docs`: an OpenAPI 3.1 description of the admin's HTTP API, built from one
//! table of operations (a test checks that every operation listed is routed).

use axum::Json;
use utoipa::openapi::path::{OperationBuilder, ParameterBuilder, ParameterIn};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, HttpMethod, InfoBuilder, OpenApi, OpenApiBuilder, PathItem,
    PathsBuilder, Required,
};

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

/// One documented operation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Operation {
    pub(crate) method: &'static str,
    pub(crate) path: &'static str,
    tag: &'static str,
    summary: &'static str,
    access: Access,
    /// Whether it takes a JSON (or, for the listener, form) body.
    body: bool,
}

const fn op(
    method: &'static str,
    path: &'static str,
    tag: &'static str,
    summary: &'static str,
    access: Access,
    body: bool,
) -> Operation {
    Operation {
        method,
        path,
        tag,
        summary,
        access,
        body,
    }
}

use Access::{Open, SyncToken, Token};

/// Every operation the admin serves (ShenYu 2.6.0 paths).
pub(crate) const OPERATIONS: &[Operation] = &[
    op(
        "POST",
        "/platform/login",
        "auth",
        "Log in; the token goes in X-Access-Token",
        Open,
        true,
    ),
    op("GET", "/actuator/health", "actuator", "Health", Open, false),
    op(
        "GET",
        "/actuator/digest",
        "actuator",
        "Digest of the committed config",
        Open,
        false,
    ),
    op(
        "GET",
        "/v3/api-docs",
        "actuator",
        "This document",
        Open,
        false,
    ),
    op(
        "GET",
        "/plugin",
        "plugin",
        "Paged plugins (name, enabled filters)",
        Token,
        false,
    ),
    op("GET", "/plugin/all", "plugin", "All plugins", Token, false),
    op("GET", "/plugin/{id}", "plugin", "One plugin", Token, false),
    op(
        "PUT",
        "/plugin/{id}",
        "plugin",
        "Update role, sort, enabled, config",
        Token,
        true,
    ),
    op(
        "POST",
        "/plugin/enabled",
        "plugin",
        "Batch enable or disable plugins",
        Token,
        true,
    ),
    op(
        "GET",
        "/selector",
        "selector",
        "Paged selectors (pluginId, name)",
        Token,
        false,
    ),
    op(
        "POST",
        "/selector",
        "selector",
        "Create a selector; answers its id",
        Token,
        true,
    ),
    op(
        "GET",
        "/selector/{id}",
        "selector",
        "One selector",
        Token,
        false,
    ),
    op(
        "PUT",
        "/selector/{id}",
        "selector",
        "Replace a selector",
        Token,
        true,
    ),
    op(
        "DELETE",
        "/selector/batch",
        "selector",
        "Delete selectors and their rules",
        Token,
        true,
    ),
    op(
        "POST",
        "/selector/list/search",
        "selector",
        "PageInfo search (keyword, plugin ids)",
        Token,
        true,
    ),
    op(
        "POST",
        "/selector/batchEnabled",
        "selector",
        "Batch enable or disable selectors",
        Token,
        true,
    ),
    op(
        "GET",
        "/rule",
        "rule",
        "Paged rules (selectorId, name)",
        Token,
        false,
    ),
    op(
        "POST",
        "/rule",
        "rule",
        "Create a rule; answers a count",
        Token,
        true,
    ),
    op("GET", "/rule/{id}", "rule", "One rule", Token, false),
    op("PUT", "/rule/{id}", "rule", "Replace a rule", Token, true),
    op("DELETE", "/rule/batch", "rule", "Delete rules", Token, true),
    op(
        "POST",
        "/rule/list/search",
        "rule",
        "PageInfo search (keyword, selector ids)",
        Token,
        true,
    ),
    op(
        "POST",
        "/rule/batchEnabled",
        "rule",
        "Batch enable or disable rules",
        Token,
        true,
    ),
    op(
        "GET",
        "/meta-data/queryList",
        "meta-data",
        "Paged metadata (path filter)",
        Token,
        false,
    ),
    op(
        "GET",
        "/meta-data/findAll",
        "meta-data",
        "All metadata",
        Token,
        false,
    ),
    op(
        "GET",
        "/meta-data/{id}",
        "meta-data",
        "One metadata entry",
        Token,
        false,
    ),
    op(
        "POST",
        "/meta-data/createOrUpdate",
        "meta-data",
        "Create or update metadata",
        Token,
        true,
    ),
    op(
        "DELETE",
        "/meta-data/batchDeleted",
        "meta-data",
        "Delete metadata",
        Token,
        true,
    ),
    op(
        "POST",
        "/meta-data/batchEnabled",
        "meta-data",
        "Batch enable or disable metadata",
        Token,
        true,
    ),
    op(
        "POST",
        "/appAuth/apply",
        "appAuth",
        "Create app credentials",
        Token,
        true,
    ),
    op(
        "GET",
        "/appAuth/findPageByQuery",
        "appAuth",
        "Paged app auth (appKey, phone)",
        Token,
        false,
    ),
    op(
        "GET",
        "/appAuth/detail",
        "appAuth",
        "One app auth entry (?id=)",
        Token,
        false,
    ),
    op(
        "POST",
        "/appAuth/updateDetail",
        "appAuth",
        "Update an app auth entry",
        Token,
        true,
    ),
    op(
        "POST",
        "/appAuth/batchDelete",
        "appAuth",
        "Delete app auth entries (array of ids)",
        Token,
        true,
    ),
    op(
        "POST",
        "/appAuth/batchEnabled",
        "appAuth",
        "Batch enable or disable app auth",
        Token,
        true,
    ),
    op(
        "POST",
        "/shenyu-client/register-metadata",
        "registration",
        "Register an API (answers `success`)",
        Token,
        true,
    ),
    op(
        "POST",
        "/shenyu-client/register-uri",
        "registration",
        "Register or take offline an instance address",
        Token,
        true,
    ),
    op(
        "POST",
        "/shenyu-client/offline",
        "registration",
        "Take an instance address offline",
        Token,
        true,
    ),
    op(
        "GET",
        "/configs/fetch",
        "sync",
        "HTTP long-poll sync: groups with md5 and lastModifyTime (--sync http)",
        Token,
        false,
    ),
    op(
        "POST",
        "/configs/listener",
        "sync",
        "HTTP long-poll sync: changed groups, held until one changes (--sync http)",
        Token,
        true,
    ),
    op(
        "GET",
        "/websocket",
        "sync",
        "Websocket sync (--sync websocket)",
        SyncToken,
        false,
    ),
];

fn method(name: &str) -> HttpMethod {
    match name {
        "GET" => HttpMethod::Get,
        "POST" => HttpMethod::Post,
        "PUT" => HttpMethod::Put,
        "DELETE" => HttpMethod::Delete,
        other => unreachable!("no operation uses {other}"),
    }
}

fn response(description: &str) -> utoipa::openapi::Response {
    ResponseBuilder::new().description(description).build()
}

/// The document.
pub(crate) fn document() -> OpenApi {
    let mut paths = PathsBuilder::new();
    for o in OPERATIONS {
        let mut operation = OperationBuilder::new()
            .tag(o.tag)
            .summary(Some(o.summary))
            .response(
                "200",
                response("Success: the `{code,message,data}` envelope (code 200)"),
            );
        if o.path.contains("{id}") {
            operation = operation.parameter(
                ParameterBuilder::new()
                    .name("id")
                    .parameter_in(ParameterIn::Path)
                    .required(Required::True),
            );
        }
        if o.body {
            let content = ContentBuilder::new().build();
            let media = if o.path == "/configs/listener" {
                "application/x-www-form-urlencoded"
            } else {
                "application/json"
            };
            operation = operation.request_body(Some(
                RequestBodyBuilder::new().content(media, content).build(),
            ));
            operation =
                operation.response("400", response("Bad input; the message names the field"));
        }
        if o.path.contains("{id}") || o.path.ends_with("Enabled") || o.path == "/plugin/enabled" {
            operation = operation.response("404", response("Unknown id"));
        }
        operation = match o.access {
            Open => operation,
            Token => operation
                .response(
                    "401",
                    response("Missing, invalid or expired token (code 600)"),
                )
                .security(SecurityRequirement::new("token", Vec::<String>::new())),
            SyncToken => operation
                .response(
                    "401",
                    response("Wrong X-Shenyu-Sync-Token when --sync-token is set"),
                )
                .security(SecurityRequirement::new("syncToken", Vec::<String>::new())),
        };
        paths = paths.path(o.path, PathItem::new(method(o.method), operation));
    }
    let components = ComponentsBuilder::new()
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
