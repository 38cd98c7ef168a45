//! The contextPath plugin's rule handle ([`ContextMappingRuleHandle`], protocol §2.12, §11.4).

use serde::{Deserialize, Serialize};

/// A contextPath rule's `handle` (ShenYu `ContextMappingRuleHandle`). Blank strings count as
/// absent, as in ShenYu's `StringUtils.isNoneBlank` checks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContextMappingRuleHandle {
    /// Leading part cut from the path: `realUrl = path[contextPath.len()..]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_path: Option<String>,
    /// Put before `realUrl` (or before the whole path when `realUrl` is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub add_prefix: Option<String>,
    /// Carried for ShenYu's admin UI (registration sends `false`); routing ignores it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub add_prefixed: Option<bool>,
    /// When set (and the draw falls under `percentage`), later plugins match on
    /// `rewriteContextPath + realUrl` instead of `contextPath + realUrl`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewrite_context_path: Option<String>,
    /// Share of requests, 0–100, that get `rewriteContextPath`; 100 when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentage: Option<i32>,
}

impl ContextMappingRuleHandle {
    /// Parses a handle; blank means an empty handle (changes nothing).
    pub fn parse(handle: &str) -> Result<ContextMappingRuleHandle, serde_json::Error> {
        if handle.trim().is_empty() {
            return Ok(ContextMappingRuleHandle::default());
        }
        serde_json::from_str(handle)
    }

    /// `contextPath`, unless blank.
    pub fn context_path(&self) -> Option<&str> {
        non_blank(self.context_path.as_deref())
    }

    /// `addPrefix`, unless blank.
    pub fn add_prefix(&self) -> Option<&str> {
        non_blank(self.add_prefix.as_deref())
    }

    /// `rewriteContextPath`, unless blank.
    pub fn rewrite_context_path(&self) -> Option<&str> {
        non_blank(self.rewrite_context_path.as_deref())
    }

    /// `percentage`, 100 when absent.
    pub fn percentage(&self) -> i32 {
        self.percentage.unwrap_or(100)
    }

    /// Why this handle cannot work, naming the field: a `percentage` outside 0–100.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        match self.percentage {
            Some(p) if !(0..=100).contains(&p) => {
                Err(("percentage", format!("must be within 0..=100, got {p}")))
            }
            _ => Ok(()),
        }
    }
}

fn non_blank(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_registration_handles_and_treats_blank_as_absent() {
        let h = ContextMappingRuleHandle::parse(r#"{"contextPath":"/http","addPrefixed":false}"#)
            .unwrap();
        assert_eq!(h.context_path(), Some("/http"));
        assert_eq!(h.add_prefix(), None);
        assert_eq!(h.percentage(), 100);
        let blank =
            ContextMappingRuleHandle::parse(r#"{"contextPath":" ","addPrefix":""}"#).unwrap();
        assert_eq!((blank.context_path(), blank.add_prefix()), (None, None));
        assert_eq!(
            ContextMappingRuleHandle::parse("  ").unwrap(),
            ContextMappingRuleHandle::default()
        );
        assert_eq!(
            serde_json::to_string(&h).unwrap(),
            r#"{"contextPath":"/http","addPrefixed":false}"#
        );
    }

    #[test]
    fn percentage_is_checked() {
        let h = |p| ContextMappingRuleHandle {
            percentage: Some(p),
            ..Default::default()
        };
        assert!(h(0).check().is_ok());
        assert!(h(100).check().is_ok());
        assert_eq!(h(101).check().unwrap_err().0, "percentage");
        assert!(h(-1).check().is_err());
    }
}
