//! Checks on a request before it is routed, each answered 400 with ShenYu's error body:
//!
//! - `Host` (RFC 9112 §3.2): an HTTP/1.1 request must carry exactly one, any other at most one,
//!   and its value must be an RFC 3986 authority (`reg-name` / IPv4 / `[IPv6]`, optional
//!   `:port`, at most [`MAX_HOST`] bytes). hyper accepts a missing, a repeated and any
//!   visible-ASCII `Host` (`a b`, `a, b`, 64 KB).
//! - the path, as Spring Security's `StrictHttpFirewall` refuses it (ShenYu's gateway runs no
//!   such firewall: a deliberate difference, see the README's compatibility notes). A selector
//!   matches the raw path, and an upstream decodes and normalises it its own way: Jetty reads
//!   `/g/..%2Fadmin` as `/admin`, Node `/g/..\admin`. Refused, so that what is matched and what
//!   the upstream serves are the same resource:
//!   - a `.` or `..` segment, also with percent-encoded dots (`%2e`, RFC 3986 §6.2.2.2 makes
//!     them the same); clients send normalised paths (browsers and curl resolve them);
//!   - an encoded slash `%2F`, a backslash `\` or `%5C`, a `;` or `%3B` (matrix parameters,
//!     which Servlet containers strip), an encoded `%` (`%25`: double encoding), an encoded
//!     NUL, CR or LF (`%00`, `%0D`, `%0A`), and any byte that is not visible ASCII.
//!
//! Each costs a scan of a few bytes and allocates nothing on a request that passes.

use http::{HeaderValue, Request, StatusCode, Version, header};
use model::GatewayError;

use crate::plugin::Rejection;

/// The longest `Host` accepted: a DNS name (255) and `:65535`.
const MAX_HOST: usize = 255 + 6;

/// `Ok` when the request may be routed, else the 400 answer.
pub(crate) fn check<B>(req: &Request<B>) -> Result<(), Rejection> {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (None, _) if req.version() == Version::HTTP_11 => {
            return Err(bad_request("an HTTP/1.1 request needs a Host header"));
        }
        (Some(_), Some(_)) => return Err(bad_request("more than one Host header")),
        (Some(host), None) if !is_authority(host) => {
            return Err(bad_request(
                "the Host header is not a host name or address with an optional port",
            ));
        }
        _ => {}
    }
    if let Some(what) = path_refusal(req.uri().path()) {
        return Err(bad_request(what));
    }
    Ok(())
}

fn bad_request(message: &str) -> Rejection {
    Rejection::new(StatusCode::BAD_REQUEST, GatewayError::new(400, message))
}

/// Whether `host` is an RFC 3986 `authority` without userinfo: `reg-name` (unreserved,
/// sub-delims except `,`, percent-encodings), an IPv4 address or an `[IPv6]` literal, then
/// an optional `:port` of up to five digits; at most [`MAX_HOST`] bytes. The empty value
/// (RFC 9112: allowed when the target URI has no authority) passes.
fn is_authority(host: &HeaderValue) -> bool {
    let host = host.as_bytes();
    if host.len() > MAX_HOST {
        return false;
    }
    let (name, port) = match host {
        [b'[', ..] => match host.iter().position(|&b| b == b']') {
            Some(end) => {
                let literal = &host[1..end];
                let ok = std::str::from_utf8(literal)
                    .is_ok_and(|s| s.parse::<std::net::Ipv6Addr>().is_ok());
                if !ok {
                    return false;
                }
                (&host[..0], &host[end + 1..])
            }
            None => return false,
        },
        _ => match host.iter().rposition(|&b| b == b':') {
            Some(colon) => (&host[..colon], &host[colon..]),
            None => (host, &host[host.len()..]),
        },
    };
    let port_ok = match port {
        [] => true,
        [b':', digits @ ..] => digits.len() <= 5 && digits.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    // A reg-name (an IPv4 address is one too): RFC 3986 §3.2.2 less `,`, which only a
    // combined header (`a, b`) produces.
    port_ok
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+;=".contains(&b))
}

/// What makes `path` refused (see the module docs), or `None`.
fn path_refusal(path: &str) -> Option<&'static str> {
    let bytes = path.as_bytes();
    let mut escapes = false;
    let mut dot = false;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\\' => return Some("the path has a backslash `\\`"),
            b';' => return Some("the path has a `;` (matrix parameters are not routed)"),
            b'.' => dot = true,
            b'%' => {
                escapes = true;
                let refused = match bytes.get(i + 1..i + 3) {
                    Some(b"2F" | b"2f") => "the path has an encoded slash `%2F`",
                    Some(b"5C" | b"5c") => "the path has an encoded backslash `%5C`",
                    Some(b"3B" | b"3b") => "the path has an encoded `;` (`%3B`)",
                    Some(b"25") => "the path has an encoded `%` (`%25`: double encoding)",
                    Some(b"00" | b"0A" | b"0a" | b"0D" | b"0d") => {
                        "the path has an encoded NUL, CR or LF (`%00`, `%0D`, `%0A`)"
                    }
                    _ => continue,
                };
                return Some(refused);
            }
            0x21..=0x7e => {}
            _ => return Some("the path has a byte that is not visible ASCII"),
        }
    }
    ((dot || escapes) && has_dot_segment(path))
        .then_some("the path has a `.` or `..` segment (also percent-encoded): send it normalised")
}

/// Whether a `/`-separated segment of `path` is `.` or `..`, dots possibly written `%2e`/`%2E`.
fn has_dot_segment(path: &str) -> bool {
    path.split('/')
        .any(|segment| is_dot_segment(segment.as_bytes()))
}

