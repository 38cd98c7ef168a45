//! Which limiter a request counts against (semantics doc §8): the limiter id is the rule id,
//! plus `-` and the key resolver's value when the handle names a resolver. Pure functions over
//! the request's headers and socket peer.
//!
//! Unlike ShenYu, `REMOTE_ADDRESS_KEY_RESOLVER` reads the forwarding headers only when the
//! socket peer is a trusted proxy ([`super::TrustedProxies`]), and takes their value only when
//! it is an IP address: otherwise any client names a new address per request (and is never
//! limited), and each value, of any length, becomes two Redis keys. So a key holds at most an
//! address (39 bytes) after the rule id.

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

/// The client address. From an untrusted peer: the socket peer, rendered as Java renders it.
/// From a `trusted` one, as ShenYu's `REMOTE_ADDRESS_KEY_RESOLVER` finds it: the first of
/// [`ADDRESS_HEADERS`] that is neither blank nor `unknown`; a value with a comma after its
/// first character is split on commas and the first trimmed part that is not `unknown` wins
/// (all `unknown`: the raw value); then, unlike ShenYu, that value counts only when it is an IP
/// address (rendered as Java renders it), else the socket peer does. No such header: the
/// socket peer. Values that are not visible ASCII count as absent.
pub(crate) fn remote_address(headers: &HeaderMap, peer: IpAddr, trusted: bool) -> String {
    if !trusted {
        return java_ip(peer);
    }
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
    let chosen = if value.find(',').is_some_and(|at| at > 0)
        && let Some(part) = value.split(',').map(str::trim).find(|p| !says_nothing(p))
    {
        part
    } else {
        value.trim()
    };
    java_ip(chosen.parse().unwrap_or(peer))
}

/// The limiter id of a request under rule `rule_id`: the rule id alone without a resolver,
/// else `rule_id-<resolved key>`. `trusted`: whether `peer` is a trusted proxy.
pub(crate) fn limiter_id(
    rule_id: &str,
    resolver: Option<KeyResolver>,
    headers: &HeaderMap,
    peer: IpAddr,
    trusted: bool,
) -> String {
    match resolver {
        None => rule_id.to_owned(),
        Some(KeyResolver::Whole) => format!("{rule_id}-{WHOLE_KEY}"),
        Some(KeyResolver::RemoteAddress) => {
            format!("{rule_id}-{}", remote_address(headers, peer, trusted))
        }
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
    fn a_trusted_peers_headers_follow_shenyus_order() {
        let at =
            |pairs: &[(&'static str, &'static str)]| remote_address(&headers(pairs), PEER, true);
        assert_eq!(at(&[]), "10.0.0.9");
        // A single X-Forwarded-For entry counts (unlike the `ip` condition's resolver).
        assert_eq!(at(&[("x-forwarded-for", "1.1.1.1")]), "1.1.1.1");
        assert_eq!(
            at(&[("x-forwarded-for", "unknown, 2.2.2.2 ,3.3.3.3")]),
            "2.2.2.2"
        );
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
        assert_eq!(at(&[("http_client_ip", " 7.7.7.7 ")]), "7.7.7.7");
        // Addresses render as Java renders them, whatever the header's spelling.
        assert_eq!(at(&[("x-real-ip", "::1")]), "0:0:0:0:0:0:0:1");
        assert_eq!(at(&[("x-real-ip", "::ffff:1.2.3.4")]), "1.2.3.4");
        assert_eq!(
            remote_address(&HeaderMap::new(), "::ffff:1.2.3.4".parse().unwrap(), true),
            "1.2.3.4"
        );
    }

    /// ShenYu keys on whatever the header says: `unknown,UNKNOWN`, `,1.1.1.1`, 8 KB of text.
    #[test]
    fn only_an_address_counts_else_the_peer() {
        let long = format!("x-{}", "a".repeat(8192));
        for value in [
            "unknown,UNKNOWN",
            ",1.1.1.1",
            "1.1.1.1:80",
            "garbage",
            long.as_str(),
        ] {
            let mut h = HeaderMap::new();
            h.insert("x-forwarded-for", HeaderValue::from_str(value).unwrap());
            assert_eq!(remote_address(&h, PEER, true), "10.0.0.9", "{value}");
        }
    }

    #[test]
    fn an_untrusted_peers_headers_are_ignored() {
        let h = headers(&[("x-forwarded-for", "1.1.1.1"), ("x-real-ip", "2.2.2.2")]);
        assert_eq!(remote_address(&h, PEER, false), "10.0.0.9");
    }

    #[test]
    fn limiter_ids_append_the_resolved_key() {
        let h = headers(&[("x-real-ip", "8.8.8.8")]);
        assert_eq!(limiter_id("r1", None, &h, PEER, true), "r1");
        assert_eq!(
            limiter_id("r1", Some(KeyResolver::Whole), &h, PEER, true),
            "r1-WHOLE_KEY_RESOLVER"
        );
        assert_eq!(
            limiter_id("r1", Some(KeyResolver::RemoteAddress), &h, PEER, true),
            "r1-8.8.8.8"
        );
        assert_eq!(
            limiter_id("r1", Some(KeyResolver::RemoteAddress), &h, PEER, false),
            "r1-10.0.0.9"
        );
    }
}
