//! Reading a condition's value (`realData`) from the request (ShenYu `ParameterData` SPI).
//!
//! Every [`Param`] is built once per snapshot; extraction borrows from the request and only
//! allocates when a value must be decoded (query) or rendered (client address).

use std::borrow::Cow;
use std::net::IpAddr;

use http::HeaderName;
use model::ParamType;
use model::url_codec::{self, IllegalEscape};

use super::{MatchError, RequestView};
use crate::java::java_ip;

/// Where a compiled condition reads its value from.
#[derive(Debug, Clone)]
pub(crate) enum Param {
    /// The raw, undecoded request path without the query.
    Uri,
    /// The method name, upper case.
    ReqMethod,
    /// The first value of a header (`None` when the name is not a valid header name).
    Header(Option<HeaderName>),
    /// The first value of a query parameter, URL-decoded.
    Query(String),
    /// The first cookie with this name.
    Cookie(String),
    /// The Host header's host, port stripped.
    Domain,
    /// The client address (`ip`), `X-Forwarded-For` considered as ShenYu does (see
    /// `forwarded_entry`); a forwarded host name other than `localhost` is an error (ShenYu
    /// resolves it through DNS, and fails with HTTP 500 when it cannot).
    Ip,
    /// The client host (`host`): the same as `ip` for IP literals, a forwarded host name as
    /// typed.
    Host,
    /// A `ShenyuContext` field read by name.
    Post(PostField),
    /// A param type ShenYu has no extractor for: evaluating it fails with HTTP 400.
    Unsupported(&'static str),
}

/// The `ShenyuContext` fields gantry can answer for `post` conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PostField {
    /// `module`: `divide-http`.
    Module,
    /// `method` and `path` and `realUrl`: the raw path.
    Path,
    /// `rpcType`: `http`.
    RpcType,
    /// `httpMethod`: the method name.
    HttpMethod,
    /// `sign`, `timestamp`, `appKey`: the request headers of the same name.
    Header(&'static str),
    /// Any other field: `null`.
    Unknown,
}

impl Param {
    /// Compiles a param type and name.
    pub(crate) fn compile(param_type: ParamType, name: &str) -> Param {
        match param_type {
            ParamType::Uri => Param::Uri,
            ParamType::ReqMethod => Param::ReqMethod,
            ParamType::Header => {
                Param::Header(HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()).ok())
            }
            ParamType::Query => Param::Query(name.to_owned()),
            ParamType::Cookie => Param::Cookie(name.to_owned()),
            ParamType::Domain => Param::Domain,
            ParamType::Ip => Param::Ip,
            ParamType::Host => Param::Host,
            ParamType::Post => Param::Post(match name {
                "module" => PostField::Module,
                "method" | "path" | "realUrl" => PostField::Path,
                "rpcType" => PostField::RpcType,
                "httpMethod" => PostField::HttpMethod,
                "sign" => PostField::Header("sign"),
                "timestamp" => PostField::Header("timestamp"),
                "appKey" => PostField::Header("appkey"),
                _ => PostField::Unknown,
            }),
            ParamType::Path => Param::Unsupported("path"),
            ParamType::FormData => Param::Unsupported("form-data"),
        }
    }

    /// The request's value, `None` when absent (ShenYu `null`).
    pub(crate) fn extract<'r>(
        &self,
        req: &'r RequestView<'_>,
    ) -> Result<Option<Cow<'r, str>>, MatchError> {
        Ok(match self {
            Param::Uri => Some(Cow::Borrowed(req.path)),
            Param::ReqMethod => Some(Cow::Borrowed(req.method.as_str())),
            Param::Header(Some(name)) => Some(header_value(req, name.as_str())),
            Param::Header(None) => Some(Cow::Borrowed("")),
            Param::Query(name) => query_param(req.query, name)
                .map_err(|e| MatchError::bad_request(format!("invalid query string: {e}")))?,
            Param::Cookie(name) => Some(Cow::Borrowed(cookie(req, name))),
            Param::Domain => Some(Cow::Borrowed(domain(req))),
            Param::Ip => Some(Cow::Owned(match client_address(req) {
                Client::Ip(ip) => java_ip(ip),
                Client::Name(name) => {
                    return Err(MatchError::internal(format!(
                        "cannot resolve forwarded client `{name}`"
                    )));
                }
            })),
            Param::Host => Some(match forwarded_entry(req) {
                Some("") => Cow::Borrowed("localhost"),
                Some(entry) => match parse_ip(entry) {
                    Some(ip) => Cow::Owned(java_ip(ip)),
                    None => Cow::Borrowed(entry),
                },
                None => Cow::Owned(java_ip(req.peer)),
            }),
            Param::Post(field) => match field {
                PostField::Module => Some(Cow::Borrowed("divide-http")),
                PostField::Path => Some(Cow::Borrowed(req.path)),
                PostField::RpcType => Some(Cow::Borrowed("http")),
                PostField::HttpMethod => Some(Cow::Borrowed(req.method.as_str())),
                PostField::Header(name) => req
                    .headers
                    .contains_key(*name)
                    .then(|| header_value(req, name)),
                PostField::Unknown => None,
            },
            Param::Unsupported(name) => {
                return Err(MatchError::bad_request(format!(
                    "param type `{name}` has no extractor in the gateway"
                )));
            }
        })
    }
}

fn header_value<'r>(req: &'r RequestView<'_>, name: &str) -> Cow<'r, str> {
    match req.headers.get(name) {
        Some(v) => String::from_utf8_lossy(v.as_bytes()),
        None => Cow::Borrowed(""),
    }
}

