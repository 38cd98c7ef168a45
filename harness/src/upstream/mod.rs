//! Scenario upstreams (docs/interfaces.md, "Scenario upstreams"): one wiremock
//! [`MockServer`] per upstream, on a listener the caller binds, for the in-process upstreams
//! of the host backend and the `gantry upstream` binary of the `gantry/upstream:dev` image
//! alike. By default every request gets HTTP 200, `x-gantry-upstream: <name>` and a JSON
//! description of what arrived ([`Echo`], answered by a custom wiremock responder); a case
//! file's `behave` entries ([`Behaviour`]) answer matching requests otherwise (a status, a
//! body, headers, a delay, a closed or reset connection). wiremock's request journal is the
//! record of what the upstream received ([`Upstream::received`]).
//!
//! A request header `x-gantry-delay: <name>=<duration>[, <name>=<duration>…]` makes the
//! echo of the upstreams it names wait that long before answering (`beta=50ms`): the slow
//! upstream of the balancer judges, reachable through the gateway (which forwards the header)
//! on every backend.

mod behave;
mod echo;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub(crate) use crate::scenario::ast::{Behaviour, list_problems};
use echo::{EchoResponder, echo_of};

use crate::error::BackendError;

/// The header naming the upstream that answered.
pub const UPSTREAM_HEADER: &str = "x-gantry-upstream";

/// The request header that delays named upstreams: `<name>=<duration>, …`.
pub(crate) const DELAY_HEADER: &str = "x-gantry-delay";

/// The path that answers `GET` with 200 once every behaviour is in place, whatever the
/// behaviours say (the container's readiness probe); it is left out of [`Upstream::received`].
pub(crate) const READY_PATH: &str = "/__gantry/ready";

/// The delay `header` (an [`DELAY_HEADER`] value) asks of the upstream `name`, if any;
/// entries that do not parse are ignored.
pub(crate) fn delay_for(header: &str, name: &str) -> Option<std::time::Duration> {
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
    /// Path (as wiremock's URL holds it: percent-encodings kept).
    pub path: String,
    /// Query string (empty when none).
    pub query: String,
    /// Headers; repeated ones joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// Body, lossily decoded as UTF-8.
    pub body: String,
}

/// A running scenario upstream; stops when dropped.
#[derive(Debug)]
pub struct Upstream {
    name: String,
    server: MockServer,
}

impl Upstream {
    /// Starts the upstream `name` with `behave` on `127.0.0.1:0`.
    pub async fn start(name: &str, behave: &[Behaviour]) -> Result<Self, BackendError> {
        Upstream::start_at(name, behave, std::net::Ipv4Addr::LOCALHOST.into()).await
    }

    /// Starts the upstream `name` with `behave` on a free port of `ip`.
    pub async fn start_at(
        name: &str,
        behave: &[Behaviour],
        ip: std::net::IpAddr,
    ) -> Result<Self, BackendError> {
        let io = |what: &str| {
            let what = format!("{what} upstream {name} on {ip}");
            move |source| BackendError::Io { what, source }
        };
        let listener = std::net::TcpListener::bind((ip, 0)).map_err(io("binding"))?;
        Upstream::on(name, behave, listener)
            .await
            .map_err(io("starting"))
    }

    /// Starts the upstream `name` with `behave` on `listener`: wiremock's server with a mock
    /// per behaviour (in order), the echo for everything else, and [`READY_PATH`] mounted
    /// last, so that it answers only when the rest is in place.
    pub async fn on(
        name: &str,
        behave: &[Behaviour],
        listener: std::net::TcpListener,
    ) -> std::io::Result<Self> {
        if crate::scenario::ast::resets(behave) {
            // Accepted connections inherit it: dropping one sends a RST.
            socket2::SockRef::from(&listener).set_linger(Some(std::time::Duration::ZERO))?;
        }
        let server = MockServer::builder().listener(listener).start().await;
        for b in behave {
            server
                .register(behave::to_mock(b, name).with_priority(2))
                .await;
        }
        server
            .register(
                Mock::given(wiremock::matchers::any())
                    .respond_with(EchoResponder::new(name))
                    .with_priority(u8::MAX),
            )
            .await;
        server
            .register(
                Mock::given(method("GET"))
                    .and(path(READY_PATH))
                    .respond_with(ResponseTemplate::new(200).insert_header(UPSTREAM_HEADER, name))
                    .with_priority(1),
            )
            .await;
        Ok(Self {
            name: name.to_owned(),
            server,
        })
    }

    /// The upstream's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `127.0.0.1:<port>`, as a divide `upstreamUrl`.
    pub fn host_port(&self) -> String {
        self.server.address().to_string()
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        *self.server.address()
    }

