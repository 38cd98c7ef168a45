//! Forwarding to the chosen upstream with hyper-util's pooled client.
//!
//! Method, raw path and query and body pass through unchanged; hop-by-hop headers are
//! dropped both ways, `Host` becomes the upstream authority and the client address is
//! appended to `X-Forwarded-For`. Bodies stream in both directions. The rule's `timeout`
//! bounds the wait for the upstream's response head: 504 when exceeded, 502 (-103) when the
//! upstream refuses or breaks the connection. A request body the client breaks (a bad chunk,
//! fewer bytes than its `Content-Length`) is the client's fault: 400, not an upstream error.
//!
//! Retries wait a short back-off (10 ms doubling to 100 ms) and share a budget of
//! [`RETRY_BUDGET_TIMEOUTS`] rule timeouts: no retry starts past it, and an attempt's timeout
//! is cut to what is left of it.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::PathAndQuery;
use http::{Request, StatusCode, Uri, Version};
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body as _, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use model::{GatewayError, RetryStrategy};

use crate::balance::{Upstream, now_ms};
use crate::finishing::Finishing;
use crate::java::java_ip;
use crate::plugin::{Forward, Rejection};

/// Bodies up to this size (known in advance) are buffered so that retries can resend them.
const REPLAY_LIMIT: u64 = 1024 * 1024;
/// The largest body paramMapping reads.
const MAPPING_LIMIT: usize = 16 * 1024 * 1024;
/// The wait before the first retry; it doubles for each next one up to [`RETRY_BACKOFF_CAP`].
const RETRY_BACKOFF_START: Duration = Duration::from_millis(10);
/// The longest wait between two attempts.
const RETRY_BACKOFF_CAP: Duration = Duration::from_millis(100);
/// All attempts of a request together take at most this many rule timeouts: what ShenYu's
/// default of 3 retries can take, so that such a rule behaves as there.
const RETRY_BUDGET_TIMEOUTS: u32 = 4;

static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
static SELECTOR_ID: HeaderName = HeaderName::from_static("x-gantry-selector-id");
static RULE_ID: HeaderName = HeaderName::from_static("x-gantry-rule-id");

