//! Request matching: compiled conditions ([`Condition`]), their evaluation under a match mode,
//! and selector → rule selection ([`select`]). Pure code: no I/O, no async, no locks.
//!
//! Module map: [`param`] reads a param type from the request, [`judge`] holds the operators,
//! [`ant_path`] and [`model::path_pattern`] are Spring's two path matchers, [`select`] picks the
//! selector and the rule, narrowing the selectors with an [`index`] built per snapshot.
//!
//! The router knows no plugin: its tables carry payloads the plugins compile from their
//! handles (`crate::plugin`). It uses neither the plugins, the balancers nor the snapshot;
//! `boundary.rs` (a test) checks that.

pub(crate) mod ant_path;
#[cfg(test)]
mod boundary;
pub(crate) mod index;
pub(crate) mod judge;
pub(crate) mod param;
pub(crate) mod select;

use std::net::IpAddr;

use http::{HeaderMap, Method, StatusCode};
use model::{ConditionData, MatchMode, Operator, ParamType};

use self::index::Entry;
use self::judge::{Judge, is_blank};
use self::param::Param;

/// The parts of a request that conditions read, borrowed for the duration of matching.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestView<'a> {
    /// Method.
    pub(crate) method: &'a Method,
    /// Raw, undecoded path (no query).
    pub(crate) path: &'a str,
    /// Raw query, without `?`.
    pub(crate) query: Option<&'a str>,
    /// URI authority, when the request line carried one.
    pub(crate) authority: Option<&'a str>,
    /// Headers.
    pub(crate) headers: &'a HeaderMap,
    /// Socket peer address.
    pub(crate) peer: IpAddr,
    /// Whether the peer is a trusted proxy (`--trusted-proxies`), whose forwarding headers
    /// the rate limiter's key resolver believes.
    pub(crate) peer_trusted: bool,
}

/// Matching failed the way ShenYu's `GlobalErrorHandler` reports it: HTTP 400 for unknown
/// names and path-pattern parse errors, HTTP 500 for everything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MatchError {
    /// HTTP status.
    pub(crate) status: StatusCode,
    /// Message naming what failed.
    pub(crate) message: String,
}

impl MatchError {
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
        }
    }

    fn in_condition(self, label: &str) -> Self {
        Self {
            status: self.status,
            message: format!("condition {label}: {}", self.message),
        }
    }
}

/// The operator part of a compiled condition.
#[derive(Debug, Clone)]
enum Op {
    /// Blank operator: the condition is false.
    Blank,
    /// Unknown or unsupported operator: HTTP 400 when evaluated.
    Unknown(String),
    /// A judge.
    Judge(Judge),
}

/// A condition compiled once per snapshot.
#[derive(Debug, Clone)]
pub(crate) struct Condition {
    label: String,
    /// The extractor, or the error that evaluating this condition raises.
    param: Result<Param, MatchError>,
    op: Op,
}

impl Condition {
    /// Compiles a condition; failures are kept and reported when it is evaluated.
    pub(crate) fn compile(c: &ConditionData) -> Condition {
        let label = format!(
            "[{} {} {} {}]",
            c.param_type, c.operator, c.param_name, c.param_value
        );
        // ShenYu looks the param type up by name: a blank name throws a NullPointerException
        // (`get join name is null`, HTTP 500), an unknown one an IllegalArgumentException (400).
        let param = if is_blank(Some(&c.param_type)) {
            Err(MatchError::internal("blank param type"))
        } else {
            c.param_type
                .parse::<ParamType>()
                .map(|t| Param::compile(t, &c.param_name))
                .map_err(|e| MatchError::bad_request(e.to_string()))
        };
        let op = if is_blank(Some(&c.operator)) {
            Op::Blank
        } else {
            match c.operator.parse::<Operator>() {
                Err(e) => Op::Unknown(e.to_string()),
                Ok(operator) => {
                    match Judge::compile(
                        operator,
                        c.param_type == "uri",
                        &c.param_name,
                        &c.param_value,
                    ) {
                        Ok(judge) => Op::Judge(judge),
                        Err(e) => Op::Unknown(e),
                    }
                }
            }
        };
        Condition { label, param, op }
    }

