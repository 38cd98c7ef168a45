//! Websocket subscriber (ShenYu `ShenyuWebsocketClient`): connect to `ws://<admin>/websocket`,
//! send `MYSELF`, apply every text frame, ping every third of the silence bound
//! (`--sync-silence-ms`, 10 s by default; ShenYu pings every 10 s and never checks the pong).
//! A session that receives no frame at all (pong, event, ping) for the silence bound is a
//! silent partition: it ends, the subscriber reports itself disconnected and reconnects. On
//! failure or close it reconnects with exponential backoff (100 ms doubling to 5 s,
//! jittered) and sends `MYSELF` again; the admin's full sync replaces each group in one swap,
//! so routes never vanish in between. Several admin URLs: the next one is tried after a
//! failure.
//!
//! A new session holds the increments that arrive before the admin's answer to its `MYSELF`
//! (the full sync) and drops them when it comes, since the full sync holds them: applied to
//! the config of before the reconnect, they would make a mixture no admin ever committed
//! (ShenYu applies them; `gantry sim` found the mixture). When no full sync comes within the
//! silence bound, the held increments are applied in order, as ShenYu would.
//!
//! With [`SyncStyle::Full`] (`--sync-style full`, the conformance matrix's incremental-off
//! axis) an increment is only a signal: the session sends `MYSELF` again and waits for the
//! full sync as a new session does (the admin answers at most one `MYSELF` per full-sync
//! interval, so a burst of changes costs one resync per interval).
//!
//! With a sync token (`--sync-token`), every upgrade carries it as `X-Shenyu-Sync-Token`; an
//! admin that refuses the upgrade with HTTP 401 is reported as
//! [`SyncError::SyncTokenRefused`], naming the flag, at every attempt.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use futures_util::{SinkExt, StreamExt};
use http::{HeaderName, HeaderValue, StatusCode};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use model::{DataEvent, SyncStyle};
use netserve::Connect;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::{ProtocolError, UrlError};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::{self, Message};

use super::{Backoff, Subscriber, SyncError, SyncState, back_off};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The websocket upgrade of `request` (a tungstenite client request, with its key) on
/// `stream` by hyper's HTTP/1 client: the session on the upgraded connection once the admin
/// answered 101 with the key's accept value; another answer is [`tungstenite::Error::Http`]
/// (its status, no body), a wrong accept value a protocol error.
async fn upgrade<Io>(
    request: tungstenite::handshake::client::Request,
    stream: Io,
    config: Option<tungstenite::protocol::WebSocketConfig>,
) -> Result<tokio_tungstenite::WebSocketStream<TokioIo<Upgraded>>, tungstenite::Error>
where
    Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let hyper_error = |e: hyper::Error| tungstenite::Error::Io(std::io::Error::other(e));
    let accept = request
        .headers()
        .get(http::header::SEC_WEBSOCKET_KEY)
        .map(|key| derive_accept_key(key.as_bytes()))
        .ok_or(tungstenite::Error::Protocol(
            ProtocolError::MissingSecWebSocketKey,
        ))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(hyper_error)?;
    // Driven on its own until it hands the connection over to the upgrade (or the request
    // failed and `sender` is dropped); its errors reach `send_request` and `upgrade::on`.
    tokio::spawn(async move {
        let _ = connection.with_upgrades().await;
    });
    let mut request = request.map(|()| http_body_util::Empty::<bytes::Bytes>::new());
    // hyper writes the target as given: origin form (`/websocket`), as a browser sends it
    // (the Host header is the request's own).
    let target = request
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    *request.uri_mut() = target
        .parse()
        .map_err(|e: http::uri::InvalidUri| tungstenite::Error::HttpFormat(e.into()))?;
    let response = sender.send_request(request).await.map_err(hyper_error)?;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        let (parts, _) = response.into_parts();
        return Err(tungstenite::Error::Http(Box::new(
            http::Response::from_parts(parts, None),
        )));
    }
    if response
        .headers()
        .get(http::header::SEC_WEBSOCKET_ACCEPT)
        .is_none_or(|got| got.as_bytes() != accept.as_bytes())
    {
        return Err(tungstenite::Error::Protocol(
            ProtocolError::SecWebSocketAcceptKeyMismatch,
        ));
    }
    let upgraded = hyper::upgrade::on(response).await.map_err(hyper_error)?;
    Ok(tokio_tungstenite::WebSocketStream::from_raw_socket(
        TokioIo::new(upgraded),
        tungstenite::protocol::Role::Client,
        config,
    )
    .await)
}

