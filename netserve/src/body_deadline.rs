//! An opt-in limit on how long a request body may take to arrive ([`body_read_deadline`]).
//!
//! The watchdog puts no limit on a request in progress, so a client announcing a body it
//! never sends (`Content-Length: 100`, then nothing; or h2 HEADERS without DATA) holds its
//! connection, task and socket for as long as the handler waits for the body. A service whose
//! requests are all small (the admin) bounds that wait here; one that streams bodies of any
//! size to upstreams (the gateway) does not use it.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, Version, header};
use hyper::body::Frame;
use tokio::time::{Instant, Sleep};

/// Wraps `router` so that a request whose body has not all arrived `limit` after its head
/// gets `timed_out()` (meant to be a 408) instead of the handler's answer: the handler's
/// body read fails at the deadline, and whatever it answers is replaced. Over HTTP/1.x the
/// answer carries `Connection: close` (the rest of the body will not be read). A handler
/// that never reads the body is not limited (its answer ends the request).
pub fn body_read_deadline(router: Router, limit: Duration, timed_out: fn() -> Response) -> Router {
    router.layer(middleware::from_fn(
        move |req: Request, next: Next| async move {
            let version = req.version();
            let expired = Arc::new(AtomicBool::new(false));
            let deadline = Instant::now() + limit;
            let req = req.map(|body| {
                Body::new(DeadlineBody {
                    body,
                    sleep: Box::pin(tokio::time::sleep_until(deadline)),
                    expired: Arc::clone(&expired),
                })
            });
            let response = next.run(req).await;
            if !expired.load(Ordering::Relaxed) {
                return response;
            }
            tracing::debug!(
                limit_ms = limit.as_millis(),
                "request body not received in time"
            );
            let mut response = timed_out();
            if version <= Version::HTTP_11 {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            response
        },
    ))
}

/// The error a handler's body read gets at the deadline.
#[derive(Debug)]
struct BodyTimedOut;

impl fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request body not received in time")
    }
}

impl std::error::Error for BodyTimedOut {}

/// A request body that fails with [`BodyTimedOut`] (and says so in `expired`) if it has not
/// ended when `sleep` does.
struct DeadlineBody {
    body: Body,
    sleep: Pin<Box<Sleep>>,
    expired: Arc<AtomicBool>,
}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        if self.sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.expired.store(true, Ordering::Relaxed);
        Poll::Ready(Some(Err(axum::Error::new(BodyTimedOut))))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}
