//! The paramMapping plugin (ShenYu `ParamMappingPlugin`, order 70, protocol §11.4): the
//! matched rule's handle rewrites the request **body** before it is forwarded:
//!
//! ```json
//! {"addParameterKeys":[{"path":"$.user","key":"role","value":"admin"}],
//!  "replaceParameterKeys":[{"path":"$","key":"id","value":"userId"}],
//!  "removeParameterKeys":["$.user.password"]}
//! ```
//!
//! Applied in that order: add sets `key` = `value` (a string) in the object at `path`;
//! replace renames `key` to `value` there; remove deletes the member a path names. Paths are
//! the simple JsonPath subset `$`, `$.a.b`. JSON bodies (`application/json`) and form bodies
//! (`application/x-www-form-urlencoded`: fields by name, path ignored for add/replace, the
//! last segment for remove, added values encoded with `URLEncoder` as ShenYu's
//! `FormDataOperator` does) are rewritten; other bodies, and bodies that do not parse, pass
//! unchanged (ShenYu answers a JSON parse failure with an error).

use std::sync::Arc;

use model::{RuleData, SelectorData, url_codec};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Decision, Outcome, Plugin, Table, matched_rule, now};
use crate::router::RequestView;
use crate::router::select::RuleChoice;

/// The plugin name.
pub(crate) const NAME: &str = "paramMapping";

/// One add or replace instruction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
struct ParamInfo {
    path: String,
    key: String,
    value: String,
}

/// A paramMapping rule handle (ShenYu `ParamMappingRuleHandle`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct BodyMapping {
    add_parameter_keys: Vec<ParamInfo>,
    replace_parameter_keys: Vec<ParamInfo>,
    remove_parameter_keys: Vec<String>,
}

impl BodyMapping {
    /// Reads a handle (`null` lists count as empty).
    pub(crate) fn parse(handle: &str) -> Result<BodyMapping, serde_json::Error> {
        let mut value: Value = serde_json::from_str(handle)?;
        if let Some(map) = value.as_object_mut() {
            map.retain(|_, v| !v.is_null());
        }
        serde_json::from_value(value)
    }

    fn is_empty(&self) -> bool {
        self.add_parameter_keys.is_empty()
            && self.replace_parameter_keys.is_empty()
            && self.remove_parameter_keys.is_empty()
    }

    /// The rewritten body for a content type, `None` to send it unchanged.
    pub(crate) fn apply(&self, content_type: Option<&str>, body: &[u8]) -> Option<Vec<u8>> {
        let media = content_type?
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "application/json" => self.apply_json(body),
            "application/x-www-form-urlencoded" => Some(self.apply_form(body)),
            _ => None,
        }
    }

    fn apply_json(&self, body: &[u8]) -> Option<Vec<u8>> {
        let mut doc: Value = serde_json::from_slice(body).ok()?;
        for add in &self.add_parameter_keys {
            if let Some(obj) = object_at(&mut doc, &add.path) {
                obj.insert(add.key.clone(), Value::String(add.value.clone()));
            }
        }
        for rename in &self.replace_parameter_keys {
            if let Some(obj) = object_at(&mut doc, &rename.path)
                && let Some(v) = obj.remove(&rename.key)
            {
                obj.insert(rename.value.clone(), v);
            }
        }
        for path in &self.remove_parameter_keys {
            if let Some((parent, last)) = split_last(path)
                && let Some(obj) = object_at(&mut doc, &parent)
            {
                obj.remove(last);
            }
        }
        serde_json::to_vec(&doc).ok()
    }

    fn apply_form(&self, body: &[u8]) -> Vec<u8> {
        let text = String::from_utf8_lossy(body);
        let mut fields: Vec<(String, String)> = text
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| match p.split_once('=') {
                Some((k, v)) => (k.to_owned(), v.to_owned()),
                None => (p.to_owned(), String::new()),
            })
            .collect();
        for add in &self.add_parameter_keys {
            fields.retain(|(k, _)| *k != add.key);
            fields.push((add.key.clone(), url_codec::encode(&add.value)));
        }
        for rename in &self.replace_parameter_keys {
            for (k, _) in &mut fields {
                if *k == rename.key {
                    k.clone_from(&rename.value);
                }
            }
        }
        for path in &self.remove_parameter_keys {
            let name = split_last(path).map_or(path.as_str(), |(_, last)| last);
            fields.retain(|(k, _)| k != name);
        }
        fields
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&")
            .into_bytes()
    }
}

