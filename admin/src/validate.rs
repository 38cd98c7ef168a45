//! Validation of selector and rule requests. Each error names the field it is about, e.g.
//! `selectorConditions[2].operator: ...`.

use model::{
    ConditionData, ConditionDto, DivideRuleHandle, DivideUpstream, Operator, ParamType, RuleDto,
    SelectorDto,
};

use crate::error::ApiError;
use crate::store::{PluginRecord, RuleRecord, SelectorRecord};

/// The param types a gantry gateway can extract from a request.
const EXTRACTABLE: &[ParamType] = &[
    ParamType::Uri,
    ParamType::ReqMethod,
    ParamType::Header,
    ParamType::Query,
    ParamType::Cookie,
    ParamType::Ip,
    ParamType::Host,
    ParamType::Domain,
];

const DIVIDE: &str = "divide";

fn non_blank(field: &str, value: Option<String>) -> Result<String, ApiError> {
    match value {
        Some(v) if !v.trim().is_empty() => Ok(v),
        _ => Err(ApiError::field(field, "must not be blank")),
    }
}

fn required<T>(field: &str, value: Option<T>) -> Result<T, ApiError> {
    value.ok_or_else(|| ApiError::field(field, "must not be null"))
}

fn zero_or_one(field: &str, value: i32, meaning: &str) -> Result<i32, ApiError> {
    if value == 0 || value == 1 {
        Ok(value)
    } else {
        Err(ApiError::field(
            field,
            format!("must be 0 or 1 ({meaning}), got {value}"),
        ))
    }
}

fn blank_to_none(handle: Option<String>) -> Option<String> {
    handle.filter(|h| !h.trim().is_empty())
}

/// Validates a condition list; `list` is the JSON field name (`selectorConditions`).
fn conditions(list: &str, dtos: Vec<ConditionDto>) -> Result<Vec<ConditionData>, ApiError> {
    dtos.into_iter()
        .enumerate()
        .map(|(i, dto)| condition(&format!("{list}[{i}]"), dto))
        .collect()
}

fn condition(at: &str, dto: ConditionDto) -> Result<ConditionData, ApiError> {
    let field = |name: &str| format!("{at}.{name}");
    let param_type_text = non_blank(&field("paramType"), dto.param_type)?;
    let param_type: ParamType = param_type_text
        .trim()
        .parse()
        .map_err(|e| ApiError::field(field("paramType"), e))?;
    if !EXTRACTABLE.contains(&param_type) {
        let supported: Vec<&str> = EXTRACTABLE.iter().map(|p| p.as_str()).collect();
        return Err(ApiError::field(
            field("paramType"),
            format!(
                "param type `{param_type}` is not supported by the gateway (supported: {})",
                supported.join(", ")
            ),
        ));
    }
    let operator_text = non_blank(&field("operator"), dto.operator)?;
    let operator: Operator = operator_text
        .trim()
        .parse()
        .map_err(|e| ApiError::field(field("operator"), e))?;
    if !operator.is_supported() {
        return Err(ApiError::field(
            field("operator"),
            format!("operator `{operator}` is not supported (ShenYu has no judge for it)"),
        ));
    }
    let param_name = dto.param_name.unwrap_or_default();
    if matches!(
        param_type,
        ParamType::Header | ParamType::Query | ParamType::Cookie
    ) && param_name.trim().is_empty()
    {
        return Err(ApiError::field(
            field("paramName"),
            format!("must not be blank for param type `{param_type}`"),
        ));
    }
    let param_value = required(&field("paramValue"), dto.param_value)?;
    if param_value.trim().is_empty() && operator != Operator::IsBlank {
        return Err(ApiError::field(field("paramValue"), "must not be blank"));
    }
    if operator == Operator::Regex {
        let anchored = format!("^(?:{})$", param_value.trim());
        if let Err(e) = regex::Regex::new(&anchored) {
            return Err(ApiError::field(
                field("paramValue"),
                format!("invalid regex: {e}"),
            ));
        }
    }
    Ok(ConditionData {
        param_type: param_type.as_str().to_owned(),
        operator: operator.as_str().to_owned(),
        param_name,
        param_value,
    })
}

/// Whether `url` is `host:port`.
fn is_host_port(url: &str) -> bool {
    match url.rsplit_once(':') {
        Some((host, port)) => {
            !host.is_empty()
                && !host.contains('/')
                && !host.contains(' ')
                && port.parse::<u16>().is_ok()
        }
        None => false,
    }
}

