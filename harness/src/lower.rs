//! Lowering a scenario into admin requests: pure functions from the scenario's specs (and the
//! addresses its upstreams got) to the admin's DTOs, so what the engine sends can be tested
//! without a socket. The runner adds what only the admin knows (plugin and selector ids).

use std::collections::BTreeMap;

use model::{ConditionDto, DivideUpstream, MatchMode, RuleDto, SelectorDto};

use crate::scenario::ast::{
    ConditionSpec, RuleSpec, SelectorKind, SelectorSpec, UpdateRule, UpdateSelector, UpstreamRef,
};

/// Where each scenario upstream listens, as the gateway reaches it (`host:port`).
pub(crate) type Addresses = BTreeMap<String, String>;

/// The divide selector handle for `ups`: a JSON list of ShenYu `DivideUpstream`s, full weight
/// at once (no warm-up).
///
/// # Panics
/// If an upstream is not in `addrs` (the parser checks that every name is declared).
pub(crate) fn upstreams_handle(ups: &[UpstreamRef], addrs: &Addresses) -> String {
    let upstreams: Vec<DivideUpstream> = ups
        .iter()
        .map(|u| DivideUpstream {
            protocol: "http://".to_owned(),
            upstream_url: addrs
                .get(&u.upstream)
                .expect("validated: upstreams are declared")
                .clone(),
            upstream_host: Some("localhost".to_owned()),
            weight: u.weight,
            warmup: 0,
            status: u.status,
            timestamp: 0,
            ..Default::default()
        })
        .collect();
    serde_json::to_string(&upstreams).expect("upstreams serialise")
}

fn conditions(list: &[ConditionSpec]) -> Vec<ConditionDto> {
    list.iter().map(ConditionSpec::to_dto).collect()
}

fn selector_type(kind: SelectorKind) -> i32 {
    match kind {
        SelectorKind::Custom => model::SelectorType::Custom.code(),
        SelectorKind::Full => model::SelectorType::FullFlow.code(),
    }
}

/// `POST /selector` for a setup selector of the plugin `plugin_id`.
pub(crate) fn selector_dto(spec: &SelectorSpec, plugin_id: &str, addrs: &Addresses) -> SelectorDto {
    SelectorDto {
        plugin_id: Some(plugin_id.to_owned()),
        name: Some(spec.name.clone()),
        selector_type: Some(selector_type(spec.kind)),
        match_mode: Some(MatchMode::from(spec.match_mode).code()),
        sort: Some(spec.sort),
        enabled: Some(spec.enabled),
        loged: Some(true),
        continued: Some(spec.continued),
        match_restful: Some(false),
        handle: Some(upstreams_handle(&spec.upstreams, addrs)),
        selector_conditions: Some(conditions(&spec.conditions)),
        ..Default::default()
    }
}

/// `POST /rule` for a setup rule of the selector `selector_id`.
pub(crate) fn rule_dto(rule: &RuleSpec, selector_id: &str) -> RuleDto {
    RuleDto {
        selector_id: Some(selector_id.to_owned()),
        name: Some(rule.name.clone()),
        match_mode: Some(MatchMode::from(rule.match_mode).code()),
        sort: Some(rule.sort),
        enabled: Some(rule.enabled),
        loged: Some(true),
        match_restful: Some(false),
        handle: Some(rule.handle_json()),
        rule_conditions: Some(conditions(&rule.conditions)),
        ..Default::default()
    }
}

/// The divide rule handle of the harness's own routes (property tests, convergence
/// histories, fault tests): random balancing, no retry, a 3 s timeout.
pub const DIVIDE_RULE_HANDLE: &str =
    r#"{"loadBalance":"random","retryStrategy":"current","retry":0,"timeout":3000}"#;

/// `POST /selector` for one of the harness's own routes: an enabled custom selector of the
/// plugin `plugin_id` (and-matched, sort 1, continued, not logged) with the divide `handle`.
pub fn custom_selector(
    plugin_id: &str,
    name: &str,
    handle: &str,
    conditions: Vec<ConditionDto>,
) -> SelectorDto {
    SelectorDto {
        plugin_id: Some(plugin_id.to_owned()),
        name: Some(name.to_owned()),
        selector_type: Some(model::SelectorType::Custom.code()),
        match_mode: Some(MatchMode::And.code()),
        sort: Some(1),
        enabled: Some(true),
        loged: Some(false),
        continued: Some(true),
        match_restful: Some(false),
        handle: Some(handle.to_owned()),
        selector_conditions: Some(conditions),
        ..Default::default()
    }
}

