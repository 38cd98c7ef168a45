//! gantry's HTTP accept loop, shared by the admin and the gateway.
//!
//! Entry point: [`serve`] runs an axum [`Router`] on a bound listener until a shutdown future
//! completes, then drains its connections. It replaces `axum::serve`, which has no way to bound
//! how long a client may take to send a request head or keep an idle connection open, so a
//! slow-header client could hold a connection (and its task and socket) forever.
//!
//! Per connection: TCP_NODELAY, hyper-util's auto (HTTP/1.1 and h2c) connection with upgrades
//! (websockets), the peer address as axum's [`ConnectInfo`], hyper-util's
//! [`GracefulShutdown`], and a watchdog enforcing the [`Timeouts`] (module `watchdog`). hyper's
//! own `header_read_timeout` is not used: in hyper 1.12 its clock also runs while a kept-alive
//! connection waits for its next request, so it cannot give a header limit shorter than the
//! idle limit. [`shutdown_signal`] is the binaries' shutdown future. [`body_read_deadline`]
//! (opt-in, module `body_deadline`) bounds how long a request body may take to arrive.

mod body_deadline;
pub mod net;
mod signal;
mod watchdog;

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tower::ServiceExt;
use tower::util::Oneshot;

pub use body_deadline::body_read_deadline;
pub use net::{Connect, Listener, Tokio};
pub use signal::shutdown_signal;

use crate::watchdog::{Activity, Busy, Tracked, Watchdog, Watched};

/// How long a client may keep a connection without making progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// The most time a client may take to send a whole request head: counted from the accept
    /// for a connection's first request, from the first byte of the next one on a kept-alive
    /// connection. When it runs out the connection is closed without an answer.
    pub header_read: Duration,
    /// How long a kept-alive connection may wait for its next request: from the end of the
    /// previous response to the first byte of the next request. A request in progress (a long
    /// poll, a slow upstream, a streamed body) is never idle.
    pub idle: Duration,
}

impl Timeouts {
    /// hyper's own default header timeout, half nginx's `client_header_timeout`: a client
    /// that needs more than 30 s to send a few kilobytes of headers is broken or hostile.
    pub const DEFAULT_HEADER_READ: Duration = Duration::from_secs(30);
    /// nginx's default `keepalive_timeout` (the gateway's benchmark baseline): long enough
    /// for a client's pooled connection to be reused between bursts, short enough that idle
    /// sockets do not pile up.
    pub const DEFAULT_IDLE: Duration = Duration::from_secs(75);
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            header_read: Self::DEFAULT_HEADER_READ,
            idle: Self::DEFAULT_IDLE,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes: then stops accepting, asks every
/// connection to finish its request in progress and close, and returns once all have.
/// Handlers can extract `ConnectInfo<SocketAddr>` (the client's address).
pub async fn serve<L: Listener>(
    listener: L,
    router: Router,
    timeouts: Timeouts,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // The watchdog times head reads (see the crate docs).
    builder.http1().header_read_timeout(None);
    // The CONNECT protocol carries websockets over HTTP/2 (as axum::serve enables it).
    builder.http2().enable_connect_protocol();
    let builder = Arc::new(builder);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = ConnService {
            router: router.clone(),
            peer,
            activity: Arc::new(Activity::new()),
        };
        let watcher = graceful.watcher();
        let builder = Arc::clone(&builder);
        tokio::spawn(async move {
            let activity = Arc::clone(&service.activity);
            let io = TokioIo::new(Watched::new(tcp, Arc::clone(&activity)));
            let conn = watcher.watch(builder.serve_connection_with_upgrades(io, service));
            // Biased: the watchdog is polled after the connection, so it sees the phase
            // changes this poll of the connection made.
            tokio::select! {
                biased;
                served = conn => {
                    if let Err(e) = served {
                        tracing::trace!(%peer, error = %e, "connection ended with an error");
                    }
                }
                expired = Watchdog::new(&activity, timeouts) => {
                    tracing::debug!(%peer, "closing the connection: {expired}");
                }
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// As axum::serve (after hyper 0.14's server): a failure of one connection is skipped; any
/// other accept error (such as EMFILE) is logged and accepting pauses for a second, when
/// connections may have closed.
async fn accept_failed(e: io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accept failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// One connection's service: the router, with the peer address and the watchdog's request
/// accounting.
#[derive(Debug, Clone)]
struct ConnService {
    router: Router,
    peer: SocketAddr,
    activity: Arc<Activity>,
}

impl hyper::service::Service<http::Request<Incoming>> for ConnService {
    type Response = Response<Tracked>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn call(&self, req: http::Request<Incoming>) -> Self::Future {
        let busy = Busy::begin(Arc::clone(&self.activity));
        let mut req = req.map(Body::new);
        req.extensions_mut().insert(ConnectInfo(self.peer));
        ResponseFuture {
            inner: self.router.clone().oneshot(req),
            busy: Some(busy),
        }
    }
}

pin_project_lite::pin_project! {
    /// The router's answer, its body carrying the request's [`Busy`] mark until it ends.
    struct ResponseFuture {
        #[pin]
        inner: Oneshot<Router, http::Request<Body>>,
        busy: Option<Busy>,
    }
}

impl Future for ResponseFuture {
    type Output = Result<Response<Tracked>, Infallible>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.project();
        let response = std::task::ready!(this.inner.poll(cx)).unwrap_or_else(|e| match e {});
        let busy = this.busy.take();
        std::task::Poll::Ready(Ok(response.map(|body| Tracked::new(body, busy))))
    }
}
