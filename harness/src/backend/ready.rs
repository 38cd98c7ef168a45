//! Readiness: polling a service that was just started (a host process, a container, a store
//! server) until it answers, with a deadline. Every backend waits with [`ReadyWait`]; what
//! "answers" means is one of the probes here ([`http_200`], [`etcd_health`],
//! [`zookeeper_srvr`], [`redis_ping`], [`postgres_accepts`]) or the caller's own.

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

/// PostgreSQL on loopback `port` lets the superuser `gantry` into the database `postgres`: a
/// protocol 3.0 startup is answered with AuthenticationOk (`R`, code 0), not with an error
/// (`E`, e.g. "the database system is starting up") or a request for a password.
pub(crate) async fn postgres_accepts(port: u16) -> Result<(), String> {
    tokio::task::spawn_blocking(move || startup(port))
        .await
        .unwrap_or_else(|e| Err(e.to_string()))
}

/// A PostgreSQL StartupMessage (protocol 3.0) for `user` into `database`.
fn startup_message(user: &str, database: &str) -> Vec<u8> {
    let mut body = 196_608_u32.to_be_bytes().to_vec();
    for field in ["user", user, "database", database, ""] {
        body.extend_from_slice(field.as_bytes());
        body.push(0);
    }
    let len = u32::try_from(body.len() + 4).expect("a short message");
    [len.to_be_bytes().to_vec(), body].concat()
}

/// Sends a startup to PostgreSQL on loopback `port`; `Ok` when it answers AuthenticationOk
/// (then ends the session with Terminate), else what it answered.
fn startup(port: u16) -> Result<(), String> {
    let user = crate::backend::component::postgres::SUPERUSER;
    let mut stream = send(port, &startup_message(user, "postgres"))?;
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).map_err(|e| e.to_string())?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    // An error message is short; an answer this long is no PostgreSQL.
    if !(4..=64 * 1024).contains(&len) {
        return Err(format!("answered {:?} with length {len}", head[0] as char));
    }
    let mut body = vec![0u8; len - 4];
    stream.read_exact(&mut body).map_err(|e| e.to_string())?;
    match (head[0], body.as_slice()) {
        (b'R', [0, 0, 0, 0]) => {
            // Terminate, so that the server does not log a lost client; the answer is what
            // counts, so a failure here changes nothing.
            let _ = stream.write_all(b"X\0\0\0\x04");
            Ok(())
        }
        (b'R', code) => Err(format!("asked for authentication (request {code:?})")),
        (b'E', fields) => Err(error_text(fields)),
        (tag, _) => Err(format!("answered the startup with {:?}", tag as char)),
    }
}

/// The message (`M` field) of an ErrorResponse's `fields`, else all of them.
fn error_text(fields: &[u8]) -> String {
    let mut message = None;
    for field in fields.split(|b| *b == 0) {
        if let Some((b'M', text)) = field.split_first() {
            message = Some(String::from_utf8_lossy(text).into_owned());
        }
    }
    message.unwrap_or_else(|| String::from_utf8_lossy(fields).into_owned())
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

    /// A fake PostgreSQL on a loopback port that reads one startup per connection and answers
    /// the `answers` in turn; returns its port and what it read.
    fn fake_postgres(answers: Vec<Vec<u8>>) -> (u16, std::thread::JoinHandle<Vec<Vec<u8>>>) {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let mut startups = Vec::new();
            for answer in answers {
                let (mut conn, _) = listener.accept().unwrap();
                let mut len = [0u8; 4];
                conn.read_exact(&mut len).unwrap();
                let mut startup = vec![0u8; u32::from_be_bytes(len) as usize - 4];
                conn.read_exact(&mut startup).unwrap();
                startups.push(startup);
                conn.write_all(&answer).unwrap();
            }
            startups
        });
        (port, server)
    }

    #[tokio::test]
    async fn postgres_is_ready_when_it_lets_gantry_in() {
        let starting = b"SFATAL\0C57P03\0Mthe database system is starting up\0\0";
        let mut error = vec![b'E'];
        error.extend(u32::try_from(starting.len() + 4).unwrap().to_be_bytes());
        error.extend(starting);
        let password = b"R\0\0\0\x08\0\0\0\x03".to_vec();
        let ok = b"R\0\0\0\x08\0\0\0\0".to_vec();
        let (port, server) = fake_postgres(vec![error, password, ok]);
        assert_eq!(
            postgres_accepts(port).await,
            Err("the database system is starting up".to_owned())
        );
        assert_eq!(
            postgres_accepts(port).await,
            Err("asked for authentication (request [0, 0, 0, 3])".to_owned())
        );
        assert_eq!(postgres_accepts(port).await, Ok(()));
        let startups = server.join().unwrap();
        assert_eq!(
            startups[0],
            b"\0\x03\0\0user\0gantry\0database\0postgres\0\0".to_vec()
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
