//! Conditions: [`ConditionData`] with its [`ParamType`] and [`Operator`] enums.

use serde::{Deserialize, Serialize};

use crate::de::null_default;
use crate::wire_enum::wire_enum;

/// One predicate of a selector or rule (ShenYu `ConditionData`).
///
/// The fields stay strings on the wire so that any payload round-trips unchanged; parse them
/// with [`ParamType::from_str`] and [`Operator::from_str`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct ConditionData {
    /// Parameter type, e.g. `uri`, `header` (see [`ParamType`]).
    #[serde(deserialize_with = "null_default")]
    pub param_type: String,
    /// Operator alias, e.g. `=`, `match` (see [`Operator`]).
    #[serde(deserialize_with = "null_default")]
    pub operator: String,
    /// Header, query or cookie name; `/` for `uri` by convention.
    #[serde(deserialize_with = "null_default")]
    pub param_name: String,
    /// Value compared with the request's value (trimmed by the gateway).
    #[serde(deserialize_with = "null_default")]
    pub param_value: String,
}

impl ConditionData {
    /// A condition from its four parts.
    pub fn new(param_type: &str, operator: &str, param_name: &str, param_value: &str) -> Self {
        Self {
            param_type: param_type.to_owned(),
            operator: operator.to_owned(),
            param_name: param_name.to_owned(),
            param_value: param_value.to_owned(),
        }
    }
}

wire_enum! {
    /// Where a condition reads its value from (ShenYu `ParamTypeEnum`).
    ParamType, "param type" {
        /// A field of the gateway's request context (ShenYu reads `ShenyuContext` by reflection).
        Post = "post",
        /// The request path (rewritten by contextPath when that plugin ran).
        Uri = "uri",
        /// The first value of a query parameter.
        Query = "query",
        /// The client host.
        Host = "host",
        /// The client IP.
        Ip = "ip",
        /// The first value of a header.
        Header = "header",
        /// A cookie value.
        Cookie = "cookie",
        /// The HTTP method, upper case.
        ReqMethod = "req_method",
        /// The Host header's host part.
        Domain = "domain",
        /// Listed by ShenYu but never extracted by its gateway.
        Path = "path",
        /// Listed by ShenYu but never extracted by its gateway.
        FormData = "form-data",
    }
}

wire_enum! {
    /// How a condition compares (ShenYu `OperatorEnum` aliases; `equals` is the SPI key of `=`).
    Operator, "operator" {
        /// AntPathMatcher on `uri`, substring elsewhere.
        Match = "match",
        /// Exact, case-sensitive equality.
        Equals = "=" | "equals",
        /// Full-string RE2 match.
        Regex = "regex",
        /// Substring.
        Contains = "contains",
        /// Before a `yyyy-MM-dd HH:mm:ss` local time.
        TimeBefore = "TimeBefore",
        /// After a `yyyy-MM-dd HH:mm:ss` local time.
        TimeAfter = "TimeAfter",
        /// Negated `match`.
        Exclude = "exclude",
        /// Prefix.
        StartsWith = "startsWith",
        /// Suffix.
        EndsWith = "endsWith",
        /// Spring PathPattern on `uri`, substring elsewhere.
        PathPattern = "pathPattern",
        /// The value is missing, empty or whitespace.
        IsBlank = "isBlank",
        /// In ShenYu's enum with `support=false`; no judge exists.
        Gt = ">",
        /// In ShenYu's enum with `support=false`; no judge exists.
        Lt = "<",
        /// Removed from ShenYu in 2.4.2.
        SpEl = "SpEL",
        /// Removed from ShenYu in 2.4.2.
        Groovy = "Groovy",
    }
}

impl ParamType {
    /// Whether the gateway reads a value for it (ShenYu lists `path` and `form-data` but its
    /// gateway never extracts them).
    pub fn is_extractable(self) -> bool {
        !matches!(self, ParamType::Path | ParamType::FormData)
    }
}