/// The header carrying ShenYu's websocket sync token.
static SYNC_TOKEN_HEADER: HeaderName = HeaderName::from_static("x-shenyu-sync-token");

/// The websocket subscriber, connecting through `C` (the real network, or the simulator's).
#[derive(Debug)]
pub(crate) struct WebsocketSubscriber<C> {
    net: C,
    urls: Vec<String>,
    /// `X-Shenyu-Sync-Token`, marked sensitive (its `Debug` is redacted).
    sync_token: Option<HeaderValue>,
    /// No frame for this long ends a session.
    silence: Duration,
    /// [`SyncStyle::Full`]: an increment asks for `MYSELF` and is dropped for the full sync.
    style: SyncStyle,
}

impl<C: Connect> WebsocketSubscriber<C> {
    /// A subscriber for admin base URLs (`http://host:port`), at least one, sending
    /// `sync_token` on every upgrade when given, and ending a session silent for `silence`.
    pub(crate) fn new(
        net: C,
        admin_urls: &[String],
        sync_token: Option<&str>,
        silence: Duration,
        style: SyncStyle,
    ) -> anyhow::Result<WebsocketSubscriber<C>> {
        let sync_token = sync_token
            .map(|token| {
                let mut value = HeaderValue::from_str(token)
                    .context("--sync-token is not a valid header value")?;
                value.set_sensitive(true);
                anyhow::Ok(value)
            })
            .transpose()?;
        Ok(WebsocketSubscriber {
            net,
            urls: admin_urls.iter().map(|u| websocket_url(u)).collect(),
            sync_token,
            silence,
            style,
        })
    }

    /// The upgrade request for `url`, with the sync token when one is set.
    fn request(&self, url: &str) -> Result<tungstenite::handshake::client::Request, SyncError> {
        let mut request = url
            .into_client_request()
            .map_err(|source| SyncError::Connection {
                url: url.to_owned(),
                source,
            })?;
        if let Some(token) = &self.sync_token {
            request
                .headers_mut()
                .insert(SYNC_TOKEN_HEADER.clone(), token.clone());
        }
        Ok(request)
    }

    /// Opens a connection through `net` and makes the websocket handshake on it (`ws://`
    /// only: this build has no TLS, as `connect_async` without a TLS feature had none), the
    /// session read within `config`'s limits (`None`: tungstenite's defaults).
    ///
    /// The upgrade is hyper's HTTP/1 client, not tungstenite's handshake: tungstenite takes
    /// an answer read in more than 64 pieces averaging under 128 bytes for an attack and
    /// drops it, so a link that delivers a few bytes at a time (a slow or sliced link, `gantry
    /// run --run-mode slice`) could never connect. Only the session is tungstenite's.
    async fn handshake(
        &self,
        request: tungstenite::handshake::client::Request,
        config: Option<tungstenite::protocol::WebSocketConfig>,
    ) -> Result<tokio_tungstenite::WebSocketStream<TokioIo<Upgraded>>, tungstenite::Error> {
        let uri = request.uri();
        if uri.scheme_str() != Some("ws") {
            return Err(tungstenite::Error::Url(UrlError::TlsFeatureNotEnabled));
        }
        let host = uri
            .host()
            .ok_or(tungstenite::Error::Url(UrlError::NoHostName))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(80);
        let stream = self.net.connect(&host, port).await?;
        upgrade(request, stream, config).await
    }

