//! Readiness: polling a service that was just started (a host process, a container, a store
//! server) until it answers, with a deadline. Every backend waits with [`ReadyWait`]; what
//! "answers" means is one of the probes here ([`http_200`], [`etcd_health`],
//! [`zookeeper_srvr`], [`redis_ping`]) or the caller's own.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::BackendError;

/// Why a probe did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotReady {
    /// Not yet (what it saw): the wait goes on.
    Yet(String),
    /// Never (what it saw, e.g. the process exited): the wait ends now.
    Gone(String),
}

impl From<String> for NotReady {
    fn from(seen: String) -> Self {
        NotReady::Yet(seen)
    }
}

/// A readiness wait: for whom, how often, how long.
#[derive(Debug, Clone)]
pub(crate) struct ReadyWait {
    /// The service, as the error names it.
    pub(crate) service: String,
    /// Time between the starts of two probes.
    pub(crate) interval: Duration,
    /// Hard deadline, from the start of the wait.
    pub(crate) timeout: Duration,
}

/// A readiness wait that ended without an answer; becomes [`BackendError::Unhealthy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unready {
    service: String,
    waited: Duration,
    last: String,
}

impl Unready {
    /// The same, with `log` (the service's log tail) after what was last seen.
    pub(crate) fn with_log(mut self, log: &str) -> Self {
        self.last = format!("{}; log:\n{log}", self.last);
        self
    }
}

impl From<Unready> for BackendError {
    fn from(u: Unready) -> Self {
        BackendError::Unhealthy {
            service: u.service,
            waited_ms: u.waited.as_millis(),
            last: u.last,
        }
    }
}

impl ReadyWait {
    /// Polls `probe` every [`ReadyWait::interval`] until it passes (returns how long that
    /// took), reports [`NotReady::Gone`], or the next probe would start after the deadline.
    pub(crate) async fn until<F, Fut, E>(self, mut probe: F) -> Result<Duration, Unready>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Into<NotReady>,
    {
        let start = Instant::now();
        let deadline = start + self.timeout;
        let last = loop {
            let began = Instant::now();
            match probe().await.map_err(Into::into) {
                Ok(()) => return Ok(start.elapsed()),
                Err(NotReady::Gone(seen)) => break seen,
                Err(NotReady::Yet(seen)) => {
                    let next = began + self.interval;
                    if next > deadline {
                        break seen;
                    }
                    tokio::time::sleep_until(next).await;
                }
            }
        };
        Err(Unready {
            service: self.service,
            waited: start.elapsed(),
            last,
        })
    }
}

/// `GET url` answers 200.
pub(crate) async fn http_200(http: &reqwest::Client, url: &str) -> Result<(), String> {
    match http.get(url).send().await {
        Ok(r) if r.status() == 200 => Ok(()),
        Ok(r) => Err(format!("HTTP {}", r.status())),
        Err(e) => Err(e.to_string()),
    }
}

/// `GET <url>/health` on etcd answers `{"health":"true"}`.
pub(crate) async fn etcd_health(http: &reqwest::Client, url: &str) -> Result<(), String> {
    match http.get(format!("{url}/health")).send().await {
        Ok(r) => match r.text().await {
            Ok(body) if body.contains(r#""health":"true""#) => Ok(()),
            Ok(body) => Err(format!("GET /health: {body}")),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    }
}

/// Connects to loopback `port` (1 s), sends `request`, and hands back the stream to read the
/// answer from (reads time out after 2 s).
fn send(port: u16, request: &[u8]) -> Result<TcpStream, String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream =
        TcpStream::connect_timeout(&addr, Duration::from_secs(1)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    stream.write_all(request).map_err(|e| e.to_string())?;
    Ok(stream)
}

/// ZooKeeper on loopback `port` answers the `srvr` four-letter word with its mode.
pub(crate) async fn zookeeper_srvr(port: u16) -> Result<(), String> {
    tokio::task::spawn_blocking(move || srvr(port))
        .await
        .unwrap_or_else(|e| Err(e.to_string()))
}

/// Sends `srvr` to ZooKeeper on loopback `port`; `Ok` when it reports its mode.
fn srvr(port: u16) -> Result<(), String> {
    let mut stream = send(port, b"srvr")?;
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .map_err(|e| e.to_string())?;
    if answer.contains("Mode:") {
        Ok(())
    } else {
        Err(format!("srvr answered {answer:?}"))
    }
}

/// Redis on loopback `port` answers `PING` with `+PONG`.
pub(crate) async fn redis_ping(port: u16) -> Result<(), String> {
    tokio::task::spawn_blocking(move || ping(port))
        .await
        .unwrap_or_else(|e| Err(e.to_string()))
}

/// Sends an inline `PING` to Redis on loopback `port`; `Ok` when it answers `+PONG`.
fn ping(port: u16) -> Result<(), String> {
    let mut stream = send(port, b"PING\r\n")?;
    let mut answer = [0u8; 64];
    let n = stream.read(&mut answer).map_err(|e| e.to_string())?;
    let answer = String::from_utf8_lossy(&answer[..n]);
    if answer.starts_with("+PONG") {
        Ok(())
    } else {
        Err(format!("PING answered {answer:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(timeout_ms: u64) -> ReadyWait {
        ReadyWait {
            service: "svc".into(),
            interval: Duration::from_millis(100),
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn passes_at_the_first_answer() {
        let mut script = vec![false, false, true].into_iter();
        let took = wait(10_000)
            .until(|| {
                let pass = script.next().expect("no more probes expected");
                async move {
                    if pass {
                        Ok(())
                    } else {
                        Err("refused".to_owned())
                    }
                }
            })
            .await
            .unwrap();
        assert_eq!(took, Duration::from_millis(200));
    }

    #[tokio::test(start_paused = true)]
    async fn times_out_with_what_it_saw_last() {
        let mut n = 0;
        let e = wait(450)
            .until(|| {
                n += 1;
                let seen = format!("HTTP 503 ({n})");
                async move { Err(seen) }
            })
            .await
            .unwrap_err();
        assert_eq!(n, 5);
        let e = BackendError::from(e.with_log("boom"));
        assert_eq!(
            e.to_string(),
            "svc not healthy after 400 ms: HTTP 503 (5); log:\nboom"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_gone_service_ends_the_wait_at_once() {
        let e = wait(10_000)
            .until(|| async { Err(NotReady::Gone("exited".into())) })
            .await
            .unwrap_err();
        assert_eq!(e.waited, Duration::ZERO);
        assert_eq!(e.last, "exited");
    }
}
