//! Validation of every write request (plugins and their config, plugin handle definitions,
//! selectors, rules and their per-plugin handles, metadata, app auth entries) into the records
//! the store keeps. Each error is a [`FieldError`] naming the field it is about, e.g.
//! `selectorConditions[2].operator: ...`.

use std::net::Ipv6Addr;
use std::ops::RangeInclusive;

use model::{
    AuthParamData, AuthPathData, ConditionData, ConditionDto, ContextMappingRuleHandle,
    DivideRuleHandle, DivideUpstream, Operator, ParamType, RateLimiterConfig, RateLimiterHandle,
    RuleDto, SelectorDto,
};

use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;

use crate::dto::{AppAuthDto, AuthApplyDto, MetaDataDto, PluginDto, PluginHandleDto};
use crate::store::{
    AppAuthRecord, MetaRecord, PluginHandleRecord, PluginRecord, RuleRecord, SelectorRecord,
    data_type, handle_type,
};

/// A request field that is not valid: `{field}: {message}`.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub(crate) struct FieldError {
    field: String,
    message: String,
}

impl FieldError {
    /// The error that `field` is not valid, saying why.
    pub(crate) fn new(field: impl std::fmt::Display, message: impl std::fmt::Display) -> Self {
        Self {
            field: field.to_string(),
            message: message.to_string(),
        }
    }
}

/// A serde_json error's message; for a data error (wrong type, unknown name) without the
/// position serde_json ends it with, since the field path says more.
pub(crate) fn json_message(inner: &serde_json::Error) -> String {
    let mut message = inner.to_string();
    let position = format!(" at line {} column {}", inner.line(), inner.column());
    if inner.is_data() && message.ends_with(&position) {
        message.truncate(message.len() - position.len());
    }
    message
}

const DIVIDE: &str = "divide";
const CONTEXT_PATH: &str = "contextPath";
const PARAM_MAPPING: &str = "paramMapping";
const RATE_LIMITER: &str = "rateLimiter";

fn non_blank(field: &str, value: Option<String>) -> Result<String, FieldError> {
    match value {
        Some(v) if !v.trim().is_empty() => Ok(v),
        _ => Err(FieldError::new(field, "must not be blank")),
    }
}

fn required<T>(field: &str, value: Option<T>) -> Result<T, FieldError> {
    value.ok_or_else(|| FieldError::new(field, "must not be null"))
}

fn zero_or_one(field: &str, value: i32, meaning: &str) -> Result<i32, FieldError> {
    if value == 0 || value == 1 {
        Ok(value)
    } else {
        Err(FieldError::new(
            field,
            format!("must be 0 or 1 ({meaning}), got {value}"),
        ))
    }
}

fn blank_to_none(handle: Option<String>) -> Option<String> {
    handle.filter(|h| !h.trim().is_empty())
}

/// Validates a condition list; `list` is the JSON field name (`selectorConditions`).
fn conditions(list: &str, dtos: Vec<ConditionDto>) -> Result<Vec<ConditionData>, FieldError> {
    dtos.into_iter()
        .enumerate()
        .map(|(i, dto)| condition(&format!("{list}[{i}]"), dto))
        .collect()
}

fn condition(at: &str, dto: ConditionDto) -> Result<ConditionData, FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    let param_type_text = non_blank(&field("paramType"), dto.param_type)?;
    let param_type: ParamType = param_type_text
        .trim()
        .parse()
        .map_err(|e| FieldError::new(field("paramType"), e))?;
    let operator_text = non_blank(&field("operator"), dto.operator)?;
    let operator: Operator = operator_text
        .trim()
        .parse()
        .map_err(|e| FieldError::new(field("operator"), e))?;
    let param_name = dto.param_name.unwrap_or_default();
    let param_value = required(&field("paramValue"), dto.param_value)?;
    model::condition::check(param_type, operator, &param_name, &param_value)
        .map_err(|(name, message)| FieldError::new(field(name), message))?;
    Ok(ConditionData {
        param_type: param_type.as_str().to_owned(),
        operator: operator.as_str().to_owned(),
        param_name,
        param_value,
    })
}

/// A structural check of a metadata or app-auth path: starts with `/`, braces balanced and
/// not nested, no empty `{}`, and `**` / `{*var}` only as the last segment.
pub(crate) fn path_pattern(field: &str, pattern: &str) -> Result<(), FieldError> {
    let bad = |message: String| Err(FieldError::new(field, message));
    if !pattern.starts_with('/') {
        return bad(format!("path pattern `{pattern}` must start with `/`"));
    }
    let segments: Vec<&str> = pattern[1..].split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        if (*segment == "**" || segment.starts_with("{*")) && !last {
            return bad(format!(
                "path pattern `{pattern}`: `{segment}` is only allowed as the last segment"
            ));
        }
        let mut open = None;
        for (at, c) in segment.char_indices() {
            match (c, open) {
                ('{', None) => open = Some(at),
                ('{', Some(_)) => {
                    return bad(format!("path pattern `{pattern}`: nested `{{`"));
                }
                ('}', None) => {
                    return bad(format!("path pattern `{pattern}`: `}}` without `{{`"));
                }
                ('}', Some(start)) => {
                    let name = &segment[start + 1..at];
                    if name.is_empty() || name == "*" {
                        return bad(format!("path pattern `{pattern}`: empty variable name"));
                    }
                    open = None;
                }
                _ => {}
            }
        }
        if open.is_some() {
            return bad(format!("path pattern `{pattern}`: unclosed `{{`"));
        }
    }
    Ok(())
}

/// The upstream protocols ShenYu writes: its clients send `http://`
/// (`ShenyuClientConstants.HTTP`) or the `protocol` they are configured with, `https://` for
/// TLS; empty means `http://` to ShenYu's gateway and to gantry's.
const UPSTREAM_PROTOCOLS: &[&str] = &["", "http://", "https://"];

