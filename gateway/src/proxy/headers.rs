//! What the proxy does to headers: hop-by-hop headers dropped both ways, the client address
//! appended to `X-Forwarded-For`, and the answer naming the matched selector and rule.

use std::net::IpAddr;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

use crate::java::java_ip;

static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
static SELECTOR_ID: HeaderName = HeaderName::from_static("x-gantry-selector-id");
static RULE_ID: HeaderName = HeaderName::from_static("x-gantry-rule-id");

/// Removes the hop-by-hop headers, including those the `Connection` header names.
pub(super) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        HeaderName::from_static("keep-alive"),
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        HeaderName::from_static("proxy-connection"),
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
}

/// Appends the client address (as Java prints it) to `X-Forwarded-For`.
pub(super) fn append_forwarded_for(headers: &mut HeaderMap, peer: IpAddr) {
    let ip = java_ip(peer);
    let value = match headers.get(&X_FORWARDED_FOR).and_then(|v| v.to_str().ok()) {
        Some(existing) if !existing.is_empty() => format!("{existing}, {ip}"),
        _ => ip,
    };
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert(X_FORWARDED_FOR.clone(), v);
    }
}

/// Names the matched selector and rule in an answer (`x-gantry-selector-id`,
/// `x-gantry-rule-id`).
pub(super) fn name_route(headers: &mut HeaderMap, selector_id: &str, rule_id: &str) {
    if let Ok(v) = HeaderValue::from_str(selector_id) {
        headers.insert(SELECTOR_ID.clone(), v);
    }
    if let Ok(v) = HeaderValue::from_str(rule_id) {
        headers.insert(RULE_ID.clone(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_go() {
        let mut h = HeaderMap::new();
        h.insert(header::CONNECTION, "close, x-private".parse().unwrap());
        h.insert("x-private", "1".parse().unwrap());
        h.insert("keep-alive", "5".parse().unwrap());
        h.insert(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        h.insert("x-keep", "1".parse().unwrap());
        strip_hop_by_hop(&mut h);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key("x-keep"));
    }

    #[test]
    fn forwarded_for_appends() {
        let mut h = HeaderMap::new();
        append_forwarded_for(&mut h, [10, 0, 0, 1].into());
        assert_eq!(h["x-forwarded-for"], "10.0.0.1");
        append_forwarded_for(&mut h, [10, 0, 0, 2].into());
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 10.0.0.2");
    }
}
