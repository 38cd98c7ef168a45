//! `GET /v3/api-docs`: an OpenAPI document whose every operation is routed, whose every
//! request and response carries a schema, and whose schemas name the fields serde writes and
//! reads (checked on sample values and on the admin's live answers).

use std::collections::BTreeSet;

use crate::common::{Client, Served, rule_body, selector_body};
use model::{
    AppAuthData, AuthParamData, AuthPathData, BatchEnabled, BatchIds, ConditionData, ConditionDto,
    ConfigGroup, DataEventType, DigestReport, LoginRequest, LoginResponse, MatchMode, MetaData,
    PageParameter, PluginData, PluginVo, RuleData, RuleDto, RuleVo, SelectorData, SelectorDto,
    SelectorType, SelectorVo, SyncMode, WebsocketData,
};
use reqwest::Method;
use serde::Serialize;
use serde_json::{Value, json};

fn config() -> admin::Config {
    admin::Config {
        sync: vec![SyncMode::Websocket, SyncMode::Http],
        ..admin::Config::new(":memory:")
    }
}

async fn document(served: &Served) -> Value {
    reqwest::get(served.url("/v3/api-docs"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `(method, path, operation)` for every documented operation.
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut all = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            all.push((method.to_uppercase(), path.clone(), operation));
        }
    }
    all
}

/// The component a `$ref` names.
fn resolve<'a>(doc: &'a Value, reference: &Value) -> &'a Value {
    let name = reference
        .as_str()
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
        .unwrap_or_else(|| panic!("not a schema reference: {reference}"));
    let schema = &doc["components"]["schemas"][name];
    assert!(schema.is_object(), "dangling reference {reference}");
    schema
}

/// Every `$ref` under `value`.
fn references(value: &Value, found: &mut Vec<Value>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "$ref" {
                    found.push(value.clone());
                } else {
                    references(value, found);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, found)),
        _ => {}
    }
}

/// Checks `value` against `schema`: types, enums, `oneOf` (exactly one), items, required
/// properties, and no property the schema does not declare.
fn validate(doc: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    if let Some(reference) = schema.get("$ref") {
        return validate(doc, resolve(doc, reference), value, at);
    }
    if let Some(one_of) = schema.get("oneOf") {
        let matching: Vec<usize> = one_of
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .filter(|(_, s)| validate(doc, s, value, at).is_ok())
            .map(|(i, _)| i)
            .collect();
        if matching.len() != 1 {
            return Err(format!(
                "{at}: {value} matches {} alternatives of {schema}",
                matching.len()
            ));
        }
    }
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap()).collect(),
            other => panic!("bad type {other}"),
        };
        let fits = |t: &str| match t {
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            "object" => value.is_object(),
            "array" => value.is_array(),
            other => panic!("unknown type {other}"),
        };
        if !types.iter().any(|t| fits(t)) {
            return Err(format!("{at}: {value} is not of type {types:?}"));
        }
    }
    if let Some(values) = schema.get("enum")
        && !values.as_array().unwrap().contains(value)
    {
        return Err(format!("{at}: {value} is not one of {values}"));
    }
    if let (Value::Object(map), Some(properties)) = (value, schema.get("properties")) {
        for (key, item) in map {
            let Some(property) = properties.get(key) else {
                return Err(format!("{at}: `{key}` is not a documented property"));
            };
            validate(doc, property, item, &format!("{at}.{key}"))?;
        }
        for name in schema["required"].as_array().into_iter().flatten() {
            if !map.contains_key(name.as_str().unwrap()) {
                return Err(format!("{at}: required `{name}` is missing"));
            }
        }
    }
    if let (Value::Array(items), Some(schema)) = (value, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            validate(doc, schema, item, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// The 200 schema of `method path`.
fn success_schema<'a>(doc: &'a Value, method: &str, path: &str) -> &'a Value {
    let responses = &doc["paths"][path][method.to_lowercase()]["responses"];
    let content = responses["200"]["content"].as_object().unwrap_or_else(|| {
        panic!("{method} {path}: no 200 content");
    });
    &content.values().next().unwrap()["schema"]
}