/// An upstream's `protocol`: one of [`UPSTREAM_PROTOCOLS`]. Anything else is prepended to the
/// `host:port` as it is, so `http://127.0.0.1:9/#` would send the traffic to another server
/// than the upstream url names.
pub(crate) fn upstream_protocol(field: &str, protocol: &str) -> Result<(), FieldError> {
    if UPSTREAM_PROTOCOLS.contains(&protocol) {
        return Ok(());
    }
    Err(FieldError::new(
        field,
        format!(
            "must be `http://` or `https://`, got `{}`",
            protocol.escape_debug()
        ),
    ))
}

/// An upstream's host as it goes before `:port`: a host name (letters, digits, `-`, `.`,
/// `_`), an IPv4 address, or an IPv6 address (bracketed here when it came bare). No path,
/// query, fragment, user info, space or control character can hide in it.
pub(crate) fn upstream_host(field: &str, host: &str) -> Result<String, FieldError> {
    let bad = |why: &str| {
        Err(FieldError::new(
            field,
            format!(
                "`{}` is not a host name or IP address: {why}",
                host.escape_debug()
            ),
        ))
    };
    if let Some(inner) = host.strip_prefix('[') {
        return match inner.strip_suffix(']').map(str::parse::<Ipv6Addr>) {
            Some(Ok(_)) => Ok(host.to_owned()),
            _ => bad("`[` must enclose an IPv6 address"),
        };
    }
    if host.parse::<Ipv6Addr>().is_ok() {
        return Ok(format!("[{host}]"));
    }
    if host.is_empty() || host.len() > 253 {
        return bad("it must have 1 to 253 bytes");
    }
    match host
        .chars()
        .find(|c| !(c.is_alphanumeric() || matches!(c, '-' | '.' | '_')))
    {
        Some(c) => bad(&format!("`{}` is not allowed", c.escape_debug())),
        None => Ok(host.to_owned()),
    }
}

/// A divide selector handle: a list of usable upstreams ([`DivideUpstream::check`]), each
/// with a known `protocol` and an `upstreamUrl` whose host is a host name or IP address.
fn divide_selector_handle(handle: &str) -> Result<(), FieldError> {
    let upstreams = DivideUpstream::parse_list(handle)
        .map_err(|e| FieldError::new("handle", format!("invalid divide upstream list: {e}")))?;
    for (i, upstream) in upstreams.iter().enumerate() {
        let field = |name: &str| format!("handle[{i}].{name}");
        upstream
            .check()
            .map_err(|(name, message)| FieldError::new(field(name), message))?;
        upstream_protocol(&field("protocol"), &upstream.protocol)?;
        // `check` saw `host:port`; a bare IPv6 address is ambiguous there.
        let (host, _) = upstream.upstream_url.rsplit_once(':').unwrap_or_default();
        if upstream_host(&field("upstreamUrl"), host)? != host {
            return Err(FieldError::new(
                field("upstreamUrl"),
                format!(
                    "the IPv6 address in `{}` needs brackets",
                    upstream.upstream_url
                ),
            ));
        }
    }
    Ok(())
}

/// A handle of a plugin whose fields are not checked in depth: any JSON value (ShenYu's
/// dashboard writes every handle as JSON; text that is not JSON is nonsense to every
/// gateway).
fn json_handle(handle: &str) -> Result<(), FieldError> {
    parse_at::<IgnoredAny>("handle", "handle (not JSON)", handle).map(drop)
}

/// A selector handle of plugin `plugin`: a divide upstream list ([`divide_selector_handle`]),
/// JSON for every other plugin.
pub(crate) fn selector_handle(plugin: &str, handle: &str) -> Result<(), FieldError> {
    match plugin {
        DIVIDE => divide_selector_handle(handle),
        _ => json_handle(handle),
    }
}

/// Parses a rule handle of `plugin`; an error names the field inside it (`handle.retry: ...`).
fn rule_handle<T: DeserializeOwned>(plugin: &str, handle: &str) -> Result<T, FieldError> {
    parse_at("handle", &format!("{plugin} rule handle"), handle)
}

/// Parses JSON text found at request field `root`; an error names the field inside it
/// (`{root}.retry: ...`) or, for a syntax error, says it is not a valid `what`.
fn parse_at<T: DeserializeOwned>(root: &str, what: &str, text: &str) -> Result<T, FieldError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        if e.inner().is_data() && path != "." {
            let separator = if path.starts_with('[') { "" } else { "." };
            FieldError::new(format!("{root}{separator}{path}"), json_message(e.inner()))
        } else {
            FieldError::new(root, format!("invalid {what}: {}", json_message(e.inner())))
        }
    })?;
    de.end()
        .map_err(|e| FieldError::new(root, format!("invalid {what}: {e}")))?;
    Ok(parsed)
}

/// A divide rule handle: readable (known `loadBalance` and `retryStrategy` names) and its
/// numbers within bounds ([`DivideRuleHandle::check`]).
fn divide_rule_handle(handle: &str) -> Result<(), FieldError> {
    rule_handle::<DivideRuleHandle>(DIVIDE, handle)?
        .check()
        .map_err(|(field, message)| FieldError::new(format!("handle.{field}"), message))
}

/// A rateLimiter rule handle (ShenYu `RateLimiterHandle`): a known `algorithmName` and
/// `keyResolverName`, numbers the algorithm can use ([`RateLimiterHandle::validate`]). ShenYu's
/// gateway throws on an unknown algorithm or a missing one.
fn rate_limiter_handle(handle: &str) -> Result<(), FieldError> {
    rule_handle::<RateLimiterHandle>(RATE_LIMITER, handle)?
        .validate()
        .map_err(|(field, message)| FieldError::new(format!("handle.{field}"), message))?;
    Ok(())
}