/// `POST /rule` for one of the harness's own routes: an enabled rule of the selector
/// `selector_id` (sort 1, not logged) with [`DIVIDE_RULE_HANDLE`].
pub fn divide_rule(
    selector_id: &str,
    name: &str,
    match_mode: MatchMode,
    conditions: Vec<ConditionDto>,
) -> RuleDto {
    RuleDto {
        selector_id: Some(selector_id.to_owned()),
        name: Some(name.to_owned()),
        match_mode: Some(match_mode.code()),
        sort: Some(1),
        enabled: Some(true),
        loged: Some(false),
        match_restful: Some(false),
        handle: Some(DIVIDE_RULE_HANDLE.to_owned()),
        rule_conditions: Some(conditions),
        ..Default::default()
    }
}

/// `PUT /selector/{id}`: the selector as last sent (`dto`) with the step's fields replaced.
pub(crate) fn update_selector(
    dto: &mut SelectorDto,
    id: &str,
    change: &UpdateSelector,
    addrs: &Addresses,
) {
    if let Some(ups) = &change.upstreams {
        dto.handle = Some(upstreams_handle(ups, addrs));
    }
    if let Some(e) = change.enabled {
        dto.enabled = Some(e);
    }
    if let Some(cs) = &change.conditions {
        dto.selector_conditions = Some(conditions(cs));
    }
    if let Some(sort) = change.sort {
        dto.sort = Some(sort);
    }
    if let Some(m) = change.match_mode {
        dto.match_mode = Some(model::MatchMode::from(m).code());
    }
    if let Some(c) = change.continued {
        dto.continued = Some(c);
    }
    if let Some(kind) = change.kind {
        dto.selector_type = Some(selector_type(kind));
    }
    dto.id = Some(id.to_owned());
}

/// `PUT /rule/{id}`: the rule as last sent (`dto`) with the step's fields replaced.
pub(crate) fn update_rule(dto: &mut RuleDto, id: &str, change: &UpdateRule) {
    if let Some(e) = change.enabled {
        dto.enabled = Some(e);
    }
    if let Some(cs) = &change.conditions {
        dto.rule_conditions = Some(conditions(cs));
    }
    if let Some(sort) = change.sort {
        dto.sort = Some(sort);
    }
    if let Some(m) = change.match_mode {
        dto.match_mode = Some(model::MatchMode::from(m).code());
    }
    if let Some(h) = &change.handle {
        dto.handle = Some(serde_json::to_string(&h.to_handle()).expect("handles serialise"));
    }
    if let Some(cp) = &change.context_path {
        dto.handle = Some(serde_json::to_string(&cp.to_handle()).expect("handles serialise"));
    }
    if let Some(rl) = &change.rate_limiter {
        dto.handle = Some(rl.to_json());
    }
    dto.id = Some(id.to_owned());
}