/// The client as ShenYu's `ForwardedRemoteAddressResolver(1)` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client<'r> {
    /// An address (socket peer, forwarded IP literal, or loopback for an empty entry).
    Ip(IpAddr),
    /// A forwarded host name (ShenYu resolves it through DNS; gantry does not).
    Name(&'r str),
}

/// The `X-Forwarded-For` entry ShenYu uses, if any (semantics §3): exactly one header line,
/// split on `", "`; a single non-empty entry is ignored; otherwise the leftmost entry.
fn forwarded_entry<'r>(req: &'r RequestView<'_>) -> Option<&'r str> {
    let mut lines = req.headers.get_all("x-forwarded-for").iter();
    let line = lines.next()?;
    if lines.next().is_some() {
        return None;
    }
    let text = line.to_str().ok()?;
    let mut entries = text.split(", ");
    let first = entries.next()?;
    if entries.next().is_none() && !first.is_empty() {
        return None;
    }
    Some(first)
}

fn client_address<'r>(req: &'r RequestView<'_>) -> Client<'r> {
    match forwarded_entry(req) {
        None => Client::Ip(req.peer),
        Some("") => Client::Ip(IpAddr::from([127, 0, 0, 1])),
        Some(entry) => match parse_ip(entry) {
            Some(ip) => Client::Ip(ip),
            None if entry.eq_ignore_ascii_case("localhost") => {
                Client::Ip(IpAddr::from([127, 0, 0, 1]))
            }
            None => Client::Name(entry),
        },
    }
}

/// An IP literal, IPv6 with or without brackets.
fn parse_ip(entry: &str) -> Option<IpAddr> {
    let literal = entry
        .strip_prefix('[')
        .and_then(|e| e.strip_suffix(']'))
        .unwrap_or(entry);
    literal.parse().ok()
}

fn cookie<'r>(req: &'r RequestView<'_>, name: &str) -> &'r str {
    for line in req.headers.get_all(http::header::COOKIE) {
        let Ok(line) = line.to_str() else { continue };
        for pair in line.split(';') {
            let pair = pair.trim_matches(' ');
            if let Some((n, v)) = pair.split_once('=')
                && n.trim() == name
            {
                return v.trim();
            }
        }
    }
    ""
}

fn domain<'r>(req: &'r RequestView<'_>) -> &'r str {
    let host = req
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or(req.authority)
        .unwrap_or("");
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

/// The first value of `name` in a raw query, as Spring's `AbstractServerHttpRequest` parses it:
/// regex `([^&=]+)(=?)([^&]+)?` over the query, name and value URL-decoded (`+` is a space).
/// `q=` gives `""`, a bare `q` gives `None`.
///
/// Spring decodes every name and value the first time any parameter is read
/// (`initQueryParams`), so a bad `%` escape anywhere in the query is an error for every name,
/// even one that comes before it or is absent. The rest of the query is only checked, not
/// decoded; nothing is allocated unless a matched name or the value has escapes.
pub(crate) fn query_param<'q>(
    query: Option<&'q str>,
    name: &str,
) -> Result<Option<Cow<'q, str>>, IllegalEscape> {
    let Some(query) = query else { return Ok(None) };
    // The first match's raw value (`Some(None)`: the name without `=`).
    let mut found: Option<Option<&'q str>> = None;
    for segment in query.split('&') {
        // A match starts at the first char that is neither `&` nor `=`.
        let segment = segment.trim_start_matches('=');
        if segment.is_empty() {
            continue;
        }
        let (raw_name, raw_value) = match segment.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (segment, None),
        };
        if found.is_none() && url_codec::decode(raw_name)? == name {
            found = Some(raw_value);
        } else {
            url_codec::check(raw_name)?;
        }
        if let Some(v) = raw_value {
            url_codec::check(v)?;
        }
    }
    match found {
        Some(Some(v)) => Ok(Some(url_codec::decode(v)?)),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("a=1&b=2", "b", Some("2"))]
    #[case("a=b=c", "a", Some("b=c"))]
    #[case("q=", "q", Some(""))]
    #[case("q", "q", None)]
    #[case("=x", "x", None)]
    #[case("a=1&a=2", "a", Some("1"))]
    #[case("n=hello+world%21", "n", Some("hello world!"))]
    #[case("na%6De=v", "name", Some("v"))]
    #[case("A=1", "a", None)]
    #[case("", "a", None)]
    fn spring_query_parsing(#[case] query: &str, #[case] name: &str, #[case] want: Option<&str>) {
        assert_eq!(query_param(Some(query), name).unwrap().as_deref(), want);
    }

    #[test]
    fn bad_escape_is_an_error() {
        assert!(query_param(Some("a=%zz"), "a").is_err());
    }

    /// Spring decodes every name and value at the first lookup: a bad escape anywhere in the
    /// query fails every name, present or not, before or after it.
    #[rstest]
    #[case("r=%zz", "q")]
    #[case("q=a&r=%zz", "q")]
    #[case("r=%zz&q=a", "q")]
    #[case("q=a&%zz=1", "q")]
    #[case("q=a&r=%4", "q")]
    #[case("q=a&r=a%", "q")]
    #[case("q=a&&==r=%G1", "q")]
    #[case("q&r=%zz", "q")]
    fn bad_escape_anywhere_fails_every_name(#[case] query: &str, #[case] name: &str) {
        assert!(query_param(Some(query), name).is_err(), "{query}");
    }

    #[test]
    fn decodes_only_what_it_returns() {
        // Java's `Integer.parseInt` takes a sign: `%+1` is U+0001.
        assert_eq!(
            query_param(Some("q=%2B+a&r=%+1"), "q").unwrap().as_deref(),
            Some("+ a")
        );
        assert!(matches!(
            query_param(Some("r=x%41&q=abc"), "q").unwrap(),
            Some(Cow::Borrowed("abc"))
        ));
    }
}
