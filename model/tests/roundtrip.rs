//! Round-trips captured ShenYu payloads through the model types and pins the JSON we write.

use model::{
    AppAuthData, ConfigSet, DivideRuleHandle, DivideUpstream, MatchMode, MetaData, PluginData,
    RuleData, SelectorData, SelectorType,
};
use serde::{Serialize, de::DeserializeOwned};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Reads a fixture, writes it back, reads that again: the value must survive unchanged.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(name: &str) -> T {
    let value: T = serde_json::from_str(&fixture(name)).unwrap();
    let written = serde_json::to_string(&value).unwrap();
    let again: T = serde_json::from_str(&written).unwrap();
    assert_eq!(value, again, "{name} changed on a round trip");
    value
}

#[test]
fn plugin_round_trips() {
    let plugin: PluginData = round_trip("plugin.json");
    insta::assert_json_snapshot!(plugin);
}

#[test]
fn selector_round_trips_and_its_handle_parses() {
    let selector: SelectorData = round_trip("selector.json");
    assert_eq!(selector.selector_type, SelectorType::Custom);
    let upstreams = DivideUpstream::parse_list(selector.handle.as_deref().unwrap()).unwrap();
    assert_eq!(upstreams[0].base_url(), "http://10.0.0.5:8189");
    assert_eq!(upstreams[0].weight, 50);
    insta::assert_json_snapshot!(selector);
}

#[test]
fn rule_with_gson_escape_round_trips() {
    let rule: RuleData = round_trip("rule.json");
    assert_eq!(rule.condition_data_list[0].operator, "=");
    let handle = DivideRuleHandle::parse(rule.handle.as_deref().unwrap()).unwrap();
    assert_eq!(handle, DivideRuleHandle::default());
    insta::assert_json_snapshot!(rule);
}

#[test]
fn meta_and_app_auth_round_trip() {
    let meta: MetaData = round_trip("meta.json");
    let auth: AppAuthData = round_trip("app_auth.json");
    insta::assert_json_snapshot!("meta", meta);
    insta::assert_json_snapshot!("app_auth", auth);
}

#[test]
fn jackson_nulls_read_as_shenyu_defaults() {
    let selector: SelectorData = round_trip("selector_jackson_nulls.json");
    assert_eq!(selector.match_mode, MatchMode::And);
    assert_eq!(selector.selector_type, SelectorType::Custom);
    assert!(selector.continued, "continued defaults to true");
    assert!(selector.condition_list.is_empty());
    insta::assert_json_snapshot!(selector);
}

#[test]
fn missing_fields_read_as_defaults() {
    let rule: RuleData = round_trip("rule_minimal.json");
    assert_eq!(rule.selector_id, "7");
    assert_eq!(rule.sort, 0);
    assert!(rule.handle.is_none());
    insta::assert_json_snapshot!(rule);
}

/// An unknown code is kept as sent (and re-sent unchanged); it evaluates as `and`.
#[test]
fn unknown_match_mode_codes_are_kept_and_read_as_and() {
    let selector: SelectorData = serde_json::from_str(r#"{"id":"1","matchMode":7}"#).unwrap();
    assert_eq!(selector.match_mode, MatchMode::Other(7));
    assert!(selector.match_mode.is_all());
    assert_eq!(selector.match_mode.name(), "and");
    assert_eq!(serde_json::to_value(&selector).unwrap()["matchMode"], 7);
    let huge: SelectorData = serde_json::from_str(r#"{"matchMode":-9999999999}"#).unwrap();
    assert_eq!(huge.match_mode, MatchMode::Other(i32::MIN));
    assert!(!MatchMode::Or.is_all());
    assert!(MatchMode::And.is_all());
}

#[test]
fn digest_is_stable_for_the_fixtures() {
    let set = ConfigSet {
        plugins: vec![serde_json::from_str(&fixture("plugin.json")).unwrap()],
        selectors: vec![serde_json::from_str(&fixture("selector.json")).unwrap()],
        rules: vec![serde_json::from_str(&fixture("rule.json")).unwrap()],
        meta_data: vec![serde_json::from_str(&fixture("meta.json")).unwrap()],
    };
    insta::assert_snapshot!(set.digest());
}
