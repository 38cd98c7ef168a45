//! Which limiter a request counts against (semantics doc §8): the limiter id is the rule id,
//! plus `-` and the key resolver's value when the handle names a resolver. Pure functions over
//! the request's headers and socket peer.

use std::net::IpAddr;

use http::HeaderMap;
use model::KeyResolver;

use crate::java::java_ip;

/// What `WHOLE_KEY_RESOLVER` resolves every request to.
pub(crate) const WHOLE_KEY: &str = "WHOLE_KEY_RESOLVER";

/// The headers `REMOTE_ADDRESS_KEY_RESOLVER` reads, in order (ShenYu's list, underscores and
/// all).
const ADDRESS_HEADERS: [&str; 6] = [
    "x-forwarded-for",
    "x-real-ip",
    "proxy-client-ip",
    "wl-proxy-client-ip",
    "http_client_ip",
    "http_x_forwarded_for",
];

/// Whether a header value says nothing: blank or `unknown` (any case).
fn says_nothing(value: &str) -> bool {
    let value = value.trim();
    value.is_empty() || value.eq_ignore_ascii_case("unknown")
}

/// The client address as ShenYu's `REMOTE_ADDRESS_KEY_RESOLVER` finds it: the first of
/// [`ADDRESS_HEADERS`] that is neither blank nor `unknown`; a value with a comma after its
/// first character is split on commas and the first trimmed part that is not `unknown` wins
/// (all `unknown`: the raw value). No such header: the socket peer, rendered as Java renders
/// it. Values that are not visible ASCII count as absent.
pub(crate) fn remote_address(headers: &HeaderMap, peer: IpAddr) -> String {
    let found = ADDRESS_HEADERS.iter().find_map(|name| {
        headers
            .get_all(*name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| !says_nothing(v))
    });
    let Some(value) = found else {
        return java_ip(peer);
    };
    if value.find(',').is_some_and(|at| at > 0)
        && let Some(part) = value.split(',').map(str::trim).find(|p| !says_nothing(p))
    {
        return part.to_owned();
    }
    value.to_owned()
}

/// The limiter id of a request under rule `rule_id`: the rule id alone without a resolver,
/// else `rule_id-<resolved key>`.
pub(crate) fn limiter_id(
    rule_id: &str,
    resolver: Option<KeyResolver>,
    headers: &HeaderMap,
    peer: IpAddr,
) -> String {
    match resolver {
        None => rule_id.to_owned(),
        Some(KeyResolver::Whole) => format!("{rule_id}-{WHOLE_KEY}"),
        Some(KeyResolver::RemoteAddress) => format!("{rule_id}-{}", remote_address(headers, peer)),
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 9));

    #[test]
    fn remote_address_follows_shenyus_header_order() {
        let at = |pairs: &[(&'static str, &'static str)]| remote_address(&headers(pairs), PEER);
        assert_eq!(at(&[]), "10.0.0.9");
        // A single X-Forwarded-For entry counts (unlike the `ip` condition's resolver).
        assert_eq!(at(&[("x-forwarded-for", "1.1.1.1")]), "1.1.1.1");
        assert_eq!(
            at(&[("x-forwarded-for", "unknown, 2.2.2.2 ,3.3.3.3")]),
            "2.2.2.2"
        );
        assert_eq!(
            at(&[("x-forwarded-for", "unknown,UNKNOWN")]),
            "unknown,UNKNOWN"
        );
        // A leading comma is not split on.
        assert_eq!(at(&[("x-forwarded-for", ",1.1.1.1")]), ",1.1.1.1");
        assert_eq!(
            at(&[
                ("x-forwarded-for", " "),
                ("x-real-ip", "Unknown"),
                ("proxy-client-ip", "4.4.4.4")
            ]),
            "4.4.4.4"
        );
        assert_eq!(
            at(&[
                ("http_x_forwarded_for", "6.6.6.6"),
                ("wl-proxy-client-ip", "5.5.5.5")
            ]),
            "5.5.5.5"
        );
        assert_eq!(at(&[("http_client_ip", "7.7.7.7")]), "7.7.7.7");
        assert_eq!(
            remote_address(&HeaderMap::new(), "::ffff:1.2.3.4".parse().unwrap()),
            "1.2.3.4"
        );
    }

    #[test]
    fn limiter_ids_append_the_resolved_key() {
        let h = headers(&[("x-real-ip", "8.8.8.8")]);
        assert_eq!(limiter_id("r1", None, &h, PEER), "r1");
        assert_eq!(
            limiter_id("r1", Some(KeyResolver::Whole), &h, PEER),
            "r1-WHOLE_KEY_RESOLVER"
        );
        assert_eq!(
            limiter_id("r1", Some(KeyResolver::RemoteAddress), &h, PEER),
            "r1-8.8.8.8"
        );
    }
}