    /// For a `uri =` or `uri startsWith` condition: the path, or the path prefix, that the
    /// request path must equal or start with for it to hold (the judge's trimmed value). Such
    /// a condition is `false` without error for any other path: reading `uri` never fails.
    pub(crate) fn uri_key(&self) -> Option<Entry<'_>> {
        match (&self.param, &self.op) {
            (Ok(Param::Uri), Op::Judge(Judge::Equals(v))) => Some(Entry::Exact(v)),
            (Ok(Param::Uri), Op::Judge(Judge::StartsWith(v))) => Some(Entry::Prefix(v)),
            _ => None,
        }
    }

    /// Evaluates the condition in ShenYu's order: extract the value (blank param type → 500,
    /// unknown → 400), blank operator → false, unknown operator → 400, blank value → false
    /// unless `isBlank`, then judge.
    pub(crate) fn eval(&self, req: &RequestView<'_>) -> Result<bool, MatchError> {
        let param = self
            .param
            .as_ref()
            .map_err(|e| e.clone().in_condition(&self.label))?;
        let real = param
            .extract(req)
            .map_err(|e| e.in_condition(&self.label))?;
        let judge = match &self.op {
            Op::Blank => return Ok(false),
            Op::Unknown(e) => {
                return Err(MatchError::bad_request(e.as_str()).in_condition(&self.label));
            }
            Op::Judge(judge) => judge,
        };
        let real = real.as_deref();
        if !matches!(judge, Judge::IsBlank) && is_blank(real) {
            return Ok(false);
        }
        judge.judge(real).map_err(|e| e.in_condition(&self.label))
    }
}