/// A paramMapping rule handle (ShenYu `ParamMappingRuleHandle`) as the gateway reads it: an
/// object whose `addParameterKeys` / `replaceParameterKeys` are lists of `{path, key, value}`
/// strings and whose `removeParameterKeys` is a list of strings (a `null` list is empty).
fn param_mapping_handle(handle: &str) -> Result<(), FieldError> {
    let value: Value = rule_handle(PARAM_MAPPING, handle)?;
    let Value::Object(fields) = value else {
        return Err(FieldError::new("handle", "must be a JSON object"));
    };
    let list = |name: &str| -> Result<&[Value], FieldError> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(FieldError::new(format!("handle.{name}"), "must be a list")),
        }
    };
    for name in ["addParameterKeys", "replaceParameterKeys"] {
        for (i, item) in list(name)?.iter().enumerate() {
            let at = format!("handle.{name}[{i}]");
            let Value::Object(info) = item else {
                return Err(FieldError::new(at, "must be an object {path, key, value}"));
            };
            for key in ["path", "key", "value"] {
                if info.get(key).is_some_and(|v| !v.is_string()) {
                    return Err(FieldError::new(format!("{at}.{key}"), "must be a string"));
                }
            }
        }
    }
    for (i, item) in list("removeParameterKeys")?.iter().enumerate() {
        if !item.is_string() {
            return Err(FieldError::new(
                format!("handle.removeParameterKeys[{i}]"),
                "must be a string",
            ));
        }
    }
    Ok(())
}

/// The plugin a selector request's `pluginId` names: `plugin` is the stored plugin with that
/// id, if any.
pub(crate) fn selector_plugin<'a>(
    plugin_id: Option<&str>,
    plugin: Option<&'a PluginRecord>,
) -> Result<&'a PluginRecord, FieldError> {
    let plugin_id = non_blank("pluginId", plugin_id.map(str::to_owned))?;
    plugin.ok_or_else(|| FieldError::new("pluginId", format!("unknown plugin `{plugin_id}`")))
}

/// Validates a selector request for `plugin`, the plugin its `pluginId` names (found with
/// [`selector_plugin`]). The record has no id or dates yet.
pub(crate) fn selector(
    dto: SelectorDto,
    plugin: &PluginRecord,
) -> Result<SelectorRecord, FieldError> {
    let name = non_blank("name", dto.name)?;
    let sort = required("sort", dto.sort)?;
    let selector_type = zero_or_one(
        "type",
        required("type", dto.selector_type)?,
        "0 full flow, 1 custom",
    )?;
    let match_mode = zero_or_one("matchMode", dto.match_mode.unwrap_or(0), "0 and, 1 or")?;
    let conditions = conditions(
        "selectorConditions",
        dto.selector_conditions.unwrap_or_default(),
    )?;
    let handle = blank_to_none(dto.handle);
    if let Some(handle) = &handle {
        selector_handle(&plugin.name, handle)?;
    }
    Ok(SelectorRecord {
        id: String::new(),
        plugin_id: plugin.id.clone(),
        name,
        selector_type,
        match_mode,
        sort,
        enabled: dto.enabled.unwrap_or(true),
        loged: dto.loged.unwrap_or(false),
        continued: dto.continued.unwrap_or(true),
        match_restful: dto.match_restful.unwrap_or(false),
        handle,
        conditions,
        date_created: String::new(),
        date_updated: String::new(),
    })
}

/// A rule handle (`None` when blank) of plugin `plugin`: divide, contextPath, paramMapping
/// and rateLimiter handles are read as the gateway reads them and their values checked;
/// every other plugin's handle must be JSON.
pub(crate) fn rule_handle_of(plugin: &str, handle: Option<&str>) -> Result<(), FieldError> {
    match (plugin, handle) {
        (DIVIDE, Some(handle)) => divide_rule_handle(handle),
        (CONTEXT_PATH, Some(handle)) => {
            rule_handle::<ContextMappingRuleHandle>(CONTEXT_PATH, handle)?
                .check()
                .map_err(|(field, message)| FieldError::new(format!("handle.{field}"), message))
        }
        (PARAM_MAPPING, Some(handle)) => param_mapping_handle(handle),
        (RATE_LIMITER, Some(handle)) => rate_limiter_handle(handle),
        (RATE_LIMITER, None) => Err(FieldError::new(
            "handle",
            "must not be blank: a rateLimiter rule needs algorithmName, replenishRate and burstCapacity",
        )),
        (_, Some(handle)) => json_handle(handle),
        (_, None) => Ok(()),
    }
}

/// Validates a rule request; `selector` is the selector its `selectorId` names (if any) and
/// `plugin_name` that selector's plugin. The record has no id or dates yet.
pub(crate) fn rule(
    dto: RuleDto,
    selector: Option<&SelectorRecord>,
    plugin_name: &str,
) -> Result<RuleRecord, FieldError> {
    let selector_id = non_blank("selectorId", dto.selector_id)?;
    let selector = selector.ok_or_else(|| {
        FieldError::new("selectorId", format!("unknown selector `{selector_id}`"))
    })?;
    let name = non_blank("name", dto.name)?;
    let sort = required("sort", dto.sort)?;
    let match_mode = zero_or_one("matchMode", dto.match_mode.unwrap_or(0), "0 and, 1 or")?;
    let conditions = conditions("ruleConditions", dto.rule_conditions.unwrap_or_default())?;
    let handle = blank_to_none(dto.handle);
    rule_handle_of(plugin_name, handle.as_deref())?;
    Ok(RuleRecord {
        id: String::new(),
        selector_id: selector.id.clone(),
        name,
        match_mode,
        sort,
        enabled: dto.enabled.unwrap_or(true),
        loged: dto.loged.unwrap_or(false),
        match_restful: dto.match_restful.unwrap_or(false),
        handle,
        conditions,
        date_created: String::new(),
        date_updated: String::new(),
    })
}

/// Plugin `plugin`'s `config`: blank means none, otherwise a JSON object; the rateLimiter's
/// is its Redis config ([`RateLimiterConfig::validate`]), errors naming the field
/// (`config.url: ...`).
fn plugin_config(plugin: &str, config: Option<String>) -> Result<Option<String>, FieldError> {
    let config = blank_to_none(config);
    if let Some(config) = &config {
        json_object("config", config)?;
        if plugin == RATE_LIMITER {
            parse_at::<RateLimiterConfig>("config", "rateLimiter config", config)?
                .validate()
                .map_err(|(field, message)| FieldError::new(format!("config.{field}"), message))?;
        }
    }
    Ok(config)
}

