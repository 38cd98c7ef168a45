//! The per-connection watchdog behind [`Timeouts`].
//!
//! A connection is in one of three phases, tracked in [`Activity`] with relaxed atomics (one
//! allocation per connection; per request an atomic add and subtract, two clock reads and two
//! moves of the connection's one timer, as hyper's own header timeout would do):
//!
//! ```text
//!  accept ──▶ head ──(head parsed: Busy::begin)──▶ busy ──(last response body ends)──▶ idle
//!              ▲                                                                      │
//!              └──────────────────(a byte of the next request arrives)◀───────────────┘
//! ```
//!
//! - head: the request head must be complete within `header_read` of the phase's start;
//! - busy (at least one request whose response body has not ended): no limit;
//! - idle: the next request must start within `idle`.
//!
//! [`Watched`] (the socket) notes the first byte read in the idle phase, [`Busy`] marks a
//! request from its head until its response body ([`Tracked`]) ends or is dropped, and
//! [`Watchdog`] completes when the current phase's deadline passes, saying which limit ran
//! out. The watchdog is polled in the connection's own task right after the connection (a
//! biased `select!`), so it sees every phase change the connection's poll made (a first byte,
//! a response end) without any wake-up from the request path. HTTP/2 streams run in their own
//! tasks: there the end of the last request is seen within `min(header_read, idle)`.
//!
//! An HTTP/1.1 upgrade (websocket) ends the connection future, and the watchdog with it. An
//! HTTP/2 extended CONNECT tunnel (websocket over h2c) does not keep its connection busy, so
//! the limits would cut it; gantry's websocket clients use HTTP/1.1.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use hyper::body::Frame;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use crate::Timeouts;

/// `head_since` when no byte of a next request has arrived.
const NO_HEAD: u64 = u64::MAX;

/// What a connection is doing, as seen by the watchdog.
#[derive(Debug)]
pub(crate) struct Activity {
    /// The accept; the times below are nanoseconds after it.
    accepted: Instant,
    /// Requests whose response body has not ended.
    in_flight: AtomicUsize,
    /// When the connection last became idle.
    idle_since: AtomicU64,
    /// When the head now being read started, or [`NO_HEAD`].
    head_since: AtomicU64,
}

impl Activity {
    /// A connection just accepted: its first head is being read.
    pub(crate) fn new() -> Activity {
        Activity {
            accepted: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            head_since: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.accepted.elapsed().as_nanos()).unwrap_or(NO_HEAD - 1)
    }

    fn at(&self, nanos: u64) -> Instant {
        self.accepted + std::time::Duration::from_nanos(nanos)
    }

    /// Bytes arrived: when idle, a new request head starts now.
    fn read(&self) {
        if self.in_flight.load(Ordering::Relaxed) == 0
            && self.head_since.load(Ordering::Relaxed) == NO_HEAD
        {
            self.head_since.store(self.now(), Ordering::Relaxed);
        }
    }

    /// The current phase's deadline and the limit it enforces; `None` while busy.
    fn deadline(&self, timeouts: Timeouts) -> Option<(Instant, Expired)> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        match self.head_since.load(Ordering::Relaxed) {
            NO_HEAD => {
                let since = self.at(self.idle_since.load(Ordering::Relaxed));
                Some((since + timeouts.idle, Expired::Idle))
            }
            head => Some((self.at(head) + timeouts.header_read, Expired::HeaderRead)),
        }
    }
}

/// Which limit closed a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expired {
    /// The request head did not arrive in time.
    HeaderRead,
    /// No next request on a kept-alive connection.
    Idle,
}

impl fmt::Display for Expired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expired::HeaderRead => "header read timeout",
            Expired::Idle => "idle timeout",
        })
    }
}

pin_project_lite::pin_project! {
    /// Completes when the connection has spent longer than its limit in the head or idle
    /// phase. Each poll re-reads the phase and moves its timer if the deadline changed; while
    /// busy it looks again every `min(header_read, idle)`.
    #[derive(Debug)]
    pub(crate) struct Watchdog<'a> {
        activity: &'a Activity,
        timeouts: Timeouts,
        #[pin]
        sleep: Sleep,
    }
}

impl<'a> Watchdog<'a> {
    pub(crate) fn new(activity: &'a Activity, timeouts: Timeouts) -> Watchdog<'a> {
        Watchdog {
            activity,
            timeouts,
            sleep: tokio::time::sleep_until(activity.accepted + timeouts.header_read),
        }
    }
}

impl Future for Watchdog<'_> {
    type Output = Expired;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Expired> {
        let mut this = self.project();
        loop {
            match this.activity.deadline(*this.timeouts) {
                Some((deadline, expired)) => {
                    if this.sleep.deadline() != deadline {
                        this.sleep.as_mut().reset(deadline);
                    }
                    return this.sleep.poll(cx).map(|()| expired);
                }
                None => {
                    if this.sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    let recheck = this.timeouts.header_read.min(this.timeouts.idle);
                    this.sleep.as_mut().reset(Instant::now() + recheck);
                }
            }
        }
    }
}

/// A request from its parsed head until its response body ends (or is dropped).
#[derive(Debug)]
pub(crate) struct Busy(Arc<Activity>);

impl Busy {
    /// Marks a request as begun: the connection is busy.
    pub(crate) fn begin(activity: Arc<Activity>) -> Busy {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let activity = &self.0;
        // Set before the count drops to 0, so the watchdog never sees an idle phase that
        // started at the previous idle time.
        activity.head_since.store(NO_HEAD, Ordering::Relaxed);
        activity.idle_since.store(activity.now(), Ordering::Relaxed);
        activity.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body holding its request's [`Busy`] mark until the last frame.
#[derive(Debug)]
pub(crate) struct Tracked {
    body: Body,
    busy: Option<Busy>,
}

impl Tracked {
    pub(crate) fn new(body: Body, busy: Option<Busy>) -> Tracked {
        Tracked { body, busy }
    }
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.busy = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// The client socket, noting reads for the watchdog.
#[derive(Debug)]
pub(crate) struct Watched<T> {
    io: T,
    activity: Arc<Activity>,
}

impl<T> Watched<T> {
    pub(crate) fn new(io: T, activity: Arc<Activity>) -> Watched<T> {
        Watched { io, activity }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
