//! The plugin chain. Each [`Plugin`] looks at the request and the snapshot and either passes,
//! answers, or names an upstream to forward to; the chain runs them in order. gantry's chain
//! has one plugin so far, [`divide::Divide`]. No plugin forwarding means ShenYu's -106.

pub(crate) mod divide;

use std::sync::Arc;
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use http::uri::{Authority, Scheme};
use http::{HeaderValue, StatusCode};
use model::GatewayError;

use crate::router::{MatchError, RequestView};
use crate::snapshot::Snapshot;

/// Where and how to forward a request.
#[derive(Debug, Clone)]
pub(crate) struct Forward {
    /// Upstream scheme.
    pub(crate) scheme: Scheme,
    /// Upstream `host:port`.
    pub(crate) authority: Authority,
    /// Host header to send.
    pub(crate) host: HeaderValue,
    /// Time allowed for the upstream's response head.
    pub(crate) timeout_ms: u64,
    /// Matched selector.
    pub(crate) selector_id: Arc<str>,
    /// Matched rule (or `default_rule`).
    pub(crate) rule_id: Arc<str>,
}

impl Forward {
    /// The timeout as a duration.
    pub(crate) fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// An error answer: a real HTTP status with ShenYu's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    /// HTTP status.
    pub(crate) status: StatusCode,
    /// Body.
    pub(crate) body: GatewayError,
}

impl Rejection {
    pub(crate) fn new(status: StatusCode, body: GatewayError) -> Self {
        Self { status, body }
    }
}

impl From<MatchError> for Rejection {
    fn from(e: MatchError) -> Self {
        Rejection::new(
            e.status,
            GatewayError::new(i32::from(e.status.as_u16()), e.message),
        )
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body)).into_response()
    }
}

/// What a plugin decided.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Next plugin.
    Continue,
    /// Forward to an upstream (ends the chain).
    Forward(Forward),
    /// Answer with an error (ends the chain).
    Reject(Rejection),
}

/// One plugin of the chain.
pub(crate) trait Plugin: std::fmt::Debug + Send + Sync {
    /// The Java class name ShenYu's `/actuator/plugins` shows for it.
    fn class_name(&self) -> &'static str;
    /// ShenYu's built-in order.
    fn order(&self) -> i32;
    /// Decides for one request.
    fn execute(&self, snapshot: &Snapshot, req: &RequestView<'_>) -> Outcome;
}

/// The ordered plugins.
#[derive(Debug)]
pub(crate) struct Chain {
    plugins: Vec<Box<dyn Plugin>>,
}

impl Chain {
    /// gantry's chain.
    pub(crate) fn standard() -> Chain {
        Chain {
            plugins: vec![Box::new(divide::Divide)],
        }
    }

    /// The plugins, in order.
    pub(crate) fn plugins(&self) -> impl Iterator<Item = &dyn Plugin> {
        self.plugins.iter().map(|p| &**p)
    }

    /// Runs the chain: the first forward or rejection wins; nobody forwarding is -106.
    pub(crate) fn run(
        &self,
        snapshot: &Snapshot,
        req: &RequestView<'_>,
    ) -> Result<Forward, Rejection> {
        for plugin in &self.plugins {
            match plugin.execute(snapshot, req) {
                Outcome::Continue => {}
                Outcome::Forward(f) => return Ok(f),
                Outcome::Reject(r) => return Err(r),
            }
        }
        Err(Rejection::new(
            StatusCode::NOT_FOUND,
            GatewayError::cannot_find_url(),
        ))
    }
}
