//! The request body on its way upstream: buffered when it may be sent again (a retry) or
//! paramMapping rewrites it, streamed otherwise; and the client's read errors told apart
//! from the upstream's ([`ClientBodyError`]: 400, not 502).

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::StatusCode;
use http::header::{self, HeaderMap};
use http_body_util::{BodyExt, Limited};

use super::error_chain;
use crate::plugin::Rejection;
use crate::plugin::param_mapping::BodyMapping;
use model::GatewayError;

/// Bodies up to this size (known in advance) are buffered so that retries can resend them.
pub(super) const REPLAY_LIMIT: u64 = 1024 * 1024;
/// The largest body paramMapping reads.
const MAPPING_LIMIT: usize = 16 * 1024 * 1024;

/// The request body, ready to be sent once or more.
#[derive(Debug)]
pub(super) enum RequestBody {
    /// Read whole (rewritten by paramMapping when it asked): every attempt sends it.
    Buffered(Bytes),
    /// The client's body, sent once as it comes; later attempts would send nothing.
    Streamed(Option<Body>),
}

impl RequestBody {
    /// Reads `body` when it is to be replayed (`retry` attempts and a known size of at most
    /// [`REPLAY_LIMIT`]) or mapped (`mapping`, which may rewrite it and then `headers`'
    /// `Content-Length`); keeps it streaming otherwise. A body the client breaks while it is
    /// read is the 400 answer.
    pub(super) async fn prepare(
        body: Body,
        headers: &mut HeaderMap,
        mapping: Option<Arc<BodyMapping>>,
        retry: u32,
    ) -> Result<RequestBody, Response> {
        use hyper::body::Body as _;
        let replayable = mapping.is_some()
            || (retry > 0 && body.size_hint().exact().is_some_and(|n| n <= REPLAY_LIMIT));
        if !replayable {
            return Ok(RequestBody::Streamed(Some(body)));
        }
        let bytes = match Limited::new(body, MAPPING_LIMIT).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => return Err(client_body_error(&ClientBodyError(e))),
        };
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let mapped = mapping.and_then(|m| m.apply(content_type, &bytes));
        Ok(RequestBody::Buffered(match mapped {
            Some(mapped) => {
                headers.remove(header::CONTENT_LENGTH);
                headers.insert(header::CONTENT_LENGTH, mapped.len().into());
                Bytes::from(mapped)
            }
            None => bytes,
        }))
    }

    /// Whether another attempt can send it again.
    pub(super) fn replayable(&self) -> bool {
        matches!(self, RequestBody::Buffered(_))
    }

    /// The body of the next attempt.
    pub(super) fn next(&mut self) -> Outgoing {
        Outgoing(match self {
            RequestBody::Buffered(bytes) => Body::from(bytes.clone()),
            RequestBody::Streamed(body) => body.take().unwrap_or_else(Body::empty),
        })
    }
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
pub(super) fn client_fault<'e>(
    e: &'e (dyn std::error::Error + 'static),
) -> Option<&'e ClientBodyError> {
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
pub(super) fn client_body_error(e: &ClientBodyError) -> Response {
    let detail = format!("cannot read the request body: {}", error_chain(&*e.0));
    Rejection::new(StatusCode::BAD_REQUEST, GatewayError::new(400, detail)).into_response()
}