#[tokio::test]
async fn every_documented_operation_exists() {
    let served = Served::start(config()).await;
    let doc = document(&served).await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    assert_eq!(doc["info"]["title"], "gantry-admin");
    assert_eq!(
        doc["components"]["securitySchemes"]["token"]["name"],
        "X-Access-Token"
    );
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 30, "{}", paths.len());
    let client = reqwest::Client::new();
    let mut checked = 0;
    for (path, item) in paths {
        for (method, operation) in item.as_object().unwrap() {
            let url = served.url(&path.replace("{id}", "1"));
            let response = client
                .request(method.to_uppercase().parse().unwrap(), url)
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            assert!(
                status != 405 && body["message"] != "no such endpoint",
                "{method} {path} is documented but not routed ({status} {body})"
            );
            if operation["security"]
                .as_array()
                .is_some_and(|s| s.iter().any(|r| r.get("token").is_some()))
            {
                assert_eq!(status, 401, "{method} {path} needs a token");
                let schema =
                    &operation["responses"]["401"]["content"]["application/json"]["schema"];
                validate(&doc, schema, &body, &format!("{method} {path} 401")).unwrap();
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked}");
    served.stop().await;
}

#[tokio::test]
async fn every_operation_has_request_and_response_schemas() {
    let served = Served::start(config()).await;
    let doc = document(&served).await;
    served.stop().await;

    let mut found = Vec::new();
    references(&doc, &mut found);
    assert!(found.len() > 50, "{}", found.len());
    for reference in &found {
        resolve(&doc, reference);
    }

    let paged_lists = [
        "/plugin",
        "/selector",
        "/rule",
        "/meta-data/queryList",
        "/appAuth/findPageByQuery",
    ];
    for (method, path, operation) in operations(&doc) {
        let what = format!("{method} {path}");
        if let Some(body) = operation.get("requestBody") {
            let content = body["content"].as_object().unwrap();
            assert!(!content.is_empty(), "{what}");
            if path == "/configs/listener" {
                assert!(
                    content.contains_key("application/x-www-form-urlencoded"),
                    "{what}"
                );
            }
            for (media, content) in content {
                assert!(
                    [
                        "application/json",
                        "application/x-www-form-urlencoded",
                        "multipart/form-data"
                    ]
                    .contains(&media.as_str()),
                    "{what}: {media}"
                );
                let reference = &content["schema"]["$ref"];
                assert!(reference.is_string(), "{what}: body schema is not a $ref");
                let component = resolve(&doc, reference);
                assert!(
                    component.get("properties").is_some() || component.get("oneOf").is_some(),
                    "{what}: body schema has no fields: {component}"
                );
            }
            assert_eq!(body["required"], true, "{what}");
        } else {
            assert!(method == "GET", "{what}: only GET operations take no body");
        }

        let responses = &operation["responses"];
        if path == "/websocket" {
            let schema = &responses["101"]["content"]["application/json"]["schema"];
            assert_eq!(
                resolve(&doc, &schema["$ref"])["properties"]["groupType"]["$ref"],
                "#/components/schemas/ConfigGroup"
            );
            continue;
        }
        let content = responses["200"]["content"]
            .as_object()
            .unwrap_or_else(|| panic!("{what}: no 200 content"));
        assert_eq!(content.len(), 1, "{what}");
        let (media, content) = content.iter().next().unwrap();
        let schema = &content["schema"];
        if path.starts_with("/shenyu-client/") {
            assert_eq!(media, "text/plain", "{what}");
        } else {
            assert_eq!(media, "application/json", "{what}");
        }
        let schema = match schema.get("$ref") {
            Some(reference) => resolve(&doc, reference),
            None => schema,
        };
        assert!(
            schema.get("type").is_some() || schema.get("oneOf").is_some(),
            "{what}: empty 200 schema {schema}"
        );
        if schema["properties"].get("code").is_some() {
            assert_eq!(
                schema["required"],
                json!(["code", "message", "data"]),
                "{what}: envelope"
            );
        }

        for parameter in operation["parameters"].as_array().into_iter().flatten() {
            let name = parameter["name"].as_str().unwrap();
            assert!(
                parameter["schema"].get("type").is_some(),
                "{what}: parameter {name} has no type"
            );
            match parameter["in"].as_str().unwrap() {
                "path" => assert!(path.contains(&format!("{{{name}}}")), "{what}: {name}"),
                "query" => assert_eq!(method, "GET", "{what}: {name}"),
                other => panic!("{what}: parameter in {other}"),
            }
        }
        if method == "GET" && paged_lists.contains(&path.as_str()) {
            let parameters = operation["parameters"].as_array().unwrap();
            for name in ["currentPage", "pageSize"] {
                let parameter = parameters
                    .iter()
                    .find(|p| p["name"] == name)
                    .unwrap_or_else(|| panic!("{what}: no {name}"));
                assert_eq!(parameter["schema"]["type"], "integer", "{what}: {name}");
            }
        }
    }
}

/// Every typed query parameter is really read: a value of the wrong type is refused, naming
/// the parameter; a required one cannot be left out.
#[tokio::test]
async fn query_parameters_are_read_as_documented() {
    let served = Served::start(config()).await;
    let doc = document(&served).await;
    let client = Client::login(&served).await;
    let mut checked = 0;
    for (method, path, operation) in operations(&doc) {
        for parameter in operation["parameters"].as_array().into_iter().flatten() {
            if parameter["in"] != "query" {
                continue;
            }
            let name = parameter["name"].as_str().unwrap();
            let typed = ["integer", "boolean", "array"]
                .contains(&parameter["schema"]["type"].as_str().unwrap());
            let mut queries = Vec::new();
            if typed {
                queries.push(format!("{name}=x"));
            }
            if parameter["required"] == true {
                queries.push(String::new());
            }
            for query in queries {
                let (status, body) = client
                    .send(
                        method.parse().unwrap(),
                        &format!("{}?{query}", path.replace("{id}", "1")),
                        None,
                    )
                    .await;
                assert_eq!(status, 400, "{method} {path}?{query}: {body}");
                assert!(
                    body["message"].as_str().unwrap().starts_with(name),
                    "{method} {path}?{query}: {body}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 13, "{checked}");
    served.stop().await;
}

/// The property names of component `name`.
fn properties(doc: &Value, name: &str) -> BTreeSet<String> {
    doc["components"]["schemas"][name]["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no component {name}"))
        .keys()
        .cloned()
        .collect()
}

/// The keys `value` serialises with.
fn keys(value: &impl Serialize) -> BTreeSet<String> {
    serde_json::to_value(value)
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

/// A sample value with every field set (so that none is skipped) for each wire type; its
/// keys must be exactly the component's properties.
#[tokio::test]
async fn model_schemas_name_the_fields_serde_writes() {
    let served = Served::start(config()).await;
    let doc = document(&served).await;
    served.stop().await;
    let text = || Some("x".to_owned());
    let condition = ConditionDto {
        id: text(),
        param_type_name: text(),
        operator_name: text(),
        ..ConditionDto::new("uri", "=", "/", "/x")
    };
    let condition_data = ConditionData::new("uri", "=", "/", "/x");
    let samples: Vec<(&str, BTreeSet<String>)> = vec![
        ("ConditionDto", keys(&condition)),
        (
            "SelectorDto",
            keys(&SelectorDto {
                id: text(),
                plugin_id: text(),
                name: text(),
                selector_type: Some(1),
                match_mode: Some(0),
                sort: Some(1),
                enabled: Some(true),
                loged: Some(true),
                continued: Some(true),
                match_restful: Some(false),
                handle: text(),
                selector_conditions: Some(vec![condition.clone()]),
                namespace_id: text(),
            }),
        ),
        (
            "RuleDto",
            keys(&RuleDto {
                id: text(),
                selector_id: text(),
                name: text(),
                match_mode: Some(0),
                sort: Some(1),
                enabled: Some(true),
                loged: Some(true),
                match_restful: Some(false),
                handle: text(),
                rule_conditions: Some(vec![condition.clone()]),
                namespace_id: text(),
            }),
        ),
        (
            "PluginVo",
            keys(&PluginVo {
                id: "5".to_owned(),
                name: "divide".to_owned(),
                role: "Proxy".to_owned(),
                sort: 200,
                enabled: true,
                config: text(),
                date_created: "d".to_owned(),
                date_updated: "d".to_owned(),
            }),
        ),
        (
            "SelectorVo",
            keys(&SelectorVo {
                id: "1".to_owned(),
                plugin_id: "5".to_owned(),
                name: "n".to_owned(),
                match_mode: 0,
                match_mode_name: "and".to_owned(),
                selector_type: 1,
                type_name: "custom".to_owned(),
                sort: 1,
                enabled: true,
                loged: true,
                continued: true,
                match_restful: false,
                handle: text(),
                selector_conditions: vec![condition.clone()],
                namespace_id: "n".to_owned(),
                date_created: "d".to_owned(),
                date_updated: "d".to_owned(),
            }),
        ),
        (
            "RuleVo",
            keys(&RuleVo {
                id: "1".to_owned(),
                selector_id: "1".to_owned(),
                name: "n".to_owned(),
                match_mode: 0,
                match_mode_name: "and".to_owned(),
                sort: 1,
                enabled: true,
                loged: true,
                match_restful: false,
                handle: text(),
                rule_conditions: vec![condition.clone()],
                namespace_id: "n".to_owned(),
                date_created: "d".to_owned(),
                date_updated: "d".to_owned(),
            }),
        ),
        (
            "BatchEnabled",
            keys(&BatchEnabled {
                ids: Some(vec!["1".to_owned()]),
                enabled: Some(true),
                namespace_id: text(),
            }),
        ),
        (
            "BatchIds",
            keys(&BatchIds {
                ids: Some(vec!["1".to_owned()]),
                namespace_id: text(),
            }),
        ),
        (
            "LoginRequest",
            keys(&LoginRequest {
                user_name: "admin".to_owned(),
                password: "p".to_owned(),
            }),
        ),
        (
            "LoginResponse",
            keys(&LoginResponse {
                id: "1".to_owned(),
                user_name: "admin".to_owned(),
                role: 1,
                enabled: true,
                token: "t".to_owned(),
                expired_time: 1,
            }),
        ),
        ("PageParameter", keys(&PageParameter::new(1, 1, 1))),
        (
            "PluginData",
            keys(&PluginData {
                config: text(),
                role: text(),
                plugin_jar: text(),
                namespace_id: text(),
                ..PluginData::default()
            }),
        ),
        (
            "SelectorData",
            keys(&SelectorData {
                namespace_id: text(),
                handle: text(),
                match_mode: MatchMode::Or,
                selector_type: SelectorType::FullFlow,
                condition_list: vec![condition_data.clone()],
                before_condition_list: vec![condition_data.clone()],
                ..SelectorData::default()
            }),
        ),
        (
            "RuleData",
            keys(&RuleData {
                namespace_id: text(),
                handle: text(),
                condition_data_list: vec![condition_data.clone()],
                before_condition_data_list: vec![condition_data.clone()],
                ..RuleData::default()
            }),
        ),
        ("ConditionData", keys(&condition_data)),
        (
            "MetaData",
            keys(&MetaData {
                app_name: text(),
                context_path: text(),
                rpc_type: text(),
                service_name: text(),
                method_name: text(),
                parameter_types: text(),
                rpc_ext: text(),
                namespace_id: text(),
                ..MetaData::default()
            }),
        ),
        (
            "AppAuthData",
            keys(&AppAuthData {
                namespace_id: text(),
                ..AppAuthData::default()
            }),
        ),
        ("AuthParamData", keys(&AuthParamData::default())),
        ("AuthPathData", keys(&AuthPathData::default())),
        (
            "DigestReport",
            keys(&DigestReport::from(&model::ConfigSet::default())),
        ),
        (
            "WebsocketData",
            keys(&WebsocketData {
                group_type: ConfigGroup::Plugin,
                event_type: DataEventType::Myself,
                data: vec![],
            }),
        ),
    ];
    for (name, written) in samples {
        assert_eq!(properties(&doc, name), written, "{name}");
    }
    // ShenYu's spellings survive: `loged` on rules and the admin DTOs, `logged` on
    // SelectorData, `type` for the selector type.
    assert!(properties(&doc, "RuleDto").contains("loged"));
    assert!(properties(&doc, "SelectorData").contains("logged"));
    assert!(properties(&doc, "SelectorDto").contains("type"));
}

/// The admin's real answers, success and error, fit the schemas the document gives them.
#[tokio::test]
async fn live_answers_fit_their_schemas() {
    let served = Served::start(config()).await;
    let doc = document(&served).await;
    let client = Client::login(&served).await;
    let mut checked = BTreeSet::new();
    let mut call = async |method: Method, path: &str, documented: &str, body: Option<Value>| {
        let (status, answer) = client.send(method.clone(), path, body).await;
        assert_eq!(status, 200, "{method} {path}: {answer}");
        let schema = success_schema(&doc, method.as_str(), documented);
        validate(&doc, schema, &answer, &format!("{method} {path}")).unwrap();
        checked.insert(format!("{method} {documented}"));
        answer
    };

    let selector = call(
        Method::POST,
        "/selector",
        "/selector",
        Some(selector_body("openapi")),
    )
    .await["data"]
        .as_str()
        .unwrap()
        .to_owned();
    call(
        Method::POST,
        "/rule",
        "/rule",
        Some(rule_body(&selector, "openapi")),
    )
    .await;
    let rules = call(
        Method::GET,
        &format!("/rule?selectorId={selector}&currentPage=1&pageSize=5"),
        "/rule",
        None,
    )
    .await;
    let rule = rules["data"]["dataList"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let meta = call(
        Method::POST,
        "/meta-data/createOrUpdate",
        "/meta-data/createOrUpdate",
        Some(
            json!({"appName":"http-demo","contextPath":"/http","path":"/http/order/find",
                    "pathDesc":"find","rpcType":"http","serviceName":"org.example.Order",
                    "methodName":"find","ruleName":"/http/order/find",
                    "parameterTypes":"java.lang.String","enabled":true}),
        ),
    )
    .await["data"]
        .as_str()
        .unwrap()
        .to_owned();
    let app_auth = call(
        Method::POST,
        "/appAuth/apply",
        "/appAuth/apply",
        Some(
            json!({"userId":"u1","appName":"shop","phone":"123","appParam":"p=1",
                    "extInfo":"x","open":true,"pathList":["/http/order/**"]}),
        ),
    )
    .await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    for (path, documented) in [
        ("/plugin?name=divide&enabled=true".to_owned(), "/plugin"),
        ("/plugin/all".to_owned(), "/plugin/all"),
        ("/plugin/5".to_owned(), "/plugin/{id}"),
        ("/selector?pluginId=5".to_owned(), "/selector"),
        (format!("/selector/{selector}"), "/selector/{id}"),
        (format!("/rule/{rule}"), "/rule/{id}"),
        (
            "/meta-data/queryList?path=order".to_owned(),
            "/meta-data/queryList",
        ),
        ("/meta-data/findAll".to_owned(), "/meta-data/findAll"),
        (format!("/meta-data/{meta}"), "/meta-data/{id}"),
        (
            "/appAuth/findPageByQuery?appKey=&phone=123".to_owned(),
            "/appAuth/findPageByQuery",
        ),
        (format!("/appAuth/detail?id={app_auth}"), "/appAuth/detail"),
        (
            "/configs/fetch?groupKeys=PLUGIN,SELECTOR,RULE,META_DATA&groupKeys=APP_AUTH".to_owned(),
            "/configs/fetch",
        ),
        ("/actuator/digest".to_owned(), "/actuator/digest"),
        ("/actuator/health".to_owned(), "/actuator/health"),
        ("/v3/api-docs".to_owned(), "/v3/api-docs"),
    ] {
        call(Method::GET, &path, documented, None).await;
    }
    let search = json!({"pageNum": 1, "pageSize": 5, "condition": {"keyword": "openapi"}});
    for path in ["/selector/list/search", "/rule/list/search"] {
        let answer = call(Method::POST, path, path, Some(search.clone())).await;
        assert_eq!(answer["data"]["total"], 1, "{path}");
    }
    call(
        Method::PUT,
        "/plugin/5",
        "/plugin/{id}",
        Some(json!({"role": "Proxy", "sort": 200, "enabled": true})),
    )
    .await;
    call(
        Method::PUT,
        &format!("/selector/{selector}"),
        "/selector/{id}",
        Some(selector_body("openapi")),
    )
    .await;
    call(
        Method::PUT,
        &format!("/rule/{rule}"),
        "/rule/{id}",
        Some(rule_body(&selector, "openapi")),
    )
    .await;
    for (path, id) in [
        ("/plugin/enabled", "5"),
        ("/selector/batchEnabled", selector.as_str()),
        ("/rule/batchEnabled", rule.as_str()),
        ("/meta-data/batchEnabled", meta.as_str()),
        ("/appAuth/batchEnabled", app_auth.as_str()),
    ] {
        call(
            Method::POST,
            path,
            path,
            Some(json!({"ids": [id], "enabled": true})),
        )
        .await;
    }

    // The listener answers at once for a group whose md5 the client has wrong.
    let response = client
        .request(Method::POST, "/configs/listener")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("PLUGIN=0123,0&namespaceId=x")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    validate(
        &doc,
        success_schema(&doc, "POST", "/configs/listener"),
        &answer,
        "listener",
    )
    .unwrap();
    assert_eq!(answer["data"], json!(["PLUGIN"]));

    let response = client
        .request(Method::POST, "/shenyu-client/register-uri")
        .json(
            &json!({"protocol":"http://","appName":"http-demo","contextPath":"/http",
                      "rpcType":"http","host":"127.0.0.1","port":8189,"eventType":"REGISTER"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = Value::String(response.text().await.unwrap());
    validate(
        &doc,
        success_schema(&doc, "POST", "/shenyu-client/register-uri"),
        &text,
        "register-uri",
    )
    .unwrap();

    // Errors: the envelope with `data: null`, for each documented error status.
    let (status, answer) = client
        .send(Method::POST, "/selector", Some(json!({"sort": "x"})))
        .await;
    assert_eq!(status, 400);
    let schema = &doc["paths"]["/selector"]["post"]["responses"]["400"]["content"]["application/json"]
        ["schema"];
    validate(&doc, schema, &answer, "400").unwrap();
    let (status, answer) = client.send(Method::GET, "/selector/nope", None).await;
    assert_eq!(status, 404);
    let schema = &doc["paths"]["/selector/{id}"]["get"]["responses"]["404"]["content"]["application/json"]
        ["schema"];
    validate(&doc, schema, &answer, "404").unwrap();

    // Deletes last.
    for (method, path, body) in [
        (Method::DELETE, "/rule/batch", json!({"ids": [rule]})),
        (
            Method::DELETE,
            "/selector/batch",
            json!({"ids": [selector]}),
        ),
        (
            Method::DELETE,
            "/meta-data/batchDeleted",
            json!({"ids": [meta]}),
        ),
        (Method::POST, "/appAuth/batchDelete", json!([app_auth])),
    ] {
        let answer = call(method, path, path, Some(body)).await;
        assert_eq!(answer["data"], 1, "{path}");
    }
    assert!(checked.len() >= 30, "{}: {checked:?}", checked.len());
    served.stop().await;
}

/// Two requests for the document give the same document, and a snapshot of it shows what
/// changed in review.
#[tokio::test]
async fn the_document_is_stable() {
    let served = Served::start(config()).await;
    let doc = document(&served).await;
    assert_eq!(doc, document(&served).await);
    served.stop().await;
    insta::assert_json_snapshot!("document", doc);
}
