//! Forwarding to the chosen upstream with hyper-util's pooled client.
//!
//! Method, raw path and query and body pass through unchanged; hop-by-hop headers are
//! dropped both ways, `Host` becomes the upstream authority and the client address is
//! appended to `X-Forwarded-For`. Bodies stream in both directions. The rule's `timeout`
//! bounds the wait for the upstream's response head: 504 when exceeded, 502 (-103) when the
//! upstream refuses or breaks the connection.

use std::net::IpAddr;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::PathAndQuery;
use http::{Request, StatusCode, Uri, Version};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use model::GatewayError;

use crate::plugin::{Forward, Rejection};
use crate::router::param::java_ip;

static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
static SELECTOR_ID: HeaderName = HeaderName::from_static("x-gantry-selector-id");
static RULE_ID: HeaderName = HeaderName::from_static("x-gantry-rule-id");

/// The pooled upstream client.
#[derive(Debug, Clone)]
pub(crate) struct Proxy {
    client: Client<HttpConnector, Body>,
}

impl Proxy {
    /// A client with keep-alive connection pooling.
    pub(crate) fn new() -> Proxy {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Proxy { client }
    }

    /// Forwards a request and answers with the upstream's response or the error body; either
    /// way the answer names the matched selector and rule.
    pub(crate) async fn forward(&self, req: Request<Body>, to: Forward, peer: IpAddr) -> Response {
        let mut response = self.send(req, &to, peer).await;
        let headers = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&to.selector_id) {
            headers.insert(SELECTOR_ID.clone(), v);
        }
        if let Ok(v) = HeaderValue::from_str(&to.rule_id) {
            headers.insert(RULE_ID.clone(), v);
        }
        response
    }

    async fn send(&self, mut req: Request<Body>, to: &Forward, peer: IpAddr) -> Response {
        let path_and_query = req
            .uri()
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        let uri = Uri::builder()
            .scheme(to.scheme.clone())
            .authority(to.authority.clone())
            .path_and_query(path_and_query)
            .build();
        let uri = match uri {
            Ok(uri) => uri,
            Err(e) => return upstream_error(&e.to_string()),
        };
        *req.uri_mut() = uri;
        *req.version_mut() = Version::HTTP_11;
        let headers = req.headers_mut();
        strip_hop_by_hop(headers);
        headers.insert(header::HOST, to.host.clone());
        append_forwarded_for(headers, peer);

        match tokio::time::timeout(to.timeout(), self.client.request(req)).await {
            Err(_) => {
                let body = GatewayError::timeout(to.timeout_ms as i64);
                Rejection::new(StatusCode::GATEWAY_TIMEOUT, body).into_response()
            }
            Ok(Err(e)) => upstream_error(&error_chain(&e)),
            Ok(Ok(response)) => {
                let (mut parts, body) = response.into_parts();
                strip_hop_by_hop(&mut parts.headers);
                Response::from_parts(parts, Body::new(body))
            }
        }
    }
}

fn upstream_error(detail: &str) -> Response {
    Rejection::new(
        StatusCode::BAD_GATEWAY,
        GatewayError::upstream_error(detail),
    )
    .into_response()
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Removes the hop-by-hop headers, including those the `Connection` header names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
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

fn append_forwarded_for(headers: &mut HeaderMap, peer: IpAddr) {
    let ip = java_ip(peer);
    let value = match headers.get(&X_FORWARDED_FOR).and_then(|v| v.to_str().ok()) {
        Some(existing) if !existing.is_empty() => format!("{existing}, {ip}"),
        _ => ip,
    };
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert(X_FORWARDED_FOR.clone(), v);
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
