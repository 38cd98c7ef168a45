//! What a scenario upstream does besides echoing: the `behave` entries of a case file's
//! `upstreams` (docs/scenarios.md, "Upstream behaviour"), each mapped onto a wiremock
//! [`Mock`]. The first entry whose `path` and `method` match a request decides the answer;
//! a request no entry matches gets the echo.
//!
//! wiremock answers with HTTP only. A `fault` entry answers with an error instead
//! ([`Mock::respond_with_err`]), which makes wiremock's server drop the connection without
//! writing a response: a close. A reset needs `SO_LINGER` 0 on the socket, which Linux copies
//! from the listening socket to every connection it accepts: an upstream with a `reset` entry
//! gets that option on its listener ([`resets`]), so each connection it drops (and any
//! connection it closes) ends with a TCP RST. One upstream therefore either closes or resets,
//! never both.

use wiremock::matchers::{any, method, path};
use wiremock::{Mock, ResponseTemplate};

use super::UPSTREAM_HEADER;
use super::echo::EchoResponder;
use crate::scenario::ast::{Behaviour, UpstreamFault};

/// The wiremock mock for this entry of the upstream `name` (matchers, then the fixed
/// answer, the delayed echo or the dropped connection).
pub(crate) fn to_mock(behaviour: &Behaviour, name: &str) -> Mock {
    let mut builder = Mock::given(any());
    if let Some(p) = &behaviour.path {
        builder = builder.and(path(p.as_str()));
    }
    if let Some(m) = &behaviour.method {
        builder = builder.and(method(m.as_str()));
    }
    if let Some(fault) = behaviour.fault {
        return builder.respond_with_err(move |_: &wiremock::Request| Dropped(fault));
    }
    let delay = behaviour.delay.unwrap_or_default();
    if behaviour.status.is_none() && behaviour.body.is_none() && behaviour.headers.is_empty() {
        return builder.respond_with(EchoResponder::new(name).delayed(delay));
    }
    let mut answer = ResponseTemplate::new(behaviour.status.unwrap_or(200))
        .insert_header(UPSTREAM_HEADER, name)
        .set_body_string(behaviour.body.clone().unwrap_or_default())
        .set_delay(delay);
    for (k, v) in &behaviour.headers {
        answer = answer.insert_header(k.as_str(), v.as_str());
    }
    builder.respond_with(answer)
}

/// The error a fault mock answers with: wiremock's server then drops the connection.
#[derive(Debug, thiserror::Error)]
#[error("gantry upstream fault: {0:?}")]
struct Dropped(UpstreamFault);