    /// One connection. The outer error: the connection could not be opened; the inner
    /// result: how an opened connection ended.
    async fn session(
        &self,
        url: &str,
        state: &SyncState,
    ) -> Result<Result<(), SyncError>, SyncError> {
        let conn_err = |source| SyncError::Connection {
            url: url.to_owned(),
            source,
        };
        let request = self.request(url)?;
        let handshake = self.handshake(request, state.websocket_config());
        let ws = tokio::time::timeout(CONNECT_TIMEOUT, handshake)
            .await
            .map_err(|_| SyncError::ConnectTimeout {
                url: url.to_owned(),
            })?
            .map_err(|e| match e {
                tungstenite::Error::Http(response)
                    if response.status() == StatusCode::UNAUTHORIZED =>
                {
                    SyncError::SyncTokenRefused {
                        url: url.to_owned(),
                        token_sent: self.sync_token.is_some(),
                    }
                }
                other => conn_err(other),
            })?;
        let (mut tx, mut rx) = ws.split();
        tx.send(Message::text("MYSELF")).await.map_err(conn_err)?;
        let connected = state.connected();
        tracing::info!(%url, "websocket sync connected; sent MYSELF");
        // Sync confirmations (`confirm.rs`): the config served now, then after each change.
        let mut applied = state.applied();
        if let Some(confirmation) = state.confirmation() {
            let frame = Message::text(confirmation.to_websocket_text());
            tx.send(frame).await.map_err(conn_err)?;
        }
        let ping_every = self.silence / 3;
        let mut ping =
            tokio::time::interval_at(tokio::time::Instant::now() + ping_every, ping_every);
        let quiet = tokio::time::sleep(self.silence);
        tokio::pin!(quiet);
        let silent = || SyncError::Silent {
            url: url.to_owned(),
            after: self.silence,
        };
        let mut resync = Resync::new(tokio::time::Instant::now() + self.silence);
        let result = loop {
            // Biased, so that a seed of `gantry sim` replays the same choice when several
            // branches are ready: frames first (one ready with the silence bound still
            // counts), then the ping, then silence.
            tokio::select! {
                biased;
                frame = rx.next() => {
                    quiet.as_mut().reset(tokio::time::Instant::now() + self.silence);
                    match frame {
                        None => break Ok(()),
                        Some(Err(e)) => break Err(conn_err(e)),
                        Some(Ok(Message::Text(text))) => {
                            match state.read_text(&text) {
                                Ok(Some(event)) => {
                                    if self.style == SyncStyle::Full && !event.event_type.is_full() && !resync.waiting() {
                                        // The increment is only a signal: the full sync it
                                        // asks for holds it, and drops it when it comes.
                                        if let Err(e) = tx.send(Message::text("MYSELF")).await {
                                            break Err(conn_err(e));
                                        }
                                        resync.wait_again(tokio::time::Instant::now() + self.silence);
                                    }
                                    resync.take(event, state);
                                }
                                Ok(None) => tracing::debug!("sync frame ignored"),
                                Err(e) => tracing::warn!(error = %e, frame = %truncate(&text), "rejected sync frame"),
                            }
                        }
                        Some(Ok(Message::Close(_))) => break Ok(()),
                        Some(Ok(_)) => {}
                    }
                },
                Ok(()) = applied.changed(), if state.confirming() => {
                    if let Some(confirmation) = state.confirmation()
                        && let Err(e) = tx.send(Message::text(confirmation.to_websocket_text())).await
                    {
                        break Err(conn_err(e));
                    }
                }
                () = tokio::time::sleep_until(resync.deadline), if resync.waiting() => {
                    resync.give_up(state);
                }
                _ = ping.tick() => {
                    // A send stuck on a full buffer counts against the same bound.
                    let sent = tokio::time::timeout_at(quiet.deadline(), tx.send(Message::Ping(Default::default())));
                    match sent.await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => break Err(conn_err(e)),
                        Err(_) => break Err(silent()),
                    }
                }
                () = &mut quiet => break Err(silent()),
            }
        };
        drop(connected);
        Ok(result)
    }
}

impl<C: Connect> Subscriber for WebsocketSubscriber<C> {
    async fn run(mut self, state: Arc<SyncState>) {
        self.silence = state.keepalive_silence(self.silence);
        let mut backoff = Backoff::new();
        let mut index = 0;
        loop {
            let url = &self.urls[index % self.urls.len()];
            match self.session(url, &state).await {
                Ok(ended) => {
                    match ended {
                        Ok(()) => tracing::warn!(%url, "websocket sync closed; reconnecting"),
                        Err(e) => tracing::warn!(error = %e, "websocket sync broke; reconnecting"),
                    }
                    backoff.reset();
                }
                Err(e @ SyncError::SyncTokenRefused { .. }) => {
                    // A configuration error: retrying only helps once someone fixes a token.
                    tracing::error!(error = %e, "websocket sync refused; trying again");
                    index += 1;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "websocket sync failed; trying again");
                    index += 1;
                }
            }
            back_off(&mut backoff).await;
        }
    }
}

/// A session's wait for its first full sync (see the module docs).
#[derive(Debug)]
struct Resync {
    /// The increments received so far, until the first full sync (`None` after it).
    held: Option<Vec<DataEvent>>,
    /// When to stop waiting and apply them.
    deadline: tokio::time::Instant,
}

impl Resync {
    fn new(deadline: tokio::time::Instant) -> Resync {
        Resync {
            held: Some(Vec::new()),
            deadline,
        }
    }