/// The divide handle of a route sending everything to the upstream at `address`
/// (`host:port`), weight 50.
pub(crate) fn divide_handle(address: &str) -> String {
    serde_json::to_string(&[model::DivideUpstream {
        protocol: "http://".to_owned(),
        upstream_url: address.to_owned(),
        upstream_host: Some("localhost".to_owned()),
        weight: 50,
        status: true,
        ..Default::default()
    }])
    .expect("a divide upstream always serialises")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::scenario::ast::{ContextPathSpec, MatchModeName};
    use crate::scenario::parse_str;

    const SCENARIO: &str = r#"
name: lowered
modes: [websocket]
upstreams: [alpha, beta]
setup:
  selectors:
    - name: lb
      plugin: divide
      type: full
      matchMode: or
      sort: 7
      conditions:
        - { paramType: header, operator: "=", paramName: x-team, paramValue: blue }
      upstreams:
        - { upstream: alpha, weight: 3 }
        - { upstream: beta, status: false }
      rules:
        - name: all
          handle: { loadBalance: roundRobin, retry: 0 }
wait:
  probe:
    request: { path: /x }
    expect: { status: 200 }
checks:
  - name: routed
    request: { path: /x }
    expect: { status: 200 }
"#;

    fn addrs() -> Addresses {
        Addresses::from([
            ("alpha".to_owned(), "127.0.0.1:1001".to_owned()),
            ("beta".to_owned(), "127.0.0.1:1002".to_owned()),
        ])
    }

    #[test]
    fn a_selector_and_its_rule_lower_to_shenyu_dtos() {
        let s = parse_str(Path::new("x.yaml"), SCENARIO).unwrap();
        let sel = &s.setup.selectors[0];
        let dto = selector_dto(sel, "5", &addrs());
        assert_eq!(
            (
                dto.plugin_id.as_deref(),
                dto.selector_type,
                dto.match_mode,
                dto.sort
            ),
            (Some("5"), Some(0), Some(1), Some(7))
        );
        let conds = dto.selector_conditions.unwrap();
        assert_eq!(
            (
                conds[0].param_type.as_deref(),
                conds[0].param_name.as_deref()
            ),
            (Some("header"), Some("x-team"))
        );
        assert_eq!(conds.len(), 1);
        let ups = DivideUpstream::parse_list(dto.handle.as_deref().unwrap()).unwrap();
        assert_eq!(
            ups.iter()
                .map(|u| (u.upstream_url.as_str(), u.weight, u.status, u.warmup))
                .collect::<Vec<_>>(),
            vec![
                ("127.0.0.1:1001", 3, true, 0),
                ("127.0.0.1:1002", 50, false, 0)
            ]
        );
        let rule = rule_dto(&sel.rules[0], "9");
        assert_eq!(rule.selector_id.as_deref(), Some("9"));
        let handle: model::DivideRuleHandle =
            serde_json::from_str(rule.handle.as_deref().unwrap()).unwrap();
        assert_eq!(
            (handle.load_balance, handle.retry, handle.timeout),
            (model::LoadBalance::RoundRobin, 0, 3000)
        );
        assert_eq!(rule.rule_conditions, Some(vec![]));
    }

    #[test]
    fn a_selector_update_replaces_sort_match_mode_and_continued() {
        let s = parse_str(Path::new("x.yaml"), SCENARIO).unwrap();
        let mut dto = selector_dto(&s.setup.selectors[0], "5", &addrs());
        let before = dto.clone();
        let change = UpdateSelector {
            name: "lb".into(),
            sort: Some(9),
            match_mode: Some(MatchModeName::And),
            continued: Some(false),
            ..Default::default()
        };
        update_selector(&mut dto, "11", &change, &addrs());
        assert_eq!(
            (dto.sort, dto.match_mode, dto.continued),
            (Some(9), Some(model::MatchMode::And.code()), Some(false))
        );
        assert_eq!(
            (
                dto.handle,
                dto.selector_conditions,
                dto.selector_type,
                dto.enabled
            ),
            (
                before.handle,
                before.selector_conditions,
                before.selector_type,
                before.enabled
            )
        );
    }

    #[test]
    fn a_rule_update_replaces_sort_match_mode_and_handle() {
        let s = parse_str(Path::new("x.yaml"), SCENARIO).unwrap();
        let mut dto = rule_dto(&s.setup.selectors[0].rules[0], "11");
        let before = dto.clone();
        let change = UpdateRule {
            selector: "lb".into(),
            name: "r".into(),
            enabled: None,
            conditions: None,
            sort: Some(3),
            match_mode: Some(MatchModeName::Or),
            handle: None,
            context_path: Some(ContextPathSpec {
                context_path: Some("/a".into()),
                ..Default::default()
            }),
            rate_limiter: None,
        };
        update_rule(&mut dto, "12", &change);
        assert_eq!((dto.sort, dto.id.as_deref()), (Some(3), Some("12")));
        assert_eq!(dto.match_mode, Some(model::MatchMode::Or.code()));
        assert!(
            dto.handle
                .as_deref()
                .unwrap()
                .contains("\"contextPath\":\"/a\"")
        );
        assert_eq!(
            (dto.enabled, dto.rule_conditions),
            (before.enabled, before.rule_conditions)
        );
    }

    #[test]
    fn updates_replace_only_the_given_fields() {
        let s = parse_str(Path::new("x.yaml"), SCENARIO).unwrap();
        let mut dto = selector_dto(&s.setup.selectors[0], "5", &addrs());
        let before = dto.clone();
        let change = UpdateSelector {
            name: "lb".into(),
            enabled: Some(false),
            ..Default::default()
        };
        update_selector(&mut dto, "11", &change, &addrs());
        assert_eq!(dto.enabled, Some(false));
        assert_eq!(dto.id.as_deref(), Some("11"));
        assert_eq!(
            (dto.handle, dto.selector_conditions),
            (before.handle, before.selector_conditions)
        );
    }
}