/// `value` is a JSON object.
fn json_object(field: &str, value: &str) -> Result<(), FieldError> {
    match serde_json::from_str::<serde_json::Value>(value) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(_) => Err(FieldError::new(field, "must be a JSON object")),
        Err(e) => Err(FieldError::new(field, format!("invalid JSON: {e}"))),
    }
}

/// Validates a plugin update against the stored plugin `old`: the name cannot change.
pub(crate) fn plugin(dto: PluginDto, old: &PluginRecord) -> Result<PluginRecord, FieldError> {
    if let Some(name) = dto.name.as_deref().map(str::trim)
        && name != old.name
    {
        return Err(FieldError::new(
            "name",
            format!(
                "a plugin cannot be renamed (gateways key plugins by name): `{}` != `{name}`",
                old.name
            ),
        ));
    }
    Ok(PluginRecord {
        role: non_blank("role", dto.role)?,
        sort: required("sort", dto.sort)?,
        enabled: required("enabled", dto.enabled)?,
        config: plugin_config(&old.name, dto.config)?,
        ..old.clone()
    })
}

/// Validates a new plugin (`enabled` defaults to false). The record has no id or dates yet;
/// the caller checks that the name is free.
pub(crate) fn new_plugin(dto: PluginDto) -> Result<PluginRecord, FieldError> {
    let name = non_blank("name", dto.name)?;
    Ok(PluginRecord {
        id: String::new(),
        role: non_blank("role", dto.role)?,
        sort: required("sort", dto.sort)?,
        enabled: dto.enabled.unwrap_or(false),
        config: plugin_config(name.trim(), dto.config)?,
        name,
        date_created: String::new(),
        date_updated: String::new(),
    })
}

/// Validates a plugin handle field definition; `plugin` is the plugin its `pluginId` names
/// (if any). The record has no id or dates yet.
pub(crate) fn plugin_handle(
    dto: PluginHandleDto,
    plugin: Option<&PluginRecord>,
) -> Result<PluginHandleRecord, FieldError> {
    let plugin_id = non_blank("pluginId", dto.plugin_id)?;
    let plugin = plugin
        .ok_or_else(|| FieldError::new("pluginId", format!("unknown plugin `{plugin_id}`")))?;
    let one_of = |field: &str, value: Option<i32>, range: RangeInclusive<i32>, meaning: &str| {
        let value = required(field, value)?;
        if range.contains(&value) {
            Ok(value)
        } else {
            Err(FieldError::new(
                field,
                format!("must be one of {range:?} ({meaning}), got {value}"),
            ))
        }
    };
    let ext_obj = blank_to_none(dto.ext_obj);
    if let Some(ext) = &ext_obj {
        json_object("extObj", ext)?;
    }
    Ok(PluginHandleRecord {
        id: String::new(),
        plugin_id: plugin.id.clone(),
        field: non_blank("field", dto.field)?,
        label: non_blank("label", dto.label)?,
        data_type: one_of(
            "dataType",
            dto.data_type,
            data_type::NUMBER..=data_type::SELECT,
            "1 number, 2 string, 3 select",
        )?,
        handle_type: one_of(
            "type",
            dto.handle_type,
            handle_type::SELECTOR..=handle_type::PLUGIN,
            "1 selector, 2 rule, 3 plugin",
        )?,
        sort: required("sort", dto.sort)?,
        ext_obj,
        date_created: String::new(),
        date_updated: String::new(),
    })
}

/// The rpc types ShenYu knows (`RpcTypeEnum`).
const RPC_TYPES: &[&str] = &[
    "http",
    "dubbo",
    "sofa",
    "tars",
    "springCloud",
    "motan",
    "grpc",
    "websocket",
    "brpc",
];

/// Validates a metadata request. The record keeps the request's id (possibly empty) and has no
/// dates yet.
pub(crate) fn meta(dto: MetaDataDto) -> Result<MetaRecord, FieldError> {
    let app_name = non_blank("appName", dto.app_name)?;
    let path = non_blank("path", dto.path)?.trim().to_owned();
    path_pattern("path", &path)?;
    let rpc_type = non_blank("rpcType", dto.rpc_type)?.trim().to_owned();
    if !RPC_TYPES.contains(&rpc_type.as_str()) {
        return Err(FieldError::new(
            "rpcType",
            format!(
                "unknown rpc type `{rpc_type}` (expected one of: {})",
                RPC_TYPES.join(", ")
            ),
        ));
    }
    let service_name = non_blank("serviceName", dto.service_name)?;
    let method_name = non_blank("methodName", dto.method_name)?;
    let enabled = required("enabled", dto.enabled)?;
    let context_path = blank_to_none(dto.context_path);
    if let Some(context_path) = &context_path
        && (!context_path.starts_with('/') || context_path.len() > 1 && context_path.ends_with('/'))
    {
        return Err(FieldError::new(
            "contextPath",
            format!("`{context_path}` must start with `/` and not end with `/`"),
        ));
    }
    let rpc_ext = blank_to_none(dto.rpc_ext);
    if let Some(rpc_ext) = &rpc_ext {
        serde_json::from_str::<serde::de::IgnoredAny>(rpc_ext)
            .map_err(|e| FieldError::new("rpcExt", format!("invalid JSON: {e}")))?;
    }
    Ok(MetaRecord {
        id: dto.id.map(|id| id.trim().to_owned()).unwrap_or_default(),
        app_name: Some(app_name),
        context_path,
        path,
        path_desc: dto.path_desc,
        rpc_type: Some(rpc_type),
        service_name: Some(service_name),
        method_name: Some(method_name),
        parameter_types: blank_to_none(dto.parameter_types),
        rpc_ext,
        rule_name: blank_to_none(dto.rule_name),
        enabled,
        date_created: String::new(),
        date_updated: String::new(),
    })
}

