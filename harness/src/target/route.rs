//! The simplest route: a divide selector over a path prefix, what [`crate::Gantry::route`]
//! makes and the external target's capability probe routes through.

use serde_json::json;

use crate::scenario::ast::SelectorSpec;

/// A divide selector `name` over `uri startsWith prefix` to `upstream`, with one rule over
/// the same condition.
pub(crate) fn prefix_route(name: &str, prefix: &str, upstream: &str) -> SelectorSpec {
    let condition = json!({ "paramType": "uri", "operator": "startsWith", "paramValue": prefix });
    serde_json::from_value(json!({
        "name": name,
        "plugin": "divide",
        "conditions": [condition],
        "upstreams": [{ "upstream": upstream }],
        "rules": [{ "name": name, "conditions": [condition] }],
    }))
    .expect("a valid selector spec")
}