fn divide_selector_handle(handle: &str) -> Result<(), ApiError> {
    let upstreams = DivideUpstream::parse_list(handle)
        .map_err(|e| ApiError::field("handle", format!("invalid divide upstream list: {e}")))?;
    for (i, upstream) in upstreams.iter().enumerate() {
        if !is_host_port(&upstream.upstream_url) {
            return Err(ApiError::field(
                format!("handle[{i}].upstreamUrl"),
                format!("expected `host:port`, got `{}`", upstream.upstream_url),
            ));
        }
        if upstream.weight < 0 {
            return Err(ApiError::field(
                format!("handle[{i}].weight"),
                format!("must be >= 0, got {}", upstream.weight),
            ));
        }
    }
    Ok(())
}

/// Validates a selector request for `plugin` (the plugin its `pluginId` names, if any). The
/// record has no id or dates yet.
pub(crate) fn selector(
    dto: SelectorDto,
    plugin: Option<&PluginRecord>,
) -> Result<SelectorRecord, ApiError> {
    let plugin_id = non_blank("pluginId", dto.plugin_id)?;
    let plugin = plugin
        .ok_or_else(|| ApiError::field("pluginId", format!("unknown plugin `{plugin_id}`")))?;
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
    if selector_type == 1 && conditions.is_empty() {
        return Err(ApiError::field(
            "selectorConditions",
            "a custom selector (type 1) needs at least one condition",
        ));
    }
    let handle = blank_to_none(dto.handle);
    if let (DIVIDE, Some(handle)) = (plugin.name.as_str(), &handle) {
        divide_selector_handle(handle)?;
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

/// Validates a rule request; `selector` is the selector its `selectorId` names (if any) and
/// `plugin_name` that selector's plugin. The record has no id or dates yet.
pub(crate) fn rule(
    dto: RuleDto,
    selector: Option<&SelectorRecord>,
    plugin_name: &str,
) -> Result<RuleRecord, ApiError> {
    let selector_id = non_blank("selectorId", dto.selector_id)?;
    let selector = selector.ok_or_else(|| {
        ApiError::field("selectorId", format!("unknown selector `{selector_id}`"))
    })?;
    let name = non_blank("name", dto.name)?;
    let sort = required("sort", dto.sort)?;
    let match_mode = zero_or_one("matchMode", dto.match_mode.unwrap_or(0), "0 and, 1 or")?;
    let conditions = conditions("ruleConditions", dto.rule_conditions.unwrap_or_default())?;
    if conditions.is_empty() {
        return Err(ApiError::field(
            "ruleConditions",
            "a rule needs at least one condition",
        ));
    }
    let handle = blank_to_none(dto.handle);
    if let (DIVIDE, Some(handle)) = (plugin_name, &handle) {
        DivideRuleHandle::parse(handle)
            .map_err(|e| ApiError::field("handle", format!("invalid divide rule handle: {e}")))?;
    }
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
        selector(dto, Some(&divide())).unwrap_err().to_string()
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
            bad(ConditionDto::new("post", "=", "x", "1"))
                .starts_with("selectorConditions[2].paramType: param type `post` is not supported")
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
        assert!(
            bad(ConditionDto::new("uri", "=", "/", "")).ends_with("paramValue: must not be blank")
        );
        let blank_ok = dto(vec![ConditionDto::new("header", "isBlank", "x", "")]);
        assert!(selector(blank_ok, Some(&divide())).is_ok());
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
        assert!(error(dto(vec![])).starts_with("selectorConditions: a custom selector"));
        assert!(
            error(SelectorDto {
                match_mode: Some(2),
                ..dto(vec![])
            })
            .starts_with("matchMode:")
        );
        let unknown = selector(
            SelectorDto {
                plugin_id: Some("99".to_owned()),
                ..dto(vec![])
            },
            None,
        );
        assert_eq!(
            unknown.unwrap_err().to_string(),
            "pluginId: unknown plugin `99`"
        );
        let full = SelectorDto {
            selector_type: Some(0),
            ..dto(vec![])
        };
        assert!(selector(full, Some(&divide())).is_ok());
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
                Some(&divide())
            )
            .is_ok()
        );
        assert!(
            error(with(r#"[{"upstreamUrl":"http://x:80"}]"#)).starts_with("handle[0].upstreamUrl:")
        );
        assert!(
            error(with(r#"[{"upstreamUrl":"x:80","weight":-1}]"#)).starts_with("handle[0].weight:")
        );
        assert!(error(with("{")).starts_with("handle: invalid divide upstream list"));
    }
}
