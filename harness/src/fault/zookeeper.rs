//! ZooKeeper session expiry (a case file's `expireSession: gateway`), the way a long stall (a
//! garbage-collection pause, a frozen VM) causes it: the gateway is paused (SIGSTOP) until
//! ZooKeeper itself expires its session, that is until the server's `cons` four-letter word no
//! longer lists the session the gateway reported in `/actuator/health` (`sync.session`). The
//! server then drops the session's watches and closes its connection; resumed, the gateway finds
//! its connection gone and its session expired, and must start a new session and read everything.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use crate::client::gateway::GatewayClient;
use crate::error::BackendError;

/// How long past the session's negotiated timeout ZooKeeper may take to expire it (it checks
/// once per tick, 2 s in the harness's `zoo.cfg`).
pub(crate) const EXPIRY_MARGIN: Duration = Duration::from_secs(10);

/// How often `cons` is asked while waiting.
const POLL: Duration = Duration::from_millis(100);

/// The ZooKeeper session the gateway at `url` uses now (`sync.session` of its health).
pub async fn gateway_session(url: &str) -> Result<String, BackendError> {
    let fail = |detail: String| BackendError::Io {
        what: format!("the gateway at {url}: GET /actuator/health"),
        source: std::io::Error::other(detail),
    };
    let (_, body) = GatewayClient::new(url)
        .health()
        .await
        .map_err(|e| fail(e.to_string()))?;
    let health: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| fail(format!("{e}: {body}")))?;
    health["sync"]["session"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| fail(format!("it reports no ZooKeeper session: {body}")))
}

/// Waits until ZooKeeper on loopback `port` no longer lists `session`: at most the session's
/// negotiated timeout (as `cons` reports it) plus `margin` (`EXPIRY_MARGIN` for a fault).
/// Returns how long it took.
pub async fn wait_expired(
    port: u16,
    session: &str,
    margin: Duration,
) -> Result<Duration, BackendError> {
    let started = Instant::now();
    let Some(timeout) = sessions(port)
        .await?
        .into_iter()
        .find_map(|s| (s.id == session).then_some(s.timeout))
    else {
        return Err(fail(
            port,
            format!("ZooKeeper lists no session {session}: the gateway's session is not there"),
        ));
    };
    let deadline = started + timeout + margin;
    loop {
        tokio::time::sleep(POLL).await;
        if !sessions(port).await?.iter().any(|s| s.id == session) {
            return Ok(started.elapsed());
        }
        if Instant::now() >= deadline {
            return Err(fail(
                port,
                format!(
                    "session {session} (timeout {timeout:?}) still listed after {:?}",
                    started.elapsed()
                ),
            ));
        }
    }
}

/// A session with a connection, as `cons` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Session {
    /// `0x…`.
    id: String,
    /// The negotiated session timeout.
    timeout: Duration,
}

/// The sessions ZooKeeper on loopback `port` lists connections of (`cons`).
async fn sessions(port: u16) -> Result<Vec<Session>, BackendError> {
    let answer = tokio::time::timeout(Duration::from_secs(2), four_letter_word(port, b"cons"))
        .await
        .map_err(|_| fail(port, "`cons` timed out".to_owned()))?
        .map_err(|e| fail(port, format!("`cons`: {e}")))?;
    if !answer.contains("queued=") {
        return Err(fail(
            port,
            format!("`cons` answered {answer:?} (is it in `4lw.commands.whitelist`?)"),
        ));
    }
    Ok(parse_cons(&answer))
}

async fn four_letter_word(port: u16, word: &[u8]) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream.write_all(word).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// The sessions of a `cons` answer: one line per connection,
/// ` /127.0.0.1:40000[1](queued=0,…,sid=0x1000…,lop=PING,est=…,to=10000,…)`; connections
/// without a session yet (the `cons` one itself) have no `sid`.
fn parse_cons(answer: &str) -> Vec<Session> {
    let field = |line: &str, name: &str| -> Option<String> {
        let start = line.find(&format!("{name}="))? + name.len() + 1;
        let rest = &line[start..];
        let end = rest.find([',', ')']).unwrap_or(rest.len());
        Some(rest[..end].to_owned())
    };
    answer
        .lines()
        .filter_map(|line| {
            let id = field(line, "sid")?;
            let timeout = field(line, ",to")?.parse().ok()?;
            Some(Session {
                id,
                timeout: Duration::from_millis(timeout),
            })
        })
        .collect()
}

fn fail(port: u16, detail: String) -> BackendError {
    BackendError::Io {
        what: format!("ZooKeeper on port {port}"),
        source: std::io::Error::other(detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cons_lists_the_sessions_of_connections_that_have_one() {
        let answer = " /127.0.0.1:41820[1](queued=0,recved=12,sent=12,sid=0x1000a3f2c7e0001,\
lop=PING,est=1764670000000,to=10000,lcxid=0x4,lzxid=0x1a,lresp=88,llat=0,minlat=0,avglat=0,maxlat=2)\n \
/127.0.0.1:41830[0](queued=0,recved=1,sent=0)\n\n";
        assert_eq!(
            parse_cons(answer),
            vec![Session {
                id: "0x1000a3f2c7e0001".to_owned(),
                timeout: Duration::from_secs(10),
            }]
        );
        assert!(parse_cons("").is_empty());
    }
}