fn is_dot_segment(mut segment: &[u8]) -> bool {
    let mut dots = 0;
    while !segment.is_empty() {
        segment = match segment {
            [b'.', rest @ ..] => rest,
            [b'%', b'2', e, rest @ ..] if e.eq_ignore_ascii_case(&b'e') => rest,
            _ => return false,
        };
        dots += 1;
        if dots > 2 {
            return false;
        }
    }
    dots > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rstest::rstest]
    #[case("/g/../down/x", true)]
    #[case("/g/./x", true)]
    #[case("/g/..", true)]
    #[case("/g/.", true)]
    #[case("/..", true)]
    #[case("/g/%2e%2E/down", true)]
    #[case("/g/.%2e/down", true)]
    #[case("/g/%2E/x", true)]
    #[case("/g/x", false)]
    #[case("/", false)]
    #[case("", false)]
    #[case("/g/.../x", false)]
    #[case("/g/..x/y", false)]
    #[case("/g/x../y", false)]
    #[case("/g/file.json", false)]
    #[case("/g/%2e%2e%2e", false)]
    #[case("/g/%2ex", false)]
    #[case("/g/%2f..%2fx", false)]
    #[case("/g/%252e%252e/x", false)]
    fn dot_segments(#[case] path: &str, #[case] dot: bool) {
        assert_eq!(has_dot_segment(path), dot, "{path}");
    }

    /// What `StrictHttpFirewall` refuses (issue 35: `/pub/..%2Fadmin` reached `/admin` on
    /// Jetty, `/npub/..\admin` on Node), and what it lets through.
    #[rstest::rstest]
    #[case("/pub/..%2Fadmin", Some("encoded slash"))]
    #[case("/pub/..%2fadmin", Some("encoded slash"))]
    #[case("/npub/..\\admin", Some("backslash"))]
    #[case("/npub/..%5Cadmin", Some("encoded backslash"))]
    #[case("/npub/..%5cadmin", Some("encoded backslash"))]
    #[case("/a;v=1", Some("`;`"))]
    #[case("/a/;p", Some("`;`"))]
    #[case("/a%3Bv=1", Some("encoded `;`"))]
    #[case("/a%3bv=1", Some("encoded `;`"))]
    #[case("/g/%252e%252e/x", Some("double encoding"))]
    #[case("/g/x%00", Some("NUL"))]
    #[case("/g/x%0d%0a", Some("NUL"))]
    #[case("/g/x\u{7f}", Some("not visible ASCII"))]
    #[case("/g/\u{e9}", Some("not visible ASCII"))]
    #[case("/g/a b", Some("not visible ASCII"))]
    #[case("/g/../x", Some("`..` segment"))]
    #[case("/g/%2E%2e/x", Some("`..` segment"))]
    #[case("/g/x", None)]
    #[case("/g/te%73t/%20/%2ex/file.json", None)]
    #[case("/g/%2", None)]
    #[case("/g/%", None)]
    #[case("//g//x/", None)]
    #[case("/g/~!$&'()*+,=:@", None)]
    fn firewalled_paths(#[case] path: &str, #[case] refused: Option<&str>) {
        let got = path_refusal(path);
        match refused {
            None => assert_eq!(got, None, "{path}"),
            Some(what) => assert!(got.is_some_and(|m| m.contains(what)), "{path}: {got:?}"),
        }
    }

    #[rstest::rstest]
    #[case("gw", true)]
    #[case("", true)]
    #[case("gw:8080", true)]
    #[case("127.0.0.1:9195", true)]
    #[case("[::1]:9195", true)]
    #[case("[::1]", true)]
    #[case("my-host.example.com.", true)]
    #[case("a b", false)]
    #[case("a, b", false)]
    #[case("a,b", false)]
    #[case("a:b", false)]
    #[case("a:123456", false)]
    #[case("[::1", false)]
    #[case("[zz]:1", false)]
    #[case("[::1]x", false)]
    #[case("a/b", false)]
    #[case("user@a", false)]
    fn host_values(#[case] host: &str, #[case] ok: bool) {
        assert_eq!(
            is_authority(&HeaderValue::from_str(host).unwrap()),
            ok,
            "{host}"
        );
    }

    #[test]
    fn host_length_is_bounded() {
        let longest = "a".repeat(MAX_HOST - 5) + ":8080";
        assert!(is_authority(&HeaderValue::from_str(&longest).unwrap()));
        let long = "a".repeat(64 * 1024);
        assert!(!is_authority(&HeaderValue::from_str(&long).unwrap()));
    }

    #[test]
    fn host_headers() {
        let req = |version: Version, hosts: &[&str]| {
            let mut builder = Request::get("/x").version(version);
            for host in hosts {
                builder = builder.header(header::HOST, *host);
            }
            builder.body(()).unwrap()
        };
        assert!(check(&req(Version::HTTP_11, &["a"])).is_ok());
        assert!(check(&req(Version::HTTP_10, &[])).is_ok());
        assert!(check(&req(Version::HTTP_2, &[])).is_ok());
        for bad in [
            req(Version::HTTP_11, &[]),
            req(Version::HTTP_11, &["a", "b"]),
            req(Version::HTTP_10, &["a", "a"]),
            req(Version::HTTP_11, &["a b"]),
        ] {
            let rejection = check(&bad).unwrap_err();
            assert_eq!(
                (rejection.status, rejection.body.code),
                (StatusCode::BAD_REQUEST, 400)
            );
        }
    }
}
