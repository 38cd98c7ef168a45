//! Parameter extraction (ShenYu's `ParameterData` SPI, semantics §3): the request value a
//! condition's `paramType` / `paramName` selects. `None` is Java's `null`.

use std::net::IpAddr;

use super::Failure;
use super::java;
use super::query;
use super::request::Request;

/// The `ShenyuContext` fields ShenYu's `post` extraction can read (by reflection).
const CONTEXT_FIELDS: &[&str] = &[
    "module",
    "method",
    "rpcType",
    "httpMethod",
    "sign",
    "timestamp",
    "appKey",
    "path",
    "contextPath",
    "realUrl",
];

/// The value of `param_type` / `name` in `req`.
pub(crate) fn extract(
    param_type: &str,
    name: &str,
    req: &Request,
) -> Result<Option<String>, Failure> {
    match param_type {
        // The raw path, undecoded (no rewrite plugin runs in front of this model).
        "uri" => Ok(Some(req.path.clone())),
        // First value, name case-insensitive; missing → "".
        "header" => Ok(Some(
            req.header_values(name)
                .next()
                .unwrap_or_default()
                .to_owned(),
        )),
        // First value, name case-sensitive; missing or valueless → null.
        "query" => query::first(req.query.as_deref(), name).map_err(Failure::bad_request),
        // First cookie of that name (case-sensitive); missing → "".
        "cookie" => Ok(Some(cookie(req, name).unwrap_or_default())),
        "ip" | "host" => client_address(req).map(Some),
        "domain" => Ok(req.header_values("host").next().map(host_part)),
        "req_method" => Ok(Some(req.method.clone())),
        "post" => match name {
            "startDateTime" => Err(Failure::internal(
                "ClassCastException: startDateTime is a LocalDateTime".to_owned(),
            )),
            n if CONTEXT_FIELDS.contains(&n) => Ok(req.context.get(n).cloned()),
            _ => Ok(None),
        },
        // The SPI lookup throws a NullPointerException for a blank name.
        blank if java::is_blank(Some(blank)) => Err(Failure::internal(
            "NullPointerException: get join name is null".to_owned(),
        )),
        // `path` and `form-data` are listed by ShenYu but have no extension; anything else
        // is an unknown SPI name too.
        other => Err(Failure::bad_request(format!(
            "No implementation for ParameterData `{other}`"
        ))),
    }
}

/// The first cookie named `name` over the `Cookie` lines (`a=1; b=2`).
fn cookie(req: &Request, name: &str) -> Option<String> {
    req.header_values("cookie")
        .flat_map(|line| line.split(';'))
        .filter_map(|pair| {
            let pair = pair.trim_matches([' ', '\t']);
            pair.split_once('=')
        })
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_owned())
}

/// `request.getURI().getHost()` for a `Host` value: the port stripped, case kept.
fn host_part(host: &str) -> String {
    if host.starts_with('[') {
        // An IPv6 literal keeps its brackets in Java's `URI.getHost()`.
        return host.find(']').map_or(host, |i| &host[..=i]).to_owned();
    }
    host.split_once(':').map_or(host, |(h, _)| h).to_owned()
}

/// The client address for `ip` and `host`: the socket peer as Java renders an address.
fn client_address(req: &Request) -> Result<String, Failure> {
    if req.header_values("x-forwarded-for").next().is_some() {
        return Err(Failure::Unmodelled(
            "X-Forwarded-For (ShenYu's ForwardedRemoteAddressResolver rules)".to_owned(),
        ));
    }
    Ok(java_host_address(req.peer))
}

/// `InetAddress.getHostAddress()`: dotted IPv4; IPv6 as eight uncompressed lower-case hex
/// groups; an IPv4-mapped IPv6 address is an IPv4 address in Java.
fn java_host_address(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6
                .segments()
                .iter()
                .map(|s| format!("{s:x}"))
                .collect::<Vec<_>>()
                .join(":"),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv6Addr;

    use super::*;

    fn req() -> Request {
        Request::new("PATCH", "/a%20b;x=1?q=1&Q=2&q=3&e=&n")
            .with_header("Host", "Example.COM:8080")
            .with_header("X-A", "first")
            .with_header("x-a", "second")
            .with_header("Cookie", "c=1; C=2;c=3; d=")
    }

    fn get(t: &str, n: &str) -> Option<String> {
        extract(t, n, &req()).unwrap()
    }

    #[test]
    fn values() {
        assert_eq!(get("uri", "/").as_deref(), Some("/a%20b;x=1"));
        assert_eq!(get("header", "x-A").as_deref(), Some("first"));
        assert_eq!(get("header", "x-b").as_deref(), Some(""));
        assert_eq!(get("header", " x-a").as_deref(), Some(""));
        assert_eq!(get("query", "q").as_deref(), Some("1"));
        assert_eq!(get("query", "Q").as_deref(), Some("2"));
        assert_eq!(get("query", "e").as_deref(), Some(""));
        assert_eq!(get("query", "n"), None);
        assert_eq!(get("query", "zz"), None);
        assert_eq!(get("cookie", "c").as_deref(), Some("1"));
        assert_eq!(get("cookie", "C").as_deref(), Some("2"));
        assert_eq!(get("cookie", "d").as_deref(), Some(""));
        assert_eq!(get("cookie", "x").as_deref(), Some(""));
        assert_eq!(get("domain", "").as_deref(), Some("Example.COM"));
        assert_eq!(get("req_method", "").as_deref(), Some("PATCH"));
        assert_eq!(get("ip", "").as_deref(), Some("127.0.0.1"));
        assert_eq!(get("host", "").as_deref(), Some("127.0.0.1"));
        assert_eq!(get("post", "httpMethod"), None);
    }

    #[test]
    fn errors() {
        let r = Request::new("GET", "/?q=%zz");
        assert_eq!(extract("query", "r", &r).unwrap_err().status(), Some(400));
        assert_eq!(extract("path", "x", &r).unwrap_err().status(), Some(400));
        assert_eq!(
            extract("form-data", "x", &r).unwrap_err().status(),
            Some(400)
        );
        assert_eq!(
            extract("post", "startDateTime", &r).unwrap_err().status(),
            Some(500)
        );
        let xff = Request::new("GET", "/").with_header("X-Forwarded-For", "1.2.3.4, 5.6.7.8");
        assert_eq!(extract("ip", "", &xff).unwrap_err().status(), None);
    }

    #[test]
    fn java_renders_addresses() {
        assert_eq!(
            java_host_address(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            "0:0:0:0:0:0:0:1"
        );
        assert_eq!(
            java_host_address("::ffff:10.0.0.1".parse().unwrap()),
            "10.0.0.1"
        );
        assert_eq!(
            java_host_address("2001:db8::ab".parse().unwrap()),
            "2001:db8:0:0:0:0:0:ab"
        );
        assert_eq!(host_part("[::1]:80"), "[::1]");
        assert_eq!(host_part("localhost"), "localhost");
    }
}