    /// Waits for another full sync ([`SyncStyle::Full`] asked for one), until `deadline`.
    fn wait_again(&mut self, deadline: tokio::time::Instant) {
        self.held = Some(Vec::new());
        self.deadline = deadline;
    }

    /// Whether the session still waits for its full sync.
    fn waiting(&self) -> bool {
        self.held.is_some()
    }

    /// Applies `event` to `state`, or holds it while the session waits for its full sync;
    /// the first full event drops what is held.
    fn take(&mut self, event: DataEvent, state: &SyncState) {
        let full = event.event_type.is_full();
        match &mut self.held {
            Some(held) if !full => {
                held.push(event);
                return;
            }
            Some(held) => {
                if !held.is_empty() {
                    tracing::debug!(
                        dropped = held.len(),
                        "increments before the full sync dropped: it holds them"
                    );
                }
                self.held = None;
            }
            None => {}
        }
        state.apply(event);
    }

    /// No full sync came in time: applies what is held, in order, and waits no more.
    fn give_up(&mut self, state: &SyncState) {
        for event in self.held.take().unwrap_or_default() {
            state.apply(event);
        }
    }
}

/// `http://host:port[/]` → `ws://host:port/websocket` (`https` → `wss`).
pub(crate) fn websocket_url(admin: &str) -> String {
    let admin = admin.trim().trim_end_matches('/');
    let rest = if let Some(rest) = admin.strip_prefix("http://") {
        format!("ws://{rest}")
    } else if let Some(rest) = admin.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if admin.contains("://") {
        admin.to_owned()
    } else {
        format!("ws://{admin}")
    };
    if rest.ends_with("/websocket") {
        rest
    } else {
        format!("{rest}/websocket")
    }
}

fn truncate(text: &str) -> &str {
    match text.char_indices().nth(200) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use model::SyncMode;

    use super::*;
    use crate::plugin::Registry;

    /// A selector frame of `event_type` carrying selector `id`.
    fn selector(event_type: &str, id: &str) -> DataEvent {
        let text = format!(
            r#"{{"groupType":"SELECTOR","eventType":"{event_type}","data":[{{"id":"{id}","pluginName":"divide","sort":1,"enabled":true}}]}}"#
        );
        DataEvent::from_websocket_text(&text).unwrap().unwrap()
    }

    fn selectors(state: &SyncState) -> Vec<String> {
        let set = state.snapshot().data.config_set();
        let mut ids: Vec<String> = set.selectors.into_iter().map(|s| s.id).collect();
        ids.sort();
        ids
    }

    fn resync() -> Resync {
        Resync::new(tokio::time::Instant::now() + Duration::from_secs(10))
    }

    #[tokio::test]
    async fn increments_before_the_full_sync_are_held_and_dropped_when_it_comes() {
        let state = SyncState::new(SyncMode::Websocket, Registry::standard());
        let mut resync = resync();
        // An increment the full sync below already holds (it came first on the new session).
        resync.take(selector("UPDATE", "early"), &state);
        assert!(selectors(&state).is_empty(), "held, not applied");
        resync.take(selector("MYSELF", "full"), &state);
        assert_eq!(
            selectors(&state),
            ["full"],
            "the full sync replaced the group"
        );
        assert!(!resync.waiting());
        resync.take(selector("UPDATE", "later"), &state);
        assert_eq!(
            selectors(&state),
            ["full", "later"],
            "after it, increments apply at once"
        );
    }

    #[tokio::test]
    async fn without_a_full_sync_the_held_increments_apply_in_order() {
        let state = SyncState::new(SyncMode::Websocket, Registry::standard());
        let mut resync = resync();
        resync.take(selector("UPDATE", "a"), &state);
        resync.take(selector("DELETE", "a"), &state);
        resync.take(selector("UPDATE", "b"), &state);
        assert!(selectors(&state).is_empty());
        resync.give_up(&state);
        assert_eq!(selectors(&state), ["b"]);
        assert!(!resync.waiting());
    }

    #[test]
    fn admin_urls_become_websocket_urls() {
        assert_eq!(
            websocket_url("http://127.0.0.1:9095"),
            "ws://127.0.0.1:9095/websocket"
        );
        assert_eq!(websocket_url("https://a:1/"), "wss://a:1/websocket");
        assert_eq!(websocket_url("ws://a:1/websocket"), "ws://a:1/websocket");
        assert_eq!(websocket_url("a:1"), "ws://a:1/websocket");
    }
}