/// Evaluates a condition list: `and` (and any unknown code) = all, `or` = any, left to right
/// with short-circuit (a condition after the deciding one is never evaluated, so its errors
/// never surface).
pub(crate) fn eval_all(
    mode: MatchMode,
    conditions: &[Condition],
    req: &RequestView<'_>,
) -> Result<bool, MatchError> {
    if mode.is_all() {
        for c in conditions {
            if !c.eval(req)? {
                return Ok(false);
            }
        }
        Ok(true)
    } else {
        for c in conditions {
            if c.eval(req)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
pub(crate) mod test_helpers {
    use super::*;

    /// An owned request to build [`RequestView`]s from in tests.
    #[derive(Debug)]
    pub(crate) struct TestRequest {
        pub(crate) method: Method,
        pub(crate) path: String,
        pub(crate) query: Option<String>,
        pub(crate) headers: HeaderMap,
        pub(crate) peer: IpAddr,
    }

    impl TestRequest {
        /// `GET path?query` from 127.0.0.1.
        pub(crate) fn get(uri: &str) -> Self {
            let (path, query) = match uri.split_once('?') {
                Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
                None => (uri.to_owned(), None),
            };
            Self {
                method: Method::GET,
                path,
                query,
                headers: HeaderMap::new(),
                peer: [127, 0, 0, 1].into(),
            }
        }

        /// Adds a header.
        pub(crate) fn header(mut self, name: &'static str, value: &str) -> Self {
            self.headers.append(name, value.parse().unwrap());
            self
        }

        /// The view.
        pub(crate) fn view(&self) -> RequestView<'_> {
            RequestView {
                method: &self.method,
                path: &self.path,
                query: self.query.as_deref(),
                authority: None,
                headers: &self.headers,
                peer: self.peer,
                peer_trusted: false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_helpers::TestRequest;
    use super::*;
    use rstest::rstest;

    fn eval(
        param_type: &str,
        op: &str,
        name: &str,
        value: &str,
        req: &TestRequest,
    ) -> Result<bool, MatchError> {
        Condition::compile(&ConditionData::new(param_type, op, name, value)).eval(&req.view())
    }

    fn sample() -> TestRequest {
        TestRequest::get("/http/order/findById?id=1&name=a+b&empty=")
            .header("x-test", "first")
            .header("x-test", "second")
            .header("x-space", "   ")
            .header("cookie", "session=abc; theme=dark")
            .header("host", "Example.com:8080")
    }

    #[rstest]
    #[case("uri", "=", "/", "/http/order/findById", true)]
    #[case("uri", "startsWith", "/", "/http", true)]
    #[case("uri", "endsWith", "/", "ById", true)]
    #[case("uri", "contains", "/", "order", true)]
    #[case("uri", "match", "/", "/http/**", true)]
    #[case("uri", "pathPattern", "/", "/http/{*rest}", true)]
    #[case("uri", "regex", "/", "/http/.*", true)]
    #[case("uri", "exclude", "/", "/admin/**", true)]
    #[case("uri", "isBlank", "/", "", false)]
    #[case("req_method", "=", "", "GET", true)]
    #[case("req_method", "=", "", "get", false)]
    #[case("req_method", "regex", "", "GET|POST", true)]
    #[case("header", "=", "X-Test", "first", true)]
    #[case("header", "=", "x-test", "second", false)]
    #[case("header", "contains", "x-test", "irs", true)]
    #[case("header", "match", "x-test", "fir", true)]
    #[case("header", "pathPattern", "x-test", "/**", false)]
    #[case("header", "startsWith", "x-test", "fi", true)]
    #[case("header", "endsWith", "x-test", "st", true)]
    #[case("header", "regex", "x-test", "f.*", true)]
    #[case("header", "exclude", "x-test", "zzz", true)]
    #[case("header", "exclude", "x-missing", "zzz", false)]
    #[case("header", "isBlank", "x-missing", "", true)]
    #[case("header", "isBlank", "x-space", "", true)]
    #[case("header", "=", "x-space", "", false)]
    #[case("header", "isBlank", "x-test", "", false)]
    #[case("query", "=", "id", "1", true)]
    #[case("query", "=", "id", " 1 ", true)]
    #[case("query", "=", "name", "a b", true)]
    #[case("query", "=", "missing", "1", false)]
    #[case("query", "isBlank", "missing", "", true)]
    #[case("query", "isBlank", "empty", "", true)]
    #[case("query", "exclude", "missing", "1", false)]
    #[case("query", "startsWith", "name", "a", true)]
    #[case("query", "regex", "id", r"\d", true)]
    #[case("cookie", "=", "theme", "dark", true)]
    #[case("cookie", "=", "Theme", "dark", false)]
    #[case("cookie", "isBlank", "nope", "", true)]
    #[case("domain", "=", "", "Example.com", true)]
    #[case("ip", "=", "", "127.0.0.1", true)]
    #[case("host", "startsWith", "", "127.", true)]
    #[case("post", "=", "httpMethod", "GET", true)]
    #[case("post", "=", "rpcType", "http", true)]
    #[case("post", "isBlank", "unknownField", "", true)]
    fn operators_on_param_types(
        #[case] param_type: &str,
        #[case] op: &str,
        #[case] name: &str,
        #[case] value: &str,
        #[case] want: bool,
    ) {
        assert_eq!(
            eval(param_type, op, name, value, &sample()).unwrap(),
            want,
            "{param_type} {op} {name} {value}"
        );
    }

    #[rstest]
    #[case("uri", "=~", "/", "/x", 400)]
    #[case("uri", "Equals", "/", "/x", 400)]
    #[case("uri", ">", "/", "/x", 400)]
    #[case("URI", "=", "/", "/x", 400)]
    #[case("path", "=", "/", "/x", 400)]
    #[case("form-data", "=", "/", "/x", 400)]
    #[case("uri", "pathPattern", "/", "/http/**/x", 400)]
    #[case("uri", "regex", "/", "(", 500)]
    #[case("", "=", "/", "/x", 500)]
    #[case(" \t", "=", "/", "/x", 500)]
    #[case("", "", "/", "/x", 500)]
    #[case("uri ", "=", "/", "/x", 400)]
    fn errors_name_the_condition(
        #[case] param_type: &str,
        #[case] op: &str,
        #[case] name: &str,
        #[case] value: &str,
        #[case] status: u16,
    ) {
        let err = eval(param_type, op, name, value, &sample()).unwrap_err();
        assert_eq!(err.status.as_u16(), status);
        assert!(err.message.contains(value), "{}", err.message);
    }

    #[test]
    fn unknown_operator_errors_even_when_value_missing() {
        assert!(eval("header", "=~", "x-missing", "a", &sample()).is_err());
        assert!(!eval("header", "regex", "x-missing", "(", &sample()).unwrap());
    }

    #[test]
    fn blank_operator_is_false() {
        assert!(!eval("uri", " ", "/", "/http/order/findById", &sample()).unwrap());
        assert!(!eval("uri", "", "/", "/http/order/findById", &sample()).unwrap());
    }

    #[test]
    fn and_or_short_circuit() {
        let ok = Condition::compile(&ConditionData::new("uri", "startsWith", "/", "/http"));
        let no = Condition::compile(&ConditionData::new("uri", "startsWith", "/", "/nope"));
        let bad = Condition::compile(&ConditionData::new("uri", "regex", "/", "("));
        let req = sample();
        let req = req.view();
        assert!(!eval_all(MatchMode::And, &[no.clone(), bad.clone()], &req).unwrap());
        assert!(eval_all(MatchMode::And, &[ok.clone(), bad.clone()], &req).is_err());
        assert!(eval_all(MatchMode::Or, &[ok.clone(), bad.clone()], &req).unwrap());
        assert!(eval_all(MatchMode::Or, &[no.clone(), bad.clone()], &req).is_err());
        assert!(eval_all(MatchMode::And, &[], &req).unwrap());
        assert!(!eval_all(MatchMode::Or, &[], &req).unwrap());
        assert!(!eval_all(MatchMode::Or, std::slice::from_ref(&no), &req).unwrap());
        assert!(eval_all(MatchMode::And, std::slice::from_ref(&ok), &req).unwrap());
        // An unknown code evaluates as `and` (ShenYu `MatchModeEnum.getMatchModeByCode`).
        let seven = MatchMode::Other(7);
        assert!(!eval_all(seven, &[ok.clone(), no.clone()], &req).unwrap());
        assert!(!eval_all(seven, &[no, bad.clone()], &req).unwrap());
        assert!(eval_all(seven, &[ok.clone(), bad], &req).is_err());
        assert!(eval_all(seven, &[], &req).unwrap());
        assert!(eval_all(MatchMode::Other(-1), &[ok], &req).unwrap());
    }

    /// A bad `%` escape anywhere in the query fails every evaluated `query` condition with
    /// 400 (Spring decodes the whole query at the first lookup); conditions that do not read
    /// the query, and `query` conditions never reached, are unaffected.
    #[test]
    fn bad_query_escape_fails_query_conditions_when_evaluated() {
        let req = TestRequest::get("/http/x?q=a&r=%zz");
        assert_eq!(eval("query", "=", "q", "a", &req).unwrap_err().status, 400);
        assert_eq!(eval("query", "=", "r", "a", &req).unwrap_err().status, 400);
        assert_eq!(
            eval("query", "isBlank", "missing", "", &req)
                .unwrap_err()
                .status,
            400
        );
        assert!(eval("uri", "startsWith", "/", "/http", &req).unwrap());
        let ok = Condition::compile(&ConditionData::new("uri", "startsWith", "/", "/http"));
        let no = Condition::compile(&ConditionData::new("uri", "startsWith", "/", "/nope"));
        let q = Condition::compile(&ConditionData::new("query", "=", "q", "a"));
        let req = req.view();
        assert!(!eval_all(MatchMode::And, &[no.clone(), q.clone()], &req).unwrap());
        assert!(eval_all(MatchMode::Or, &[ok.clone(), q.clone()], &req).unwrap());
        assert_eq!(
            eval_all(MatchMode::And, &[ok, q.clone()], &req)
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            eval_all(MatchMode::Or, &[no, q], &req).unwrap_err().status,
            400
        );
    }

    #[rstest]
    #[case(&[], "127.0.0.1", "127.0.0.1")]
    // One non-empty entry (also without the space) is ignored: the peer counts.
    #[case(&["1.2.3.4"], "127.0.0.1", "127.0.0.1")]
    #[case(&["1.2.3.4,5.6.7.8"], "127.0.0.1", "127.0.0.1")]
    // Several entries: the leftmost.
    #[case(&["1.2.3.4, 5.6.7.8"], "1.2.3.4", "1.2.3.4")]
    #[case(&["::1, 5.6.7.8"], "0:0:0:0:0:0:0:1", "0:0:0:0:0:0:0:1")]
    // Several header lines: all discarded.
    #[case(&["1.2.3.4, 5.6.7.8", "9.9.9.9, 8.8.8.8"], "127.0.0.1", "127.0.0.1")]
    // An empty entry: loopback.
    #[case(&[""], "127.0.0.1", "localhost")]
    #[case(&[", 5.6.7.8"], "127.0.0.1", "localhost")]
    #[case(&["localhost, 5.6.7.8"], "127.0.0.1", "localhost")]
    fn client_address_follows_forwarded_for(
        #[case] xff: &[&str],
        #[case] ip: &str,
        #[case] host: &str,
    ) {
        let mut req = TestRequest::get("/");
        req.peer = [127, 0, 0, 1].into();
        for line in xff {
            req = req.header("x-forwarded-for", line);
        }
        assert!(eval("ip", "=", "", ip, &req).unwrap(), "ip {xff:?}");
        assert!(eval("host", "=", "", host, &req).unwrap(), "host {xff:?}");
    }

    #[test]
    fn forwarded_host_names() {
        let req = TestRequest::get("/").header("x-forwarded-for", "client.example, 5.6.7.8");
        assert!(eval("host", "=", "", "client.example", &req).unwrap());
        assert_eq!(eval("ip", "=", "", "x", &req).unwrap_err().status, 500);
    }

    #[test]
    fn ipv6_peer_renders_like_java() {
        let mut req = TestRequest::get("/");
        req.peer = "::1".parse().unwrap();
        assert!(eval("ip", "=", "", "0:0:0:0:0:0:0:1", &req).unwrap());
    }
}
