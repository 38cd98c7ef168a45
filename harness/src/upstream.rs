//! In-process echo upstreams (docs/interfaces.md, "Scenario upstreams"): every request gets
//! HTTP 200, `x-gantry-upstream: <name>` and a JSON description of what arrived.
//!
//! A request header `x-gantry-delay: <name>=<duration>[, <name>=<duration>…]` makes the
//! upstreams it names wait that long before answering (`beta=50ms`): the slow upstream of the
//! balancer judges, reachable through the gateway (which forwards the header) on every backend.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::error::BackendError;

/// The header naming the upstream that answered.
pub const UPSTREAM_HEADER: &str = "x-gantry-upstream";

/// The request header that delays named upstreams: `<name>=<duration>, …`.
pub const DELAY_HEADER: &str = "x-gantry-delay";

/// The delay `header` (an [`DELAY_HEADER`] value) asks of the upstream `name`, if any;
/// entries that do not parse are ignored.
pub fn delay_for(header: &str, name: &str) -> Option<std::time::Duration> {
    header.split(',').find_map(|entry| {
        let (who, delay) = entry.split_once('=')?;
        (who.trim() == name)
            .then(|| humantime::parse_duration(delay.trim()).ok())
            .flatten()
    })
}

/// What an echo upstream answers: the request it received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Echo {
    /// The upstream's name.
    pub upstream: String,
    /// Method.
    pub method: String,
    /// Raw path.
    pub path: String,
    /// Raw query string (empty when none).
    pub query: String,
    /// Headers; repeated ones joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// Body, lossily decoded as UTF-8.
    pub body: String,
}

/// A running echo upstream; stops when dropped.
#[derive(Debug)]
pub struct Upstream {
    name: String,
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Upstream {
    /// Starts an upstream named `name` on `127.0.0.1:0`.
    pub async fn start(name: &str) -> Result<Self, BackendError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|source| BackendError::Io {
                what: format!("binding upstream {name}"),
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| BackendError::Io {
            what: format!("address of upstream {name}"),
            source,
        })?;
        let app = router(name);
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::error!("echo upstream failed: {e}");
            }
        });
        Ok(Self {
            name: name.to_owned(),
            addr,
            stop: Some(stop),
        })
    }

    /// The upstream's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `127.0.0.1:<port>`, as a divide `upstreamUrl`.
    pub fn host_port(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The echo server's routes: every request answered by the upstream `name`.
pub fn router(name: &str) -> Router {
    Router::new().fallback(echo).with_state(name.to_owned())
}

/// Serves the echo upstream `name` on `listener` until `shutdown` completes (the standalone
/// server behind `gantry upstream` and the `gantry/upstream:dev` image).
pub async fn serve(
    name: &str,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(name))
        .with_graceful_shutdown(shutdown)
        .await
}

async fn echo(
    State(name): State<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(delay) = headers
        .get(DELAY_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| delay_for(v, &name))
    {
        tokio::time::sleep(delay).await;
    }
    let mut map: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in &headers {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        map.entry(k.as_str().to_owned())
            .and_modify(|e| *e = format!("{e}, {v}"))
            .or_insert(v);
    }
    let echo = Echo {
        upstream: name.clone(),
        method: method.to_string(),
        path: uri.path().to_owned(),
        query: uri.query().unwrap_or_default().to_owned(),
        headers: map,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    ([(UPSTREAM_HEADER, name)], axum::Json(echo)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_header_names_upstreams() {
        let h = "alpha=5ms, beta = 50ms,gamma=soon";
        assert_eq!(
            delay_for(h, "beta"),
            Some(std::time::Duration::from_millis(50))
        );
        assert_eq!(
            delay_for(h, "alpha"),
            Some(std::time::Duration::from_millis(5))
        );
        assert_eq!(delay_for(h, "gamma"), None);
        assert_eq!(delay_for(h, "delta"), None);
    }

    #[tokio::test]
    async fn echoes_the_request() {
        let up = Upstream::start("alpha").await.unwrap();
        let resp = reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .post(format!("http://{}/a/b?x=1", up.host_port()))
            .header("X-Test", "yes")
            .body("hi")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()[UPSTREAM_HEADER], "alpha");
        let echo: Echo = resp.json().await.unwrap();
        assert_eq!(
            (
                echo.method.as_str(),
                echo.path.as_str(),
                echo.query.as_str()
            ),
            ("POST", "/a/b", "x=1")
        );
        assert_eq!(echo.headers["x-test"], "yes");
        assert_eq!(echo.body, "hi");
    }
}
