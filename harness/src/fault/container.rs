//! A fault proxy in a container of its own (docker backend): the `gantry/proxy:dev` image runs
//! `gantry fault-proxy`, a [`FaultProxy`] on the run's network in front of one target (an
//! upstream, the admin, ZooKeeper or etcd), with a small HTTP control API on its published
//! port through which the harness sets its toxics. The containers of the topology stay
//! `FROM scratch` and untouched: only the address their peers are given changes.
//!
//! | request | effect |
//! |---|---|
//! | `GET /health` | 200 once the proxy listens |
//! | `PUT /toxics` (JSON [`Toxics`]) | replaces the toxics; open connections follow |
//! | `POST /heal` | back to no toxics |

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use model::lock::MutexExt;

use super::{FaultProxy, Toxics};
use crate::backend::docker::Container;
use crate::error::BackendError;

/// The proxy's control port inside its container (published).
pub(crate) const CONTROL_PORT: u16 = 9400;
/// The port it relays on inside its container (what its peers are given).
pub(crate) const LISTEN_PORT: u16 = 9401;
/// How long [`serve`] waits for the target's name to resolve (its container was started
/// first, so this is only docker's DNS catching up).
const RESOLVE_FOR: Duration = Duration::from_secs(30);

/// Runs a proxy on `listen` in front of `target` (`host:port`, resolved once it resolves),
/// with its control API on `control`, until `shutdown` completes.
pub(crate) async fn serve(
    listen: SocketAddr,
    target: &str,
    control: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let target = resolve(target, RESOLVE_FOR).await?;
    let proxy = FaultProxy::start_on(listen, target)
        .await
        .map_err(|e| format!("listening on {listen}: {e}"))?;
    let listener = tokio::net::TcpListener::bind(control)
        .await
        .map_err(|e| format!("binding the control port {control}: {e}"))?;
    println!("relaying {listen} to {target}; control on http://{control}");
    axum::serve(listener, router(Arc::new(proxy)))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|e| format!("serving the control API: {e}"))
}

/// The first address `target` resolves to, retried until `within` has passed.
async fn resolve(target: &str, within: Duration) -> Result<SocketAddr, String> {
    let deadline = Instant::now() + within;
    loop {
        let error = match tokio::net::lookup_host(target).await {
            Ok(mut addrs) => match addrs.next() {
                Some(addr) => return Ok(addr),
                None => "no address".to_owned(),
            },
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(format!("resolving the target {target}: {error}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The control API over `proxy`.
fn router(proxy: Arc<FaultProxy>) -> Router {
    Router::new()
        .route("/health", get(|| async { StatusCode::OK }))
        .route(
            "/toxics",
            put(
                |State(proxy): State<Arc<FaultProxy>>, Json(toxics): Json<Toxics>| async move {
                    proxy.set_toxics(toxics);
                    StatusCode::NO_CONTENT
                },
            ),
        )
        .route(
            "/heal",
            post(|State(proxy): State<Arc<FaultProxy>>| async move {
                proxy.heal();
                StatusCode::NO_CONTENT
            }),
        )
        .with_state(proxy)
}

/// The harness's handle on a proxy container: the toxics it was last given, and where its
/// peers reach it.
#[derive(Debug)]
pub(crate) struct ProxyContainer {
    container: Container,
    toxics: std::sync::Mutex<Toxics>,
}

impl ProxyContainer {
    /// The handle on `container`, a started `gantry fault-proxy`, passing.
    pub(crate) fn new(container: Container) -> ProxyContainer {
        ProxyContainer {
            container,
            toxics: std::sync::Mutex::new(Toxics::default()),
        }
    }

    /// `name:port` on the run's network: what its peers are given instead of the target's.
    pub(crate) fn address(&self) -> String {
        format!("{}:{LISTEN_PORT}", self.container.name())
    }

    /// The container, to remove.
    pub(crate) fn into_container(self) -> Container {
        self.container
    }

    /// The toxics it was last given.
    pub(crate) fn toxics(&self) -> Toxics {
        self.toxics.locked().clone()
    }

    /// Replaces its toxics.
    pub(crate) async fn set_toxics(&self, toxics: Toxics) -> Result<(), BackendError> {
        let url = format!("{}/toxics", self.container.url());
        let sent = crate::client::http().put(&url).json(&toxics).send().await;
        self.answered(sent, "setting its toxics")?;
        *self.toxics.locked() = toxics;
        Ok(())
    }

    /// Back to no toxics.
    pub(crate) async fn heal(&self) -> Result<(), BackendError> {
        let url = format!("{}/heal", self.container.url());
        let sent = crate::client::http().post(&url).send().await;
        self.answered(sent, "healing it")?;
        *self.toxics.locked() = Toxics::default();
        Ok(())
    }

    /// `sent`, a control request for `what`, answered with a success.
    fn answered(
        &self,
        sent: reqwest::Result<reqwest::Response>,
        what: &str,
    ) -> Result<(), BackendError> {
        let error = match sent {
            Ok(answer) if answer.status().is_success() => return Ok(()),
            Ok(answer) => format!("HTTP {}", answer.status()),
            Err(e) => e.to_string(),
        };
        Err(BackendError::Io {
            what: format!("{what}: the fault proxy {}", self.container.name()),
            source: std::io::Error::other(error),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::proxy::tests::echo;
    use crate::fault::{Direction, Toxic};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn free() -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    }

    #[tokio::test]
    async fn the_control_api_sets_and_heals_toxics() {
        let target = echo().await;
        let (listen, control) = (free(), free());
        tokio::spawn(async move {
            serve(listen, &target.to_string(), control, std::future::pending()).await
        });
        let base = format!("http://{control}");
        let http = crate::client::http();
        let policy = crate::wait::WaitPolicy {
            consecutive: 1,
            interval: Duration::from_millis(20),
            timeout: Duration::from_secs(10),
        };
        crate::wait::await_convergence(policy, || async {
            let answer = http.get(format!("{base}/health")).send().await;
            answer.map(drop).map_err(|e| e.to_string())
        })
        .await
        .expect("the control API answers");

        let mut limited = Toxics::default();
        limited.add(Direction::Answer, Toxic::LimitData { bytes: 2 });
        let answer = http
            .put(format!("{base}/toxics"))
            .json(&limited)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::NO_CONTENT);
        let mut stream = tokio::net::TcpStream::connect(listen).await.unwrap();
        stream.write_all(b"hello").await.unwrap();
        let mut got = Vec::new();
        stream.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"he", "the answer is cut after 2 bytes");

        let healed = http.post(format!("{base}/heal")).send().await.unwrap();
        assert_eq!(healed.status(), StatusCode::NO_CONTENT);
        let mut stream = tokio::net::TcpStream::connect(listen).await.unwrap();
        stream.write_all(b"hello").await.unwrap();
        let mut got = [0; 5];
        stream.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hello");

        let bad = http
            .put(format!("{base}/toxics"))
            .body("{\"request\": 3}")
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap();
        assert!(bad.status().is_client_error(), "{}", bad.status());
    }

    #[tokio::test]
    async fn an_unresolvable_target_is_named() {
        let e = resolve("no-such-host.invalid:1", Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(e.contains("no-such-host.invalid:1"), "{e}");
    }
}
