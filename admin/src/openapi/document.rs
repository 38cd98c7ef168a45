//! The document builder: each [`Operation`] of the table becomes an OpenAPI operation whose
//! parameters, request body and responses follow from its declarations (its [`Access`] gives
//! the 401/429 answers and the security requirement, [`Operation::by_id`] the 404, its input
//! the 400 and 413), and [`document`] puts them together with the components and security
//! schemes.

use axum::Json;
use model::AdminResult;
use utoipa::PartialSchema;
use utoipa::openapi::path::{OperationBuilder, ParameterBuilder, ParameterIn};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, HttpMethod, InfoBuilder, OpenApi, OpenApiBuilder, PathItem,
    PathsBuilder, RefOr, Required,
};

use super::operations::{Access, Input, OPERATIONS, Operation, Output};
use super::schema::{Components, Describe, Described};

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
pub(super) fn operation_id(method: &str, path: &str) -> String {
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
        if self.access == Access::Login {
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
        if self.by_id {
            operation = operation.response("404", json_response("Unknown id", error.clone()));
        }
        match self.access {
            Access::Open | Access::Login => operation,
            Access::Token => operation
                .response(
                    "401",
                    json_response("Missing, invalid or expired token (code 600)", error),
                )
                .security(SecurityRequirement::new("token", Vec::<String>::new())),
            Access::SyncToken => operation
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
