//! The echo answer as a wiremock responder: HTTP 200, `x-gantry-upstream: <name>` and the
//! request as JSON ([`Echo`]), after the delay the [`DELAY_HEADER`] asks of this upstream.

use std::collections::BTreeMap;
use std::time::Duration;

use wiremock::{Request, Respond, ResponseTemplate};

use super::{DELAY_HEADER, Echo, UPSTREAM_HEADER, delay_for};

/// Answers every request with the echo of the upstream `name`.
#[derive(Debug, Clone)]
pub(crate) struct EchoResponder {
    name: String,
    /// Waited before answering, besides what the delay header asks.
    delay: Duration,
}

impl EchoResponder {
    /// The echo of the upstream `name`, without a delay of its own.
    pub(crate) fn new(name: &str) -> EchoResponder {
        EchoResponder {
            name: name.to_owned(),
            delay: Duration::ZERO,
        }
    }

    /// The same, waiting `delay` (plus what the delay header asks) before each answer.
    pub(crate) fn delayed(self, delay: Duration) -> EchoResponder {
        EchoResponder { delay, ..self }
    }
}

impl Respond for EchoResponder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let asked = request
            .headers
            .get(DELAY_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| delay_for(v, &self.name))
            .unwrap_or_default();
        ResponseTemplate::new(200)
            .insert_header(UPSTREAM_HEADER, self.name.as_str())
            .set_body_json(echo_of(&self.name, request))
            .set_delay(self.delay + asked)
    }
}

/// What the upstream `name` received in `request`.
pub(crate) fn echo_of(name: &str, request: &Request) -> Echo {
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in &request.headers {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        headers
            .entry(k.as_str().to_owned())
            .and_modify(|e| *e = format!("{e}, {v}"))
            .or_insert(v);
    }
    Echo {
        upstream: name.to_owned(),
        method: request.method.to_string(),
        path: request.url.path().to_owned(),
        query: request.url.query().unwrap_or_default().to_owned(),
        headers,
        body: String::from_utf8_lossy(&request.body).into_owned(),
    }
}
