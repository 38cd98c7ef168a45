//! Forwarding to the chosen upstream with hyper-util's pooled client, whose connections open
//! through the gateway's network seam ([`netserve::Connect`]: the OS's TCP for the binary, the
//! simulator's network under `gantry sim`).
//!
//! Method, raw path and query and body pass through unchanged; hop-by-hop headers are
//! dropped both ways, `Host` becomes the upstream authority and the client address is
//! appended to `X-Forwarded-For` (`headers.rs`). Bodies stream in both directions, or are
//! buffered to be replayed or mapped (`body.rs`). The rule's `timeout` bounds the wait for the
//! upstream's response head: 504 when exceeded, 502 (-103) when the upstream refuses or breaks
//! the connection. A request body the client breaks (a bad chunk, fewer bytes than its
//! `Content-Length`) is the client's fault: 400, not an upstream error.
//!
//! Retries wait a short back-off and share a budget of rule timeouts (`retry.rs`).

mod body;
mod headers;
mod retry;
#[cfg(test)]
mod tests;

use std::net::IpAddr;
use std::time::Duration;

use tokio::time::Instant;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::header;
use http::uri::PathAndQuery;
use http::{Request, StatusCode, Uri, Version};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use model::{GatewayError, RetryStrategy};
use netserve::Connect;
use netserve::net::Connector;

use self::body::{Outgoing, RequestBody, client_body_error, client_fault};
use self::headers::{append_forwarded_for, name_route, strip_hop_by_hop};
use self::retry::Budget;
use crate::balance::{Upstream, now_ms};
use crate::finishing::Finishing;
use crate::plugin::{Forward, Rejection};

/// The pooled upstream client, opening its connections through `C` (resolved at compile
/// time: the OS's network, [`netserve::Tokio`], by default).
#[derive(Debug, Clone)]
pub(crate) struct Proxy<C = netserve::Tokio> {
    client: Client<Connector<C>, Outgoing>,
}

impl Proxy {
    /// [`Proxy::over`] the operating system's network (TCP_NODELAY on every connection).
    #[cfg(test)]
    pub(crate) fn new() -> Proxy {
        Proxy::over(netserve::Tokio)
    }
}

impl<C: Connect> Proxy<C> {
    /// A client with keep-alive connection pooling whose connections `net` opens, with no
    /// connect time limit of their own (the rule's `timeout` bounds the whole attempt). A
    /// connection `net` cannot open is a connect error of the client: 502 (-103), retried.
    pub(crate) fn over(net: C) -> Proxy<C> {
        let client = Client::builder(TokioExecutor::new()).build(Connector::new(net));
        Proxy { client }
    }

    /// Forwards a request and answers with the upstream's response or the error body; either
    /// way the answer names the matched selector and rule. The upstream's lease and the
    /// plugins' guards ([`Forward::held`]) end when the response body is finished (the
    /// guards before its last byte: [`Finishing`]) or dropped, or at once on an error.
    ///
    /// A connection failure or timeout is retried `retry` times (on the same upstream for
    /// `current`, on one not tried yet for `failover`) when the body can be replayed: it is
    /// buffered when its size is known and at most [`body::REPLAY_LIMIT`], or when
    /// paramMapping rewrites it; a streamed body is sent once. Retries back off and stop at
    /// the budget of [`retry::RETRY_BUDGET_TIMEOUTS`] timeouts.
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
        let mut body =
            match RequestBody::prepare(body, &mut parts.headers, body_mapping, retry).await {
                Ok(body) => body,
                Err(response) => return Forwarded::failed(response, Duration::ZERO),
            };
        // The upstreams tried, filled in only by a failover (no allocation otherwise).
        let first = lease.index();
        let mut tried = Vec::new();
        let mut attempt = 0;
        let budget = Budget::new(Duration::from_millis(timeout_ms));
        let mut upstream_time = Duration::ZERO;
        let mut responded = false;
        let mut response = loop {
            let upstream = lease.upstream();
            // The last attempt (the only one, most often) takes the headers; an attempt that
            // may be retried sends a copy.
            let last = attempt >= retry || !body.replayable();
            let mut req = Request::new(body.next());
            *req.method_mut() = parts.method.clone();
            *req.headers_mut() = if last {
                std::mem::take(&mut parts.headers)
            } else {
                parts.headers.clone()
            };
            req.headers_mut()
                .insert(header::HOST, upstream.host.clone());
            let started = Instant::now();
            let sent = self
                .send(req, &parts.uri, upstream, budget.attempt_timeout(started))
                .await;
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
            if !failure.retryable || attempt >= retry || !body.replayable() {
                break failure.response;
            }
            let Some(wait) = budget.wait(attempt) else {
                tracing::debug!(attempt, "retry budget spent");
                break failure.response;
            };
            tokio::time::sleep(wait).await;
            attempt += 1;
            if retry_strategy == RetryStrategy::Failover {
                if tried.is_empty() {
                    tried.push(first);
                }
                let Some(next) = lease.pool().failover(&tried, now_ms()) else {
                    break retry::no_upstream_left();
                };
                tried.push(next);
                lease = lease.pool().lease(next, now_ms());
            }
            tracing::debug!(attempt, upstream = %lease.upstream().authority, "retrying upstream");
        };
        name_route(response.headers_mut(), &selector_id, &rule_id);
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

/// 502 -103 for an upstream that could not be reached or broke the exchange.
fn upstream_error(detail: &str) -> Response {
    Rejection::new(
        StatusCode::BAD_GATEWAY,
        GatewayError::upstream_error(detail),
    )
    .into_response()
}

/// `e` and its sources, joined by `: `.
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