/// The pooled upstream client.
#[derive(Debug, Clone)]
pub(crate) struct Proxy {
    client: Client<HttpConnector, Outgoing>,
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
    /// way the answer names the matched selector and rule. The upstream's lease and the
    /// plugins' guards ([`Forward::held`]) end when the response body is finished (the
    /// guards before its last byte: [`Finishing`]) or dropped, or at once on an error.
    ///
    /// A connection failure or timeout is retried `retry` times (on the same upstream for
    /// `current`, on one not tried yet for `failover`) when the body can be replayed: it is
    /// buffered when its size is known and at most [`REPLAY_LIMIT`], or when paramMapping
    /// rewrites it; a streamed body is sent once. Retries back off ([`retry_wait`]) and stop
    /// at the budget of [`RETRY_BUDGET_TIMEOUTS`] timeouts.
    pub(crate) async fn forward(&self, req: Request<Body>, to: Forward, peer: IpAddr) -> Forwarded {
        let Forward {
            mut lease,
            timeout_ms,
            retry,
            retry_strategy,
            path,
            body_mapping,
            selector_id,
            rule_id,
            held,
        } = to;
        let (mut parts, body) = req.into_parts();
        if let Some(path) = path {
            match rewritten(&path, parts.uri.query()) {
                Ok(uri) => parts.uri = uri,
                Err(e) => return Forwarded::failed(upstream_error(&e), Duration::ZERO),
            }
        }
        strip_hop_by_hop(&mut parts.headers);
        append_forwarded_for(&mut parts.headers, peer);
        let replayable = body_mapping.is_some()
            || (retry > 0 && body.size_hint().exact().is_some_and(|n| n <= REPLAY_LIMIT));
        let (buffered, mut streamed) = if replayable {
            let bytes = match Limited::new(body, MAPPING_LIMIT).collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(e) => {
                    let response = client_body_error(&ClientBodyError(e));
                    return Forwarded::failed(response, Duration::ZERO);
                }
            };
            let content_type = parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok());
            let mapped = body_mapping.and_then(|m| m.apply(content_type, &bytes));
            let bytes = match mapped {
                Some(mapped) => {
                    parts.headers.remove(header::CONTENT_LENGTH);
                    parts
                        .headers
                        .insert(header::CONTENT_LENGTH, mapped.len().into());
                    Bytes::from(mapped)
                }
                None => bytes,
            };
            (Some(bytes), None)
        } else {
            (None, Some(body))
        };
        let mut tried = vec![lease.index()];
        let mut attempt = 0;
        let timeout = Duration::from_millis(timeout_ms);
        let deadline = Instant::now() + timeout * RETRY_BUDGET_TIMEOUTS;
        let mut upstream_time = Duration::ZERO;
        let mut responded = false;
        let mut response = loop {
            let body = Outgoing(match &buffered {
                Some(bytes) => Body::from(bytes.clone()),
                None => streamed.take().unwrap_or_else(Body::empty),
            });
            let upstream = lease.upstream();
            let mut req = Request::new(body);
            *req.method_mut() = parts.method.clone();
            *req.headers_mut() = parts.headers.clone();
            req.headers_mut()
                .insert(header::HOST, upstream.host.clone());
            let started = Instant::now();
            let left = deadline.saturating_duration_since(started).min(timeout);
            let sent = self.send(req, &parts.uri, upstream, left).await;
            upstream_time += started.elapsed();
            let failure = match sent {
                Ok(response) => {
                    responded = true;
                    lease.responded();
                    let (parts, body) = response.into_parts();
                    let body = Finishing::new(body, lease, held);
                    break Response::from_parts(parts, Body::new(body));
                }
                Err(failure) => failure,
            };
            if !failure.retryable || attempt >= retry || buffered.is_none() {
                break failure.response;
            }
            let wait = retry_wait(attempt);
            if Instant::now() + wait >= deadline {
                tracing::debug!(attempt, "retry budget spent");
                break failure.response;
            }
            tokio::time::sleep(wait).await;
            attempt += 1;
            if retry_strategy == RetryStrategy::Failover {
                let Some(next) = lease.pool().failover(&tried, now_ms()) else {
                    break Rejection::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        GatewayError::new(
                            -119,
                            "Can not find healthy upstream url after failover!",
                        ),
                    )
                    .into_response();
                };
                tried.push(next);
                lease = lease.pool().lease(next, now_ms());
            }
            tracing::debug!(attempt, upstream = %lease.upstream().authority, "retrying upstream");
        };
        let headers = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&selector_id) {
            headers.insert(SELECTOR_ID.clone(), v);
        }
        if let Ok(v) = HeaderValue::from_str(&rule_id) {
            headers.insert(RULE_ID.clone(), v);
        }
        if responded {
            Forwarded {
                response,
                upstream: upstream_time,
                outcome: "routed",
            }
        } else {
            Forwarded::failed(response, upstream_time)
        }
    }

    /// One attempt to `to`: the upstream's response (hop-by-hop headers stripped) or the
    /// error answer.
    async fn send(
        &self,
        mut req: Request<Outgoing>,
        uri: &Uri,
        to: &Upstream,
        timeout: Duration,
    ) -> Result<Response<Incoming>, Failure> {
        let path_and_query = uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        let uri = Uri::builder()
            .scheme(to.scheme.clone())
            .authority(to.authority.clone())
            .path_and_query(path_and_query)
            .build();
        *req.uri_mut() = match uri {
            Ok(uri) => uri,
            Err(e) => {
                return Err(Failure {
                    response: upstream_error(&e.to_string()),
                    retryable: false,
                });
            }
        };
        *req.version_mut() = Version::HTTP_11;
        match tokio::time::timeout(timeout, self.client.request(req)).await {
            Err(_) => {
                let body =
                    GatewayError::timeout(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX));
                Err(Failure {
                    response: Rejection::new(StatusCode::GATEWAY_TIMEOUT, body).into_response(),
                    retryable: true,
                })
            }
            Ok(Err(e)) => Err(match client_fault(&e) {
                // Nothing to retry: the client broke its own request.
                Some(fault) => Failure {
                    response: client_body_error(fault),
                    retryable: false,
                },
                None => Failure {
                    response: upstream_error(&error_chain(&e)),
                    retryable: true,
                },
            }),
            Ok(Ok(mut response)) => {
                strip_hop_by_hop(response.headers_mut());
                Ok(response)
            }
        }
    }
}

/// What became of a forwarded request.
#[derive(Debug)]
pub(crate) struct Forwarded {
    /// The answer.
    pub(crate) response: Response,
    /// Time spent waiting for upstream response heads, all attempts.
    pub(crate) upstream: Duration,
    /// `routed` when an upstream answered, else the error status (`502`, `503`, `504`, …).
    pub(crate) outcome: &'static str,
}

