//! The simulated subscribers: websocket sessions and HTTP long polling, each on its own
//! connection, telling the bench when they synced, which changes they hold, or that they
//! were lost.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::sync::{Semaphore, mpsc};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// The selector name of change `k` is this plus `k`.
pub(crate) const MARKER: &str = "fanout-change-";
/// The groups a long-poll subscriber follows (the gateway's).
const GROUPS: [&str; 5] = ["PLUGIN", "SELECTOR", "RULE", "META_DATA", "APP_AUTH"];
/// What a long-poll subscriber sends for a group it holds nothing of.
const NO_MD5: &str = "00000000000000000000000000000000";

/// What a subscriber tells the bench.
#[derive(Debug)]
pub(super) enum Note {
    /// Connected and fully synced.
    Synced,
    /// Holds change `k`.
    Holds(u32, Instant),
    /// Its connection failed or closed.
    Lost(String),
}

/// The change numbers named in `text` (`fanout-change-<k>` followed by a non-digit).
pub(crate) fn markers(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(MARKER) {
        rest = &rest[i + MARKER.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(k) = digits.parse() {
            out.push(k);
        }
    }
    out
}

/// The listener form body for what a long-poll subscriber holds.
pub(crate) fn listener_form(held: &HashMap<String, (String, i64)>) -> String {
    GROUPS
        .iter()
        .map(|g| match held.get(*g) {
            Some((md5, t)) => format!("{g}={md5}%2C{t}"),
            None => format!("{g}={NO_MD5}%2C0"),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// A websocket subscriber: connects (holding a `gate` permit until synced), sends `MYSELF`,
/// reads the five full-sync frames, then reports every change it sees.
pub(super) async fn websocket_subscriber(
    addr: SocketAddr,
    sync_token: &str,
    gate: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Note>,
) {
    let permit = gate.acquire_owned().await;
    let request = format!("ws://{addr}/websocket")
        .into_client_request()
        .map_err(|e| e.to_string())
        .and_then(|mut request| {
            let token = sync_token.parse().map_err(|e| format!("sync token: {e}"))?;
            request.headers_mut().insert("X-Shenyu-Sync-Token", token);
            Ok(request)
        });
    let request = match request {
        Ok(request) => request,
        Err(e) => {
            let _ = tx.send(Note::Lost(format!("request: {e}")));
            return;
        }
    };
    let mut ws = match tokio_tungstenite::connect_async(request).await {
        Ok((ws, _)) => ws,
        Err(e) => {
            let _ = tx.send(Note::Lost(format!("connect: {e}")));
            return;
        }
    };
    if let Err(e) = ws.send(Message::text("MYSELF")).await {
        let _ = tx.send(Note::Lost(format!("send MYSELF: {e}")));
        return;
    }
    let mut permit = Some(permit);
    let mut groups = 0;
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => {
                if groups < GROUPS.len() {
                    groups += 1;
                    if groups == GROUPS.len() {
                        drop(permit.take());
                        let _ = tx.send(Note::Synced);
                    }
                    continue;
                }
                let at = Instant::now();
                for k in markers(text.as_str()) {
                    let _ = tx.send(Note::Holds(k, at));
                }
            }
            Some(Ok(Message::Close(frame))) => {
                let _ = tx.send(Note::Lost(format!("closed by the admin: {frame:?}")));
                return;
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                let _ = tx.send(Note::Lost(e.to_string()));
                return;
            }
            None => {
                let _ = tx.send(Note::Lost("connection ended".into()));
                return;
            }
        }
    }
}

/// One HTTP/1.1 keep-alive connection to the admin.
struct Http {
    addr: SocketAddr,
    token: Arc<str>,
    sender: SendRequest<Full<Bytes>>,
}

impl Http {
    async fn connect(addr: SocketAddr, token: Arc<str>) -> Result<Self, String> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Self {
            addr,
            token,
            sender,
        })
    }

    /// Sends a request; the body of a 200 answer.
    async fn call(
        &mut self,
        method: hyper::Method,
        path: &str,
        form: Option<String>,
    ) -> Result<Bytes, String> {
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, self.addr.to_string())
            .header("X-Access-Token", &*self.token);
        if form.is_some() {
            req = req.header(
                hyper::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            );
        }
        let req = req
            .body(Full::new(Bytes::from(form.unwrap_or_default())))
            .map_err(|e| e.to_string())?;
        let resp = tokio::time::timeout(Duration::from_secs(90), self.sender.send_request(req))
            .await
            .map_err(|_| format!("{path}: no answer in 90 s"))?
            .map_err(|e| format!("{path}: {e}"))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{path}: {e}"))?
            .to_bytes();
        if status != 200 {
            return Err(format!(
                "{path}: HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            ));
        }
        Ok(body)
    }

    /// Fetches `groups`; updates `held` and returns the raw answer.
    async fn fetch(
        &mut self,
        groups: &[String],
        held: &mut HashMap<String, (String, i64)>,
    ) -> Result<Bytes, String> {
        let query: Vec<String> = groups.iter().map(|g| format!("groupKeys={g}")).collect();
        let body = self
            .call(
                hyper::Method::GET,
                &format!("/configs/fetch?{}", query.join("&")),
                None,
            )
            .await?;
        let v: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| format!("fetch answer: {e}"))?;
        for g in groups {
            let group = &v["data"][g.as_str()];
            let md5 = group["md5"].as_str().unwrap_or_default().to_owned();
            let t = group["lastModifyTime"].as_i64().unwrap_or(0);
            held.insert(g.clone(), (md5, t));
        }
        Ok(body)
    }
}

/// A long-poll subscriber: fetch everything (holding a `gate` permit until then), then listen,
/// fetch what changed, report the changes it now holds, listen again.
pub(super) async fn long_poll_subscriber(
    addr: SocketAddr,
    token: Arc<str>,
    gate: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Note>,
) {
    let permit = gate.acquire_owned().await;
    let mut held = HashMap::new();
    let mut http = match Http::connect(addr, token).await {
        Ok(h) => h,
        Err(e) => {
            let _ = tx.send(Note::Lost(e));
            return;
        }
    };
    let all: Vec<String> = GROUPS.iter().map(|g| (*g).to_owned()).collect();
    if let Err(e) = http.fetch(&all, &mut held).await {
        let _ = tx.send(Note::Lost(e));
        return;
    }
    drop(permit);
    let _ = tx.send(Note::Synced);
    let mut seen = 0;
    loop {
        let answer = match http
            .call(
                hyper::Method::POST,
                "/configs/listener",
                Some(listener_form(&held)),
            )
            .await
        {
            Ok(a) => a,
            Err(e) => {
                let _ = tx.send(Note::Lost(e));
                return;
            }
        };
        let changed: Vec<String> = serde_json::from_slice::<serde_json::Value>(&answer)
            .ok()
            .and_then(|v| v["data"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|g| g.as_str().map(str::to_owned))
            .collect();
        if changed.is_empty() {
            continue;
        }
        match http.fetch(&changed, &mut held).await {
            Ok(body) => {
                let at = Instant::now();
                let mut ks = markers(&String::from_utf8_lossy(&body));
                ks.sort_unstable();
                for k in ks {
                    if k > seen {
                        seen = k;
                        let _ = tx.send(Note::Holds(k, at));
                    }
                }
            }
            Err(e) => {
                let _ = tx.send(Note::Lost(e));
                return;
            }
        }
    }
}
