//! Checks on a request before it is routed, each answered 400 with ShenYu's error body:
//!
//! - `Host` (RFC 9112 §3.2): an HTTP/1.1 request must carry exactly one, any other at most one.
//!   hyper accepts both a missing and a repeated `Host`.
//! - dot-segments: a path segment that is `.` or `..`, also with percent-encoded dots (`%2e`,
//!   RFC 3986 §6.2.2.2 makes them the same), is refused rather than matched as written. A
//!   selector matches the raw path (`/g/../admin` starts with `/g/`), and an upstream that
//!   normalises would serve `/admin`, outside what the selector exposes. Refusing (as Spring
//!   Security's firewall does) keeps what is matched and what is forwarded the same text;
//!   clients send normalised paths (browsers and curl resolve dot-segments before sending).
//!
//! Both cost a scan of a few bytes and allocate nothing on a request that passes.

use http::{Request, StatusCode, Version, header};
use model::GatewayError;

use crate::plugin::Rejection;

/// `Ok` when the request may be routed, else the 400 answer.
pub(crate) fn check<B>(req: &Request<B>) -> Result<(), Rejection> {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (None, _) if req.version() == Version::HTTP_11 => {
            return Err(bad_request("an HTTP/1.1 request needs a Host header"));
        }
        (Some(_), Some(_)) => return Err(bad_request("more than one Host header")),
        _ => {}
    }
    if has_dot_segment(req.uri().path()) {
        return Err(bad_request(
            "the path has a `.` or `..` segment (also percent-encoded): send it normalised",
        ));
    }
    Ok(())
}

fn bad_request(message: &str) -> Rejection {
    Rejection::new(StatusCode::BAD_REQUEST, GatewayError::new(400, message))
}

/// Whether a `/`-separated segment of `path` is `.` or `..`, dots possibly written `%2e`/`%2E`.
fn has_dot_segment(path: &str) -> bool {
    // Fast path: without a `.` or a `%` there is no dot-segment.
    if !path.bytes().any(|b| b == b'.' || b == b'%') {
        return false;
    }
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
        ] {
            let rejection = check(&bad).unwrap_err();
            assert_eq!(
                (rejection.status, rejection.body.code),
                (StatusCode::BAD_REQUEST, 400)
            );
        }
    }
}