impl Forwarded {
    fn failed(response: Response, upstream: Duration) -> Forwarded {
        let outcome = match response.status().as_u16() {
            400 => "400",
            502 => "502",
            503 => "503",
            504 => "504",
            _ => "other",
        };
        Forwarded {
            response,
            upstream,
            outcome,
        }
    }
}

/// The wait before retry number `done + 1`: [`RETRY_BACKOFF_START`] doubled `done` times, at
/// most [`RETRY_BACKOFF_CAP`].
fn retry_wait(done: u32) -> Duration {
    RETRY_BACKOFF_START
        .saturating_mul(1 << done.min(16))
        .min(RETRY_BACKOFF_CAP)
}

/// A failed attempt.
#[derive(Debug)]
struct Failure {
    response: Response,
    retryable: bool,
}

/// The request's URI with contextPath's path (empty → `/`) and the original query.
fn rewritten(path: &str, query: Option<&str>) -> Result<Uri, String> {
    let path = if path.is_empty() { "/" } else { path };
    let text = match query {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    text.parse::<PathAndQuery>()
        .map(Uri::from)
        .map_err(|e| format!("rewritten path `{path}`: {e}"))
}

/// The request body as sent upstream: the client's body, whose read errors become
/// [`ClientBodyError`] so that the proxy can tell them from the upstream's (no allocation: it
/// wraps the body it is given).
#[derive(Debug)]
pub(crate) struct Outgoing(Body);

impl hyper::body::Body for Outgoing {
    type Data = Bytes;
    type Error = ClientBodyError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, ClientBodyError>>> {
        std::pin::Pin::new(&mut self.0)
            .poll_frame(cx)
            .map_err(|e| ClientBodyError(e.into()))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.0.size_hint()
    }
}

/// Reading the client's request body failed (a bad chunk, a body shorter than its
/// `Content-Length`, the client gone).
#[derive(Debug, thiserror::Error)]
#[error("cannot read the request body: {0}")]
pub(crate) struct ClientBodyError(Box<dyn std::error::Error + Send + Sync>);

/// The client body error that caused `e`, if one did.
fn client_fault<'e>(e: &'e (dyn std::error::Error + 'static)) -> Option<&'e ClientBodyError> {
    let mut cause = Some(e);
    while let Some(e) = cause {
        if let Some(fault) = e.downcast_ref::<ClientBodyError>() {
            return Some(fault);
        }
        cause = e.source();
    }
    None
}

/// 400 for a request body the client broke.
fn client_body_error(e: &ClientBodyError) -> Response {
    let detail = format!("cannot read the request body: {}", error_chain(&*e.0));
    Rejection::new(StatusCode::BAD_REQUEST, GatewayError::new(400, detail)).into_response()
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

    mod end_to_end {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};

        use model::{
            ConditionData, ConfigSet, DataEvent, DataEventType, PluginData, RuleData, SelectorData,
        };
        use serde_json::{Value, json};
        use tokio::net::TcpListener;
        use wiremock::matchers::{any, path};
        use wiremock::{Mock, MockServer, ResponseTemplate};

        use super::super::*;
        use crate::plugin::Chain;
        use crate::router::RequestView;
        use crate::snapshot::{ConfigData, Snapshot};

        /// A wiremock upstream echoing path, query and body; `/slow` answers after an hour.
        /// Its journal counts the requests ([`hits`]).
        async fn echo() -> (String, MockServer) {
            let server = MockServer::start().await;
            Mock::given(path("/slow"))
                .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3600)))
                .with_priority(1)
                .mount(&server)
                .await;
            Mock::given(any())
                .respond_with(|req: &wiremock::Request| {
                    ResponseTemplate::new(200).set_body_json(json!({
                        "path": req.url.path(),
                        "query": req.url.query(),
                        "body": String::from_utf8_lossy(&req.body),
                    }))
                })
                .mount(&server)
                .await;
            (server.address().to_string(), server)
        }

        /// How many requests `server` has received.
        async fn hits(server: &MockServer) -> usize {
            server.received_requests().await.unwrap_or_default().len()
        }

        /// An address that refuses connections.
        async fn refused() -> String {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            l.local_addr().unwrap().to_string()
        }

        fn plugin(name: &str, sort: i32, enabled: bool) -> PluginData {
            PluginData {
                id: name.into(),
                name: name.into(),
                enabled,
                sort,
                ..Default::default()
            }
        }

        fn selector(plugin: &str, prefix: &str, handle: Option<String>) -> SelectorData {
            SelectorData {
                id: format!("{plugin}-s"),
                plugin_name: plugin.into(),
                enabled: true,
                handle,
                condition_list: vec![ConditionData::new("uri", "startsWith", "/", prefix)],
                ..Default::default()
            }
        }

        fn rule(plugin: &str, handle: &str) -> RuleData {
            RuleData {
                id: format!("{plugin}-r"),
                selector_id: format!("{plugin}-s"),
                plugin_name: plugin.into(),
                enabled: true,
                handle: Some(handle.into()),
                condition_data_list: vec![ConditionData::new("uri", "match", "/", "/**")],
                ..Default::default()
            }
        }

        fn snapshot(
            plugins: Vec<PluginData>,
            selectors: Vec<SelectorData>,
            rules: Vec<RuleData>,
        ) -> Snapshot {
            let config = ConfigSet {
                plugins,
                selectors,
                rules,
                meta_data: Vec::new(),
            };
            let mut d = ConfigData::default();
            for event in DataEvent::full_sync(DataEventType::Myself, config, Vec::new()) {
                d.apply(event);
            }
            Snapshot::build(d)
        }

        fn upstreams(urls: &[&str]) -> Option<String> {
            let items: Vec<Value> = urls
                .iter()
                .map(|u| json!({"upstreamUrl": u, "protocol": "http://", "weight": 50}))
                .collect();
            Some(Value::Array(items).to_string())
        }

        /// The test client's address.
        const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

        /// Runs the chain for one request from [`PEER`].
        fn route(snap: &Snapshot, req: &Request<Body>) -> Result<Forward, Rejection> {
            let view = RequestView {
                method: req.method(),
                path: req.uri().path(),
                query: req.uri().query(),
                authority: None,
                headers: req.headers(),
                peer: PEER,
                peer_trusted: false,
            };
            Chain::standard().run_now(&snap.active, &view)
        }

        /// Runs the chain and the proxy for one request.
        async fn call(snap: &Snapshot, req: Request<Body>) -> (u16, Value) {
            let response = match route(snap, &req) {
                Ok(f) => Proxy::new().forward(req, f, PEER).await.response,
                Err(r) => r.into_response(),
            };
            let status = response.status().as_u16();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            (
                status,
                serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            )
        }

        fn get(uri: &str) -> Request<Body> {
            Request::get(uri).body(Body::empty()).unwrap()
        }

        #[tokio::test]
        async fn context_path_rewrites_and_param_mapping_maps_the_body() {
            let (up, _server) = echo().await;
            let snap = snapshot(
                vec![
                    plugin("paramMapping", 70, true),
                    plugin("contextPath", 80, true),
                    plugin("divide", 200, true),
                ],
                vec![
                    selector("paramMapping", "/ctx", None),
                    selector("contextPath", "/ctx", None),
                    // divide matches on contextPath + realUrl.
                    selector("divide", "/ctx/v1/api", upstreams(&[&up])),
                ],
                vec![
                    rule(
                        "paramMapping",
                        r#"{"addParameterKeys":[{"path":"$","key":"by","value":"gw"}],"removeParameterKeys":["$.secret"]}"#,
                    ),
                    rule("contextPath", r#"{"contextPath":"/ctx","addPrefix":"/v1"}"#),
                    rule("divide", r#"{"timeout":3000}"#),
                ],
            );
            let req = Request::post("/ctx/api/x?q=1")
                .header("content-type", "application/json")
                .body(Body::from(r#"{"a":1,"secret":"s"}"#))
                .unwrap();
            let (status, body) = call(&snap, req).await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["path"], "/v1/api/x");
            assert_eq!(body["query"], "q=1");
            let sent: Value = serde_json::from_str(body["body"].as_str().unwrap()).unwrap();
            assert_eq!(sent, json!({"a":1,"by":"gw"}));
            // Other content types pass unchanged.
            let req = Request::post("/ctx/api/x")
                .header("content-type", "text/plain")
                .body(Body::from("secret=s"))
                .unwrap();
            assert_eq!(call(&snap, req).await.1["body"], "secret=s");
        }

        #[tokio::test]
        async fn chain_follows_plugin_sort_and_skips_disabled_plugins() {
            let (up, _server) = echo().await;
            let build = |context_sort: i32, context_enabled: bool| {
                snapshot(
                    vec![
                        plugin("contextPath", context_sort, context_enabled),
                        plugin("divide", 200, true),
                    ],
                    vec![
                        selector("contextPath", "/ctx", None),
                        // divide matches on contextPath + realUrl: the original path.
                        selector("divide", "/ctx/api", upstreams(&[&up])),
                    ],
                    vec![
                        rule("contextPath", r#"{"contextPath":"/ctx"}"#),
                        rule("divide", "{}"),
                    ],
                )
            };
            let (status, body) = call(&build(80, true), get("/ctx/api/x")).await;
            assert_eq!((status, &body["path"]), (200, &json!("/api/x")));
            // Disabled: the upstream gets the full path.
            let (status, body) = call(&build(80, false), get("/ctx/api/x")).await;
            assert_eq!((status, &body["path"]), (200, &json!("/ctx/api/x")));
            // Sorted after divide: too late to matter.
            let (status, body) = call(&build(300, true), get("/ctx/api/x")).await;
            assert_eq!((status, &body["path"]), (200, &json!("/ctx/api/x")));
        }

        /// An upstream whose answers stream one chunk, then hold their bodies open until
        /// `release` gets a permit; it counts requests.
        async fn held() -> (String, Arc<AtomicUsize>, Arc<tokio::sync::Semaphore>) {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let hits = Arc::new(AtomicUsize::new(0));
            let release = Arc::new(tokio::sync::Semaphore::new(0));
            let (counter, gate) = (hits.clone(), release.clone());
            let app = axum::Router::new().fallback(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                let gate = gate.clone();
                async move {
                    let chunks = futures_util::stream::unfold(0, move |n| {
                        let gate = gate.clone();
                        async move {
                            match n {
                                0 => Some((Ok::<_, std::io::Error>(Bytes::from("start")), 1)),
                                1 => {
                                    drop(gate.acquire().await);
                                    Some((Ok(Bytes::from("end")), 2))
                                }
                                _ => None,
                            }
                        }
                    });
                    Body::from_stream(chunks)
                }
            });
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
            (addr.to_string(), hits, release)
        }

        /// leastActive sees a request as active until the client has its whole body, not
        /// just the headers. While a response from `slow` streams, every request goes to
        /// `fast` (an early lease end would tie them: all 20 on `fast` would then have
        /// probability 2^-20); once it ends they tie again and `slow` is picked (all 60 on
        /// `fast` has probability 2^-60).
        #[tokio::test]
        async fn least_active_counts_a_request_until_its_body_ends() {
            let (slow, slow_hits, release) = held().await;
            let (fast, fast_server) = echo().await;
            let snap = snapshot(
                vec![plugin("divide", 200, true)],
                vec![selector("divide", "/", upstreams(&[&slow, &fast]))],
                vec![rule("divide", r#"{"loadBalance":"leastActive"}"#)],
            );
            let proxy = Proxy::new();
            let forward = |req: Request<Body>| {
                let to = route(&snap, &req).unwrap();
                proxy.forward(req, to, PEER)
            };
            let pinned = Request::get("/stream")
                .header("specify-domain", slow.as_str())
                .body(Body::empty())
                .unwrap();
            let mut streaming = forward(pinned).await.response.into_body();
            let first = streaming.frame().await.unwrap().unwrap();
            assert_eq!(first.into_data().unwrap(), "start");
            assert_eq!(slow_hits.load(Ordering::SeqCst), 1);
            for i in 0..20 {
                let response = forward(get("/x")).await.response;
                // Checked before reading the body: one held by `slow` would never end.
                assert_eq!(
                    slow_hits.load(Ordering::SeqCst),
                    1,
                    "request {i} went to the upstream that has one in flight"
                );
                response.into_body().collect().await.unwrap();
            }
            assert_eq!(hits(&fast_server).await, 20);
            release.add_permits(1);
            // Collecting consumes (and so ends) the body.
            let rest = streaming.collect().await.unwrap().to_bytes();
            assert_eq!(rest, "end");
            for _ in 0..60 {
                let response = forward(get("/x")).await.response;
                response.into_body().collect().await.unwrap();
            }
            assert!(
                slow_hits.load(Ordering::SeqCst) > 1,
                "the lease outlived the response body"
            );
        }

        fn divide(urls: &[&str], rule_handle: &str) -> Snapshot {
            snapshot(
                vec![plugin("divide", 200, true)],
                vec![selector("divide", "/", upstreams(urls))],
                vec![rule("divide", rule_handle)],
            )
        }

        #[tokio::test]
        async fn retries_current_and_failover() {
            let (up, server) = echo().await;
            let down = refused().await;
            // specify-domain forces the first attempt onto the refusing upstream.
            let first_down = || {
                Request::get("/x")
                    .header("specify-domain", down.as_str())
                    .body(Body::empty())
                    .unwrap()
            };
            let failover = divide(&[&down, &up], r#"{"retry":1,"retryStrategy":"failover"}"#);
            let (status, body) = call(&failover, first_down()).await;
            assert_eq!((status, &body["path"]), (200, &json!("/x")));
            let current = divide(&[&down, &up], r#"{"retry":2,"retryStrategy":"current"}"#);
            let (status, body) = call(&current, first_down()).await;
            assert_eq!((status, &body["code"]), (502, &json!(-103)));
            // Failover with nothing left to try.
            let alone = divide(&[&down], r#"{"retry":1,"retryStrategy":"failover"}"#);
            let (status, body) = call(&alone, get("/x")).await;
            assert_eq!((status, &body["code"]), (503, &json!(-119)));
            // Timeouts are retried: 1 + 2 attempts reach the upstream.
            let slow = divide(&[&up], r#"{"retry":2,"timeout":100}"#);
            let before = hits(&server).await;
            let (status, body) = call(&slow, get("/slow")).await;
            assert_eq!((status, &body["code"]), (504, &json!(504)));
            assert_eq!(hits(&server).await - before, 3);
            let once = divide(&[&up], r#"{"retry":0,"timeout":100}"#);
            let before = hits(&server).await;
            assert_eq!(call(&once, get("/slow")).await.0, 504);
            assert_eq!(hits(&server).await - before, 1);
        }

        /// An upstream error is an answer: passed through (status, body, headers), never
        /// retried. A dropped connection is a failure: retried, then a 502.
        #[tokio::test]
        async fn a_5xx_passes_through_and_a_dropped_connection_is_retried() {
            let server = MockServer::start().await;
            Mock::given(path("/fail"))
                .respond_with(
                    ResponseTemplate::new(503)
                        .insert_header("x-why", "maintenance")
                        .set_body_string("down"),
                )
                .mount(&server)
                .await;
            // wiremock's server drops the connection when the responder errs.
            Mock::given(path("/drop"))
                .respond_with_err(|_: &wiremock::Request| {
                    std::io::Error::from(std::io::ErrorKind::ConnectionReset)
                })
                .mount(&server)
                .await;
            let up = server.address().to_string();
            let snap = divide(&[&up], r#"{"retry":2,"retryStrategy":"current"}"#);
            let response = match route(&snap, &get("/fail")) {
                Ok(f) => Proxy::new().forward(get("/fail"), f, PEER).await.response,
                Err(r) => panic!("no route: {r:?}"),
            };
            assert_eq!(response.status(), 503);
            assert_eq!(response.headers()["x-why"], "maintenance");
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, "down");
            assert_eq!(hits(&server).await, 1, "a 5xx answer was retried");
            let (status, body) = call(&snap, get("/drop")).await;
            assert_eq!((status, &body["code"]), (502, &json!(-103)), "{body}");
            assert_eq!(hits(&server).await, 1 + 3, "1 + retry attempts");
        }

        #[tokio::test]
        async fn size_limits() {
            let (up, _server) = echo().await;
            let snap = divide(&[&up], r#"{"headerMaxSize":10,"requestMaxSize":4}"#);
            let big_header = Request::get("/x")
                .header("x-big", "01234567890")
                .body(Body::empty())
                .unwrap();
            let (status, body) = call(&snap, big_header).await;
            assert_eq!((status, &body["code"]), (431, &json!(431)));
            let big_body = Request::post("/x")
                .header("content-length", "5")
                .body(Body::from("12345"))
                .unwrap();
            let (status, body) = call(&snap, big_body).await;
            assert_eq!((status, &body["code"]), (413, &json!(413)));
            let small = Request::post("/x")
                .header("content-length", "4")
                .body(Body::from("1234"))
                .unwrap();
            assert_eq!(call(&snap, small).await.1["body"], "1234");
        }
    }
}