fn auth_path(
    field: &str,
    app_name: String,
    path: &str,
    enabled: bool,
) -> Result<AuthPathData, FieldError> {
    let path = path.trim();
    path_pattern(field, path)?;
    Ok(AuthPathData {
        app_name,
        path: path.to_owned(),
        enabled,
    })
}

/// Validates an app auth application. The record has no id, key (unless given), secret or
/// dates yet.
pub(crate) fn apply(dto: AuthApplyDto) -> Result<AppAuthRecord, FieldError> {
    let app_name = non_blank("appName", dto.app_name)?;
    let paths = dto
        .path_list
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, path)| auth_path(&format!("pathList[{i}]"), app_name.clone(), path, true))
        .collect::<Result<Vec<_>, _>>()?;
    let params = blank_to_none(dto.app_param)
        .map(|app_param| AuthParamData {
            app_name: app_name.clone(),
            app_param,
        })
        .into_iter()
        .collect();
    Ok(AppAuthRecord {
        id: String::new(),
        app_key: blank_to_none(dto.app_key)
            .map(|key| key.trim().to_owned())
            .unwrap_or_default(),
        app_secret: String::new(),
        user_id: blank_to_none(dto.user_id),
        phone: blank_to_none(dto.phone),
        ext_info: blank_to_none(dto.ext_info),
        open: dto.open.unwrap_or(false),
        enabled: true,
        params,
        paths,
        date_created: String::new(),
        date_updated: String::new(),
    })
}