/// `$.a.b` → the object at `a.b` (`$` → the root), if it is an object.
fn object_at<'v>(doc: &'v mut Value, path: &str) -> Option<&'v mut Map<String, Value>> {
    let rest = path.trim().strip_prefix('$')?;
    let mut at = doc;
    for key in rest.split('.').filter(|k| !k.is_empty()) {
        at = at.as_object_mut()?.get_mut(key)?;
    }
    at.as_object_mut()
}

/// `$.a.b` → (`$.a`, `b`).
fn split_last(path: &str) -> Option<(String, &str)> {
    let (parent, last) = path.trim().rsplit_once('.')?;
    (!last.is_empty()).then(|| (parent.to_owned(), last))
}

/// The paramMapping plugin.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ParamMapping;

impl Plugin for ParamMapping {
    const NAME: &'static str = NAME;
    const CLASS_NAME: &'static str = "org.apache.shenyu.plugin.param.mapping.ParamMappingPlugin";
    const ORDER: i32 = 70;
    type Selector = ();
    /// The rule's handle; `None` when absent or unreadable (logged): the rule changes nothing.
    type Rule = Option<Arc<BodyMapping>>;

    fn selector(_: &SelectorData, _: Option<&()>) {}

    fn rule(r: &RuleData) -> Option<Arc<BodyMapping>> {
        let h = r.handle.as_deref().filter(|_| r.plugin_name == NAME)?;
        BodyMapping::parse(h)
            .map(Arc::new)
            .inspect_err(|e| {
                tracing::warn!(rule = %r.id, plugin = %r.plugin_name, error = %e, "unreadable rule handle; ignored");
            })
            .ok()
    }

    fn execute<'a>(
        &'a self,
        table: &'a Table<Self>,
        req: RequestView<'a>,
        _: Option<crate::EmulatedBug>,
    ) -> Decision<'a> {
        now(match matched_rule(table, &req) {
            Err(r) => Outcome::Reject(r),
            Ok(Some(RuleChoice::Rule(rule))) => match &rule.handle {
                Some(m) if !m.is_empty() => Outcome::MapBody(Arc::clone(m)),
                _ => Outcome::Continue(None),
            },
            Ok(_) => Outcome::Continue(None),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HANDLE: &str = r#"{
        "addParameterKeys":[{"path":"$.user","key":"role","value":"admin"},{"path":"$","key":"src","value":"gw"}],
        "replaceParameterKeys":[{"path":"$","key":"id","value":"userId"}],
        "removeParameterKeys":["$.user.password","$.missing.x"]}"#;

    #[test]
    fn json_bodies() {
        let m = BodyMapping::parse(HANDLE).unwrap();
        let out = m
            .apply(
                Some("application/json; charset=utf-8"),
                br#"{"id":7,"user":{"name":"a","password":"p"}}"#,
            )
            .unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"userId":7,"src":"gw","user":{"name":"a","role":"admin"}})
        );
        assert_eq!(m.apply(Some("application/json"), b"{not json"), None);
        assert_eq!(m.apply(Some("text/plain"), b"id=1"), None);
        assert_eq!(m.apply(None, b"{}"), None);
    }

    #[test]
    fn form_bodies() {
        let m = BodyMapping::parse(
            r#"{"addParameterKeys":[{"path":"$","key":"role","value":"a b~*"}],
                "replaceParameterKeys":[{"path":"$","key":"id","value":"userId"}],
                "removeParameterKeys":["$.password"]}"#,
        )
        .unwrap();
        let out = m
            .apply(
                Some("application/x-www-form-urlencoded"),
                b"id=7&password=p&name=x",
            )
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "userId=7&name=x&role=a+b%7E*"
        );
    }

    #[test]
    fn null_lists_are_empty() {
        let m = BodyMapping::parse(r#"{"addParameterKeys":null}"#).unwrap();
        assert!(m.is_empty());
    }
}