/// Why a condition cannot work on the gateway, naming the field at fault: a param type the
/// gateway never extracts, an operator it has no judge for, a missing `paramName` for
/// `header`/`query`/`cookie`, a blank `paramValue` (except for `isBlank`), or a value its
/// operator cannot read (a `pathPattern` on `uri` Spring cannot parse, a time that is not
/// `yyyy-MM-dd HH:mm:ss`, a regex re2j refuses). The admin refuses such a condition; the
/// harness reports it at its line in a case file.
pub fn check(
    param_type: ParamType,
    operator: Operator,
    param_name: &str,
    param_value: &str,
) -> Result<(), (&'static str, String)> {
    if !param_type.is_extractable() {
        let supported: Vec<&str> = ParamType::ALL
            .iter()
            .filter(|p| p.is_extractable())
            .map(|p| p.as_str())
            .collect();
        return Err((
            "paramType",
            format!(
                "param type `{param_type}` is not supported by the gateway (supported: {})",
                supported.join(", ")
            ),
        ));
    }
    if !operator.is_supported() {
        return Err((
            "operator",
            format!("operator `{operator}` is not supported (ShenYu has no judge for it)"),
        ));
    }
    if matches!(
        param_type,
        ParamType::Header | ParamType::Query | ParamType::Cookie
    ) && param_name.trim().is_empty()
    {
        return Err((
            "paramName",
            format!("must not be blank for param type `{param_type}`"),
        ));
    }
    if param_value.trim().is_empty() && operator != Operator::IsBlank {
        return Err(("paramValue", "must not be blank".to_owned()));
    }
    if operator == Operator::PathPattern && param_type == ParamType::Uri {
        // As the gateway parses it (Spring's `PathPatternParser`); what Spring cannot parse,
        // ShenYu's gateway answers 400 to every request that reaches the condition.
        crate::path_pattern::PathPattern::parse(param_value.trim())
            .map_err(|e| ("paramValue", e))?;
    }
    if matches!(operator, Operator::TimeBefore | Operator::TimeAfter) {
        crate::time::parse_time(param_value.trim()).map_err(|e| ("paramValue", e))?;
    }
    if operator == Operator::Regex {
        // As the gateway compiles it: trimmed like Java's `String.trim()`, read as re2j reads
        // it (syntax re2j refuses is refused here, ShenYu would answer 500), then built.
        let value = param_value.trim_matches(|c: char| c <= '\u{20}');
        crate::re2j::translate(value)
            .and_then(|body| {
                regex::Regex::new(&format!("^(?:{body})$"))
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| ("paramValue", format!("invalid regex: {e}")))?;
    }
    Ok(())
}

impl Operator {
    /// Whether a current ShenYu gateway has a judge for this operator.
    pub fn is_supported(self) -> bool {
        !matches!(
            self,
            Operator::Gt | Operator::Lt | Operator::SpEl | Operator::Groovy
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_aliases_parse() {
        assert_eq!("=".parse::<Operator>().unwrap(), Operator::Equals);
        assert_eq!("equals".parse::<Operator>().unwrap(), Operator::Equals);
        assert_eq!(Operator::Equals.as_str(), "=");
        assert_eq!(
            "pathPattern".parse::<Operator>().unwrap(),
            Operator::PathPattern
        );
        let err = "pathpattern".parse::<Operator>().unwrap_err();
        assert!(
            err.to_string().contains("unknown operator `pathpattern`"),
            "{err}"
        );
        assert!(!Operator::SpEl.is_supported());
    }

    #[test]
    fn param_types_parse() {
        for p in ParamType::ALL {
            assert_eq!(p.as_str().parse::<ParamType>().unwrap(), *p);
        }
        assert!("URI".parse::<ParamType>().is_err());
    }

    #[test]
    fn gson_escaped_operator_reads_as_equals() {
        let c: ConditionData = serde_json::from_str(
            r#"{"paramType":"uri","operator":"\u003d","paramName":"/","paramValue":"/a"}"#,
        )
        .unwrap();
        assert_eq!(c.operator, "=");
        assert_eq!(c.operator.parse::<Operator>().unwrap(), Operator::Equals);
    }
}
