//! The proxied response body: it keeps the upstream's lease and the plugins' guards while the
//! upstream's body streams through, and finishes the guards ([`Hold::finish`]) before the last
//! byte goes out. A client that sends its next request after a response has ended therefore
//! finds what the response held released (a concurrency slot free again), with no race
//! between the release and the client. A body that fails or is dropped early drops its guards
//! unfinished (their `Drop` releases them).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes};
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, join_all};
use hyper::body::{Body, Frame, SizeHint};

use crate::balance::Lease;
use crate::plugin::Guard;

/// The upstream's body `B`, with what the request holds until it has been sent.
pub(crate) struct Finishing<B> {
    /// The upstream's body.
    inner: B,
    /// The upstream, counted as busy until the body is done.
    lease: Option<Lease>,
    /// The plugins' guards, until finished.
    guards: Vec<Guard>,
    /// Where the body stands.
    state: State,
}

/// Where a [`Finishing`] body stands.
enum State {
    /// Passing the upstream's frames on.
    Streaming,
    /// The upstream's body has ended; its last frame waits for the guards to finish.
    Finishing {
        /// The guards' finishes, all at once.
        finishes: BoxFuture<'static, ()>,
        /// The upstream's last frame, sent after them (none when the end came without one).
        last: Option<Frame<Bytes>>,
    },
    /// Everything sent.
    Done,
}

impl<B> Finishing<B> {
    /// `inner`, holding `lease` and `guards` until it has been sent.
    pub(crate) fn new(inner: B, lease: Lease, guards: Vec<Guard>) -> Self {
        Finishing {
            inner,
            lease: Some(lease),
            guards,
            state: State::Streaming,
        }
    }

    /// The upstream's body has ended with `last`: the guards finish before it is sent.
    fn finish(&mut self, last: Option<Frame<Bytes>>) -> Option<Frame<Bytes>> {
        self.lease = None;
        if self.guards.is_empty() {
            self.state = State::Done;
            return last;
        }
        let finishes = join_all(self.guards.drain(..).map(|guard| guard.finish()));
        self.state = State::Finishing {
            finishes: Box::pin(finishes.map(drop)),
            last,
        };
        None
    }
}

impl<B> Body for Finishing<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Done => return Poll::Ready(None),
                State::Finishing { finishes, last } => {
                    ready!(finishes.as_mut().poll(cx));
                    let last = last.take();
                    this.state = State::Done;
                    return Poll::Ready(last.map(Ok));
                }
                State::Streaming => {}
            }
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) if this.inner.is_end_stream() => {
                    if let Some(last) = this.finish(Some(frame)) {
                        return Poll::Ready(Some(Ok(last)));
                    }
                }
                Some(Ok(frame)) => return Poll::Ready(Some(Ok(frame))),
                Some(Err(e)) => {
                    // Dropped unfinished: their `Drop` releases them.
                    this.guards.clear();
                    this.lease = None;
                    this.state = State::Done;
                    return Poll::Ready(Some(Err(e)));
                }
                None => {
                    if let Some(last) = this.finish(None) {
                        return Poll::Ready(Some(Ok(last)));
                    }
                    if matches!(this.state, State::Done) {
                        return Poll::Ready(None);
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.state {
            State::Done => true,
            State::Finishing { .. } => false,
            State::Streaming => self.guards.is_empty() && self.inner.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.state {
            State::Streaming => self.inner.size_hint(),
            State::Finishing { last, .. } => SizeHint::with_exact(
                last.as_ref()
                    .and_then(Frame::data_ref)
                    .map_or(0, |data| data.remaining() as u64),
            ),
            State::Done => SizeHint::with_exact(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use futures_util::stream;
    use http_body_util::{BodyExt, Full, StreamBody};
    use model::lock::MutexExt;
    use tokio::sync::oneshot;

    use super::*;
    use crate::balance::Pool;
    use crate::balance::test_support::up;
    use crate::plugin::Hold;

    /// A guard whose finish waits until its gate opens, then marks itself finished.
    #[derive(Debug)]
    struct Gated {
        gate: std::sync::Mutex<Option<oneshot::Receiver<()>>>,
        finished: Arc<AtomicBool>,
    }

    impl Hold for Gated {
        fn finish(self: Box<Self>) -> BoxFuture<'static, ()> {
            let gate = self.gate.locked().take().unwrap();
            Box::pin(async move {
                gate.await.unwrap();
                self.finished.store(true, Ordering::SeqCst);
            })
        }
    }

    fn gated() -> (Guard, oneshot::Sender<()>, Arc<AtomicBool>) {
        let (open, gate) = oneshot::channel();
        let finished = Arc::new(AtomicBool::new(false));
        let guard = Box::new(Gated {
            gate: std::sync::Mutex::new(Some(gate)),
            finished: Arc::clone(&finished),
        });
        (guard, open, finished)
    }

    fn lease() -> Lease {
        Arc::new(Pool::new(vec![up("a:1", 1)])).lease(0, 0)
    }

    /// Polls `body` once: a frame's data, `None` at the end, or `Pending`.
    fn poll_once<B: Body<Data = Bytes> + Unpin>(body: &mut B) -> Poll<Option<Bytes>>
    where
        B::Error: std::fmt::Debug,
    {
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        Pin::new(body)
            .poll_frame(&mut cx)
            .map(|f| f.map(|f| f.unwrap().into_data().unwrap()))
    }

    #[test]
    fn the_last_byte_of_a_sized_body_waits_for_the_guards() {
        let (guard, open, finished) = gated();
        let mut body = Finishing::new(Full::new(Bytes::from("abc")), lease(), vec![guard]);
        assert!(!body.is_end_stream());
        assert!(
            poll_once(&mut body).is_pending(),
            "sent before the guard finished"
        );
        open.send(()).unwrap();
        assert_eq!(poll_once(&mut body), Poll::Ready(Some(Bytes::from("abc"))));
        assert!(finished.load(Ordering::SeqCst));
        assert!(body.is_end_stream());
        assert_eq!(poll_once(&mut body), Poll::Ready(None));
    }

    #[test]
    fn a_streamed_body_ends_after_the_guards() {
        let (guard, open, finished) = gated();
        let frames = stream::iter(
            ["a", "b"].map(|s| Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(s)))),
        );
        let mut body = Finishing::new(StreamBody::new(frames), lease(), vec![guard]);
        assert_eq!(poll_once(&mut body), Poll::Ready(Some(Bytes::from("a"))));
        assert_eq!(poll_once(&mut body), Poll::Ready(Some(Bytes::from("b"))));
        assert!(
            poll_once(&mut body).is_pending(),
            "ended before the guard finished"
        );
        assert!(!body.is_end_stream());
        open.send(()).unwrap();
        assert_eq!(poll_once(&mut body), Poll::Ready(None));
        assert!(finished.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn without_guards_it_is_the_upstreams_body() {
        let body = Finishing::new(Full::new(Bytes::from("abc")), lease(), Vec::new());
        assert_eq!(body.size_hint().exact(), Some(3));
        assert_eq!(body.collect().await.unwrap().to_bytes(), "abc");
    }

    #[test]
    fn a_body_dropped_early_leaves_its_guards_unfinished() {
        let (guard, _open, finished) = gated();
        let pool = Arc::new(Pool::new(vec![up("a:1", 1)]));
        let body = Finishing::new(Full::new(Bytes::from("abc")), pool.lease(0, 0), vec![guard]);
        drop(body);
        assert!(!finished.load(Ordering::SeqCst));
        assert_eq!(Arc::strong_count(&pool), 1, "the lease ends with the body");
    }
}