    /// Every request it received so far, in order (wiremock's journal; readiness probes
    /// left out), whatever it answered, including the connections it dropped.
    pub async fn received(&self) -> Vec<Echo> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter(|r| r.url.path() != READY_PATH)
            .map(|r| echo_of(&self.name, r))
            .collect()
    }
}

/// Serves the upstream `name` with `behave` on `listener` until `shutdown` completes (the
/// standalone server behind `gantry upstream` and the `gantry/upstream:dev` image).
pub(crate) async fn serve(
    name: &str,
    behave: &[Behaviour],
    listener: std::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let upstream = Upstream::on(name, behave, listener).await?;
    shutdown.await;
    drop(upstream);
    Ok(())
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
        let up = Upstream::start("alpha", &[]).await.unwrap();
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

    fn client() -> reqwest::Client {
        reqwest::Client::builder().no_proxy().build().unwrap()
    }

    fn behave(yaml: &str) -> Vec<Behaviour> {
        serde_norway::from_str(yaml).unwrap()
    }

    /// Sends `GET path` on a fresh connection and reads until the upstream closes it: the
    /// bytes it wrote, or the error that ended the read.
    async fn raw_get(up: &Upstream, path: &str) -> std::io::Result<Vec<u8>> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(up.addr()).await?;
        s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await?;
        let mut got = Vec::new();
        s.read_to_end(&mut got).await?;
        Ok(got)
    }

    #[tokio::test]
    async fn behaviours_answer_matching_requests_and_the_echo_the_rest() {
        let list = behave(
            "[{ path: /fail, method: GET, status: 503, body: down, headers: { x-a: b } },
              { path: /fail, status: 418 }]",
        );
        let up = Upstream::start("broken", &list).await.unwrap();
        let url = |p: &str| format!("http://{}{p}", up.host_port());
        let resp = client().get(url("/fail")).send().await.unwrap();
        assert_eq!(resp.status(), 503);
        assert_eq!(resp.headers()[UPSTREAM_HEADER], "broken");
        assert_eq!(resp.headers()["x-a"], "b");
        assert_eq!(resp.text().await.unwrap(), "down");
        // The first matching entry wins; the second answers other methods.
        let resp = client().post(url("/fail")).send().await.unwrap();
        assert_eq!(resp.status(), 418);
        let resp = client().get(url("/other")).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let echo: Echo = resp.json().await.unwrap();
        assert_eq!(
            (echo.upstream.as_str(), echo.path.as_str()),
            ("broken", "/other")
        );
        // Ready whatever the behaviours say, and left out of the journal.
        let ready = client().get(url(READY_PATH)).send().await.unwrap();
        assert_eq!(ready.status(), 200);
        let journal: Vec<(String, String)> = up
            .received()
            .await
            .into_iter()
            .map(|e| (e.method, e.path))
            .collect();
        assert_eq!(
            journal,
            [("GET", "/fail"), ("POST", "/fail"), ("GET", "/other")]
                .map(|(m, p)| (m.to_owned(), p.to_owned()))
        );
    }

    #[tokio::test]
    async fn a_catch_all_behaviour_leaves_readiness_alone() {
        let up = Upstream::start("down", &behave("[{ status: 503 }]"))
            .await
            .unwrap();
        let base = format!("http://{}", up.host_port());
        let get = |p: &str| client().get(format!("{base}{p}")).send();
        assert_eq!(get("/").await.unwrap().status(), 503);
        assert_eq!(get(READY_PATH).await.unwrap().status(), 200);
    }

    #[tokio::test]
    async fn a_delay_holds_the_echo_back() {
        let up = Upstream::start("slow", &behave("[{ path: /slow, delay: 200ms }]"))
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let resp = client()
            .get(format!("http://{}/slow", up.host_port()))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.json::<Echo>().await.unwrap().path, "/slow");
        assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    }

    #[tokio::test]
    async fn close_ends_the_connection_without_an_answer() {
        let up = Upstream::start("closing", &behave("[{ path: /close, fault: close }]"))
            .await
            .unwrap();
        assert_eq!(raw_get(&up, "/close").await.unwrap(), b"");
        // The request is in the journal all the same.
        assert_eq!(up.received().await[0].path, "/close");
    }

    #[tokio::test]
    async fn reset_resets_the_connection() {
        let up = Upstream::start("resetting", &behave("[{ path: /reset, fault: reset }]"))
            .await
            .unwrap();
        let e = raw_get(&up, "/reset").await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
        // Other paths still answer.
        let resp = client()
            .get(format!("http://{}/fine", up.host_port()))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(up.received().await.len(), 2);
    }
}