/// Validates an app auth update of `old`.
pub(crate) fn app_auth(dto: AppAuthDto, old: &AppAuthRecord) -> Result<AppAuthRecord, FieldError> {
    let app_key = non_blank("appKey", dto.app_key)?.trim().to_owned();
    let app_secret = non_blank("appSecret", dto.app_secret)?.trim().to_owned();
    let params = dto
        .auth_param_list
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            Ok(AuthParamData {
                app_name: non_blank(&format!("authParamList[{i}].appName"), p.app_name)?,
                app_param: p.app_param.unwrap_or_default(),
            })
        })
        .collect::<Result<Vec<_>, FieldError>>()?;
    let paths = dto
        .auth_path_list
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let at = format!("authPathList[{i}]");
            let app_name = non_blank(&format!("{at}.appName"), p.app_name)?;
            let path = non_blank(&format!("{at}.path"), p.path)?;
            auth_path(
                &format!("{at}.path"),
                app_name,
                &path,
                p.enabled.unwrap_or(true),
            )
        })
        .collect::<Result<Vec<_>, FieldError>>()?;
    Ok(AppAuthRecord {
        app_key,
        app_secret,
        user_id: blank_to_none(dto.user_id),
        phone: blank_to_none(dto.phone),
        ext_info: blank_to_none(dto.ext_info),
        open: dto.open.unwrap_or(old.open),
        enabled: dto.enabled.unwrap_or(old.enabled),
        params,
        paths,
        ..old.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn divide() -> PluginRecord {
        PluginRecord {
            id: "5".to_owned(),
            name: DIVIDE.to_owned(),
            role: "Proxy".to_owned(),
            sort: 200,
            enabled: true,
            config: None,
            date_created: String::new(),
            date_updated: String::new(),
        }
    }

    fn dto(conditions: Vec<ConditionDto>) -> SelectorDto {
        SelectorDto {
            plugin_id: Some("5".to_owned()),
            name: Some("s".to_owned()),
            selector_type: Some(1),
            sort: Some(1),
            selector_conditions: Some(conditions),
            ..Default::default()
        }
    }

    fn error(dto: SelectorDto) -> String {
        selector(dto, &divide()).unwrap_err().to_string()
    }

    /// The selector's error, if any.
    fn condition_error(dto: SelectorDto) -> Option<String> {
        selector(dto, &divide()).err().map(|e| e.to_string())
    }

    #[test]
    fn conditions_are_checked_field_by_field() {
        let ok = ConditionDto::new("uri", "=", "/", "/a");
        let bad = |c| error(dto(vec![ok.clone(), ok.clone(), c]));
        assert!(
            bad(ConditionDto::new("uri", "=~", "/", "/a"))
                .starts_with("selectorConditions[2].operator: unknown operator `=~`")
        );
        assert!(
            bad(ConditionDto::new("uri", ">", "/", "/a"))
                .starts_with("selectorConditions[2].operator: operator `>` is not supported")
        );
        assert!(
            bad(ConditionDto::new("path", "=", "x", "1"))
                .starts_with("selectorConditions[2].paramType: param type `path` is not supported")
        );
        assert!(bad(ConditionDto::new("form-data", "=", "x", "1")).contains("`form-data`"));
        assert!(
            bad(ConditionDto::new("header", "=", " ", "1"))
                .starts_with("selectorConditions[2].paramName: must not be blank")
        );
        assert!(
            bad(ConditionDto::new("uri", "regex", "/", "(a"))
                .starts_with("selectorConditions[2].paramValue: invalid regex")
        );
        // Syntax Rust's regex takes but re2j (ShenYu's engine) refuses.
        for re2j_invalid in [
            "(?x)a b",
            "(?u)a",
            r"\u0041",
            "a**",
            "(?P<a.b>x)",
            r"\p{greek}",
        ] {
            let message = bad(ConditionDto::new("header", "regex", "x", re2j_invalid));
            assert!(
                message.starts_with(
                    "selectorConditions[2].paramValue: invalid regex: error parsing regexp"
                ),
                "{re2j_invalid}: {message}"
            );
        }
        // re2j syntax Rust's regex refuses on its own.
        for re2j_valid in [r"\Qa.b\E", r"\012", "a{,3}", "[a[b]"] {
            let ok = dto(vec![ConditionDto::new("header", "regex", "x", re2j_valid)]);
            assert!(selector(ok, &divide()).is_ok(), "{re2j_valid}");
        }
        assert!(
            bad(ConditionDto::new("uri", "=", "/", "")).ends_with("paramValue: must not be blank")
        );
        assert!(
            bad(ConditionDto::new(
                "header",
                "TimeAfter",
                "t",
                "2020-01-01T00:00:00"
            ))
            .starts_with("selectorConditions[2].paramValue: text `2020-01-01T00:00:00`")
        );
        assert!(
            bad(ConditionDto::new(
                "header",
                "TimeBefore",
                "t",
                "2020-01-32 00:00:00"
            ))
            .contains("invalid day of month 32")
        );
        let dated = dto(vec![ConditionDto::new(
            "uri",
            "TimeBefore",
            "",
            "2099-02-30 00:00:00",
        )]);
        assert!(selector(dated, &divide()).is_ok());
        let blank_ok = dto(vec![ConditionDto::new("header", "isBlank", "x", "")]);
        assert!(selector(blank_ok, &divide()).is_ok());
    }

    #[test]
    fn selector_fields_are_required() {
        assert_eq!(
            error(SelectorDto {
                sort: None,
                ..dto(vec![])
            }),
            "sort: must not be null"
        );
        // A custom selector without conditions is ShenYu's: it never matches.
        assert!(selector(dto(vec![]), &divide()).is_ok());
        assert!(
            error(SelectorDto {
                match_mode: Some(2),
                ..dto(vec![])
            })
            .starts_with("matchMode:")
        );
        let unknown = selector_plugin(Some("99"), None);
        assert_eq!(
            unknown.unwrap_err().to_string(),
            "pluginId: unknown plugin `99`"
        );
        assert_eq!(
            selector_plugin(Some(" "), Some(&divide()))
                .unwrap_err()
                .to_string(),
            "pluginId: must not be blank"
        );
        let full = SelectorDto {
            selector_type: Some(0),
            ..dto(vec![])
        };
        assert!(selector(full, &divide()).is_ok());
    }

    #[test]
    fn divide_handles_are_checked() {
        let with = |h: &str| SelectorDto {
            selector_type: Some(0),
            handle: Some(h.to_owned()),
            ..dto(vec![])
        };
        assert!(
            selector(
                with(r#"[{"upstreamUrl":"127.0.0.1:80","weight":50}]"#),
                &divide()
            )
            .is_ok()
        );
        assert!(
            error(with(r#"[{"upstreamUrl":"http://x:80"}]"#)).starts_with("handle[0].upstreamUrl:")
        );
        assert!(
            error(with(r#"[{"upstreamUrl":"x:80","weight":-1}]"#)).starts_with("handle[0].weight:")
        );
        assert_eq!(
            error(with(
                r#"[{"upstreamUrl":"x:80"},{"upstreamUrl":"y:80","warmup":-1}]"#
            )),
            "handle[1].warmup: must be >= 0, got -1"
        );
        assert!(error(with("{")).starts_with("handle: invalid divide upstream list"));
    }

    #[test]
    fn rule_handles_are_checked_per_plugin() {
        let sel = selector(
            SelectorDto {
                selector_type: Some(0),
                ..dto(vec![])
            },
            &divide(),
        )
        .unwrap();
        let with = |h: &str| RuleDto {
            selector_id: Some("s".to_owned()),
            name: Some("r".to_owned()),
            sort: Some(1),
            handle: Some(h.to_owned()),
            rule_conditions: Some(vec![ConditionDto::new("uri", "=", "/", "/a")]),
            ..Default::default()
        };
        let check = |plugin: &str, h: &str| rule(with(h), Some(&sel), plugin).map(drop);
        assert!(
            check(
                "contextPath",
                r#"{"contextPath":"/http","addPrefixed":false}"#
            )
            .is_ok()
        );
        assert_eq!(
            check(
                "contextPath",
                r#"{"rewriteContextPath":"/n","percentage":101}"#
            )
            .unwrap_err()
            .to_string(),
            "handle.percentage: must be within 0..=100, got 101"
        );
        let message = |plugin: &str, h: &str| check(plugin, h).unwrap_err().to_string();
        assert_eq!(
            message("contextPath", r#"{"contextPath":1}"#),
            "handle.contextPath: invalid type: integer `1`, expected a string"
        );
        assert!(message("contextPath", "{").starts_with("handle: invalid contextPath rule handle"));
        assert_eq!(
            message("divide", r#"{"retry":"x"}"#),
            r#"handle.retry: invalid type: string "x", expected i32"#
        );
        assert!(message("divide", "{").starts_with("handle: invalid divide rule handle"));
        // Other plugins' handles are theirs to read, but they are JSON.
        assert!(check("waf", r#"{"permission":"reject","anything":[1]}"#).is_ok());
        assert!(message("waf", "not json").starts_with("handle: invalid handle (not JSON)"));
    }

    #[test]
    fn divide_rule_handles_are_bounded() {
        let sel = SelectorRecord {
            id: "s".to_owned(),
            ..selector(dto(vec![]), &divide()).unwrap()
        };
        let check = |h: &str| {
            let dto = RuleDto {
                selector_id: Some("s".to_owned()),
                name: Some("r".to_owned()),
                sort: Some(1),
                handle: Some(h.to_owned()),
                ..Default::default()
            };
            rule(dto, Some(&sel), DIVIDE)
                .map(drop)
                .map_err(|e| e.to_string())
        };
        let full = r#"{"loadBalance":"roundRobin","retryStrategy":"failover","retry":10,"timeout":600000,"headerMaxSize":0,"requestMaxSize":102400}"#;
        assert_eq!(check(full), Ok(()));
        assert_eq!(check(r#"{"retry":0,"timeout":0}"#), Ok(()));
        for (handle, error) in [
            (
                r#"{"retry":2147483647}"#,
                "handle.retry: must be within 0..=10, got 2147483647",
            ),
            (
                r#"{"retry":-1}"#,
                "handle.retry: must be within 0..=10, got -1",
            ),
            (
                r#"{"retry":11}"#,
                "handle.retry: must be within 0..=10, got 11",
            ),
            (
                r#"{"timeout":-5}"#,
                "handle.timeout: must be within 0..=600000, got -5",
            ),
            (
                r#"{"timeout":600001}"#,
                "handle.timeout: must be within 0..=600000, got 600001",
            ),
            (
                r#"{"headerMaxSize":-1}"#,
                "handle.headerMaxSize: must be >= 0, got -1",
            ),
            (
                r#"{"requestMaxSize":-1}"#,
                "handle.requestMaxSize: must be >= 0, got -1",
            ),
        ] {
            assert_eq!(check(handle), Err(error.to_owned()), "{handle}");
        }
        for (handle, field) in [
            (r#"{"loadBalance":"fastest"}"#, "handle.loadBalance: "),
            (r#"{"retryStrategy":"again"}"#, "handle.retryStrategy: "),
            (r#"{"retry":4294967296}"#, "handle.retry: "),
        ] {
            let error = check(handle).unwrap_err();
            assert!(error.starts_with(field), "{handle}: {error}");
        }
    }

    #[test]
    fn param_mapping_handles_are_read_as_the_gateway_reads_them() {
        let sel = SelectorRecord {
            id: "s".to_owned(),
            ..selector(dto(vec![]), &divide()).unwrap()
        };
        let check = |h: &str| {
            let dto = RuleDto {
                selector_id: Some("s".to_owned()),
                name: Some("r".to_owned()),
                sort: Some(1),
                handle: Some(h.to_owned()),
                ..Default::default()
            };
            rule(dto, Some(&sel), PARAM_MAPPING)
                .map(drop)
                .map_err(|e| e.to_string())
        };
        let ok = r#"{"addParameterKeys":[{"path":"$","key":"k","value":"v"}],"replaceParameterKeys":null,"removeParameterKeys":["$.a"]}"#;
        assert_eq!(check(ok), Ok(()));
        assert_eq!(check("{}"), Ok(()));
        for (handle, error) in [
            ("[1]", "handle: must be a JSON object"),
            (
                r#"{"addParameterKeys":{}}"#,
                "handle.addParameterKeys: must be a list",
            ),
            (
                r#"{"replaceParameterKeys":[{"path":"$","key":1}]}"#,
                "handle.replaceParameterKeys[0].key: must be a string",
            ),
            (
                r#"{"addParameterKeys":["k"]}"#,
                "handle.addParameterKeys[0]: must be an object {path, key, value}",
            ),
            (
                r#"{"removeParameterKeys":["$.a",2]}"#,
                "handle.removeParameterKeys[1]: must be a string",
            ),
        ] {
            assert_eq!(check(handle), Err(error.to_owned()), "{handle}");
        }
        assert!(
            check("{nope")
                .unwrap_err()
                .starts_with("handle: invalid paramMapping rule handle: ")
        );
    }

    #[test]
    fn path_patterns_are_checked_structurally() {
        for ok in [
            "/",
            "/a/b",
            "/a/**",
            "/a/{id}/b",
            "/a/{*rest}",
            "/a/x{id}y",
            "/a/*.html",
        ] {
            assert!(path_pattern("p", ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("a/b", "must start with `/`"),
            ("/**/a", "only allowed as the last segment"),
            ("/{*rest}/a", "only allowed as the last segment"),
            ("/a/{id", "unclosed"),
            ("/a/id}", "without"),
            ("/a/{{id}}", "nested"),
            ("/a/{}", "empty variable"),
        ] {
            let message = path_pattern("paramValue", bad).unwrap_err().to_string();
            assert!(
                message.starts_with("paramValue: ") && message.contains(why),
                "{bad}: {message}"
            );
        }
    }

    #[test]
    fn path_pattern_conditions_are_refused_exactly_when_spring_cannot_parse_them() {
        let check = |value: &str| {
            let condition = dto(vec![ConditionDto::new("uri", "pathPattern", "/", value)]);
            condition_error(condition)
        };
        for ok in ["/a/{}", "/a/{*}", "a/b", "/a/**", "/a/{id}/b", "/a/{*rest}"] {
            assert_eq!(check(ok), None, "{ok}");
        }
        for bad in ["/**/x", "/{*rest}/a", "/a/{id", "/a/{id}/{id}", "/a/{1x}"] {
            let message = check(bad).unwrap_or_else(|| panic!("{bad} is accepted"));
            assert!(
                message.starts_with(&format!(
                    "selectorConditions[0].paramValue: invalid path pattern `{bad}`: "
                )),
                "{bad}: {message}"
            );
        }
        // Other param types compare the value as text: nothing to parse.
        let header = dto(vec![ConditionDto::new(
            "header",
            "pathPattern",
            "x",
            "/**/x",
        )]);
        assert_eq!(condition_error(header), None);
    }

    #[test]
    fn metadata_fields_are_checked() {
        let good = || MetaDataDto {
            app_name: Some("app".to_owned()),
            path: Some("/http/order".to_owned()),
            rpc_type: Some("http".to_owned()),
            service_name: Some("svc".to_owned()),
            method_name: Some("m".to_owned()),
            enabled: Some(true),
            ..Default::default()
        };
        assert!(meta(good()).is_ok());
        let err = |dto| meta(dto).unwrap_err().to_string();
        assert!(
            err(MetaDataDto {
                rpc_type: Some("soap".to_owned()),
                ..good()
            })
            .starts_with("rpcType: unknown")
        );
        assert!(
            err(MetaDataDto {
                path: Some("x".to_owned()),
                ..good()
            })
            .starts_with("path: ")
        );
        assert_eq!(
            err(MetaDataDto {
                enabled: None,
                ..good()
            }),
            "enabled: must not be null"
        );
        assert!(
            err(MetaDataDto {
                context_path: Some("/http/".to_owned()),
                ..good()
            })
            .starts_with("contextPath: ")
        );
        assert!(
            err(MetaDataDto {
                rpc_ext: Some("{\"loadbalance\":".to_owned()),
                ..good()
            })
            .starts_with("rpcExt: invalid JSON: ")
        );
        let with_ext = meta(MetaDataDto {
            rpc_ext: Some(r#"{"loadbalance":"random"}"#.to_owned()),
            ..good()
        });
        assert!(with_ext.is_ok());
    }

    #[test]
    fn rate_limiter_rule_handles_are_checked() {
        let sel = SelectorRecord {
            id: "s".to_owned(),
            ..selector(dto(vec![]), &divide()).unwrap()
        };
        let check = |h: Option<&str>| {
            let dto = RuleDto {
                selector_id: Some("s".to_owned()),
                name: Some("r".to_owned()),
                sort: Some(1),
                handle: h.map(str::to_owned),
                ..Default::default()
            };
            rule(dto, Some(&sel), RATE_LIMITER)
                .map(drop)
                .map_err(|e| e.to_string())
        };
        // What ShenYu's dashboard sends: numbers as strings.
        let dashboard = r#"{"algorithmName":"slidingWindow","replenishRate":"10","burstCapacity":"100","keyResolverName":"WHOLE_KEY_RESOLVER"}"#;
        assert_eq!(check(Some(dashboard)), Ok(()));
        assert_eq!(
            check(Some(
                r#"{"algorithmName":"concurrent","replenishRate":0,"burstCapacity":5}"#
            )),
            Ok(())
        );
        for (handle, error) in [
            (
                r#"{"algorithmName":"fixedWindow","replenishRate":1,"burstCapacity":1}"#,
                "handle.algorithmName: unknown rate limiter algorithm `fixedWindow` (expected one of: tokenBucket, slidingWindow, leakyBucket, concurrent)",
            ),
            (
                r#"{"replenishRate":1,"burstCapacity":1}"#,
                "handle.algorithmName: must not be null",
            ),
            (
                r#"{"algorithmName":"tokenBucket","replenishRate":0,"burstCapacity":1}"#,
                "handle.replenishRate: must be a finite number > 0, got 0",
            ),
            (
                r#"{"algorithmName":"tokenBucket","replenishRate":"x","burstCapacity":1}"#,
                "handle.replenishRate: expected a number, got `x`",
            ),
            (
                r#"{"algorithmName":"leakyBucket","replenishRate":1,"burstCapacity":-2}"#,
                "handle.burstCapacity: must be a finite number > 0, got -2",
            ),
            (
                r#"{"algorithmName":"tokenBucket","replenishRate":1,"burstCapacity":1,"requestCount":2}"#,
                "handle.requestCount: must be <= burstCapacity (1) or no request can pass, got 2",
            ),
            (
                r#"{"algorithmName":"tokenBucket","replenishRate":1,"burstCapacity":1,"keyResolverName":"IP"}"#,
                "handle.keyResolverName: unknown key resolver `IP`",
            ),
            ("{", "handle: invalid rateLimiter rule handle: "),
        ] {
            let got = check(Some(handle)).unwrap_err();
            assert!(got.starts_with(error), "{handle}: {got}");
        }
        assert!(
            check(None)
                .unwrap_err()
                .starts_with("handle: must not be blank")
        );
    }

    #[test]
    fn rate_limiter_plugin_config_is_checked() {
        let limiter = PluginRecord {
            id: "4".to_owned(),
            name: RATE_LIMITER.to_owned(),
            ..divide()
        };
        let update = |config: &str| {
            let dto = PluginDto {
                role: Some("FaultTolerance".to_owned()),
                sort: Some(60),
                enabled: Some(true),
                config: Some(config.to_owned()),
                ..Default::default()
            };
            plugin(dto, &limiter).map(drop).map_err(|e| e.to_string())
        };
        // ShenYu's seed config, and blank (no Redis: the gateway lets requests through).
        let seed = r#"{"master":"mymaster","mode":"standalone","url":"192.168.1.1:6379","password":"abc"}"#;
        assert_eq!(update(seed), Ok(()));
        assert_eq!(update(" "), Ok(()));
        assert_eq!(
            update(r#"{"mode":"cluster","url":"a:7000;b:7001","failClosed":true}"#),
            Ok(())
        );
        for (config, error) in [
            (r#"{"mode":"standalone"}"#, "config.url: must not be blank"),
            (
                r#"{"url":"redis://h:6379"}"#,
                "config.url: expected `host:port`, got `redis://h:6379`",
            ),
            (
                r#"{"mode":"sentinel","url":"a:1"}"#,
                "config.master: must not be blank in sentinel mode",
            ),
            (
                r#"{"mode":"single","url":"a:1"}"#,
                "config.mode: unknown redis mode `single`",
            ),
            (
                r#"{"url":"a:1","database":-1}"#,
                "config.database: must be >= 0",
            ),
            (
                r#"{"url":"a:1","failClosed":"maybe"}"#,
                "config.failClosed: expected true or false",
            ),
            (
                r#"{"url":"a:1","concurrentSlotTtl":0}"#,
                "config.concurrentSlotTtl: must be within 1..=86400",
            ),
            ("[1]", "config: must be a JSON object"),
        ] {
            let got = update(config).unwrap_err();
            assert!(got.starts_with(error), "{config}: {got}");
        }
        // Other plugins' configs are only JSON objects.
        let other = PluginDto {
            role: Some("Proxy".to_owned()),
            sort: Some(200),
            enabled: Some(true),
            config: Some(r#"{"url":"redis://h:6379"}"#.to_owned()),
            ..Default::default()
        };
        assert!(plugin(other, &divide()).is_ok());
        let created = PluginDto {
            name: Some(RATE_LIMITER.to_owned()),
            role: Some("FaultTolerance".to_owned()),
            sort: Some(60),
            config: Some("{}".to_owned()),
            ..Default::default()
        };
        assert_eq!(
            new_plugin(created).unwrap_err().to_string(),
            "config.url: must not be blank"
        );
    }
}
