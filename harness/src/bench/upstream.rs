//! The proxy bench's upstream: minimal HTTP/1.1 keep-alive servers (hyper) on loopback, on a
//! runtime of their own (one worker thread), one listener per target so each target's
//! connections and requests are counted apart.
//!
//! Every answer is `200`, `content-type: text/plain`, `content-length: 128` and 128 bytes. Two
//! kinds ([`UpstreamKind`]), chosen per request by the [`KIND_HEADER`] header (nginx and the
//! gateway forward it):
//!
//! - `whole`: head and body in one write.
//! - `split`: the head is flushed first and the body follows in a second write (the body's
//!   first poll is pending, so hyper flushes the head before it has the body), like an upstream
//!   that flushes its headers early. A proxy that writes them on to its client in two pieces
//!   without `TCP_NODELAY` waits for the client's delayed ACK (~40 ms) before the second.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{Either, Full, StreamBody};
use hyper::body::Frame;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::watch;

/// The request header that picks the answer's kind (`split`; anything else is `whole`).
pub(crate) const KIND_HEADER: &str = "x-bench-upstream";
/// The answer body.
pub(crate) const BODY: &[u8; 128] =
    b"gantry bench upstream: 128 bytes of body, the same for every request and every target, \
so that only the path differs............";

/// How the upstream writes its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum UpstreamKind {
    /// Head and body in one write.
    Whole,
    /// Head, then body, in two writes.
    Split,
}

impl UpstreamKind {
    /// `whole` or `split`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            UpstreamKind::Whole => "whole",
            UpstreamKind::Split => "split",
        }
    }
}

/// What one listener saw.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Requests answered.
    pub requests: AtomicU64,
}

impl Counters {
    /// (connections, requests) so far.
    pub(crate) fn read(&self) -> (u64, u64) {
        (
            self.connections.load(Ordering::Relaxed),
            self.requests.load(Ordering::Relaxed),
        )
    }
}

/// Running upstream listeners; stopped (and their thread joined) on drop.
#[derive(Debug)]
pub(crate) struct Upstreams {
    listeners: Vec<(SocketAddr, Arc<Counters>)>,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Upstreams {
    /// Starts `n` listeners on `127.0.0.1:0`; `nodelay` sets TCP_NODELAY on accepted
    /// connections (off only to show what a missing one costs).
    pub(crate) fn start(n: usize, nodelay: bool) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("bench-upstream")
            .enable_all()
            .build()?;
        let mut std_listeners = Vec::new();
        for _ in 0..n {
            let l = std::net::TcpListener::bind("127.0.0.1:0")?;
            l.set_nonblocking(true)?;
            std_listeners.push(l);
        }
        let listeners: Vec<(SocketAddr, Arc<Counters>)> = std_listeners
            .iter()
            .map(|l| Ok((l.local_addr()?, Arc::new(Counters::default()))))
            .collect::<std::io::Result<_>>()?;
        let (stop, stopped) = watch::channel(false);
        let counters: Vec<Arc<Counters>> = listeners.iter().map(|(_, c)| Arc::clone(c)).collect();
        let thread = std::thread::Builder::new()
            .name("bench-upstream".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let mut tasks = Vec::new();
                    for (l, c) in std_listeners.into_iter().zip(counters) {
                        let l = match tokio::net::TcpListener::from_std(l) {
                            Ok(l) => l,
                            Err(e) => {
                                tracing::error!("bench upstream: {e}");
                                continue;
                            }
                        };
                        tasks.push(tokio::spawn(accept_loop(l, c, nodelay, stopped.clone())));
                    }
                    let mut stopped = stopped;
                    let _ = stopped.wait_for(|s| *s).await;
                    for t in tasks {
                        t.abort();
                    }
                });
                runtime.shutdown_background();
            })?;
        Ok(Self {
            listeners,
            stop,
            thread: Some(thread),
        })
    }

    /// Listener `i`'s address.
    pub(crate) fn addr(&self, i: usize) -> SocketAddr {
        self.listeners[i].0
    }

    /// Listener `i`'s counters.
    pub(crate) fn counters(&self, i: usize) -> &Counters {
        &self.listeners[i].1
    }
}

impl Drop for Upstreams {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    counters: Arc<Counters>,
    nodelay: bool,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let (tcp, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("bench upstream accept: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    continue;
                }
            },
            _ = stopped.changed() => return,
        };
        counters.connections.fetch_add(1, Ordering::Relaxed);
        if nodelay {
            let _ = tcp.set_nodelay(true);
        }
        let counters = Arc::clone(&counters);
        tokio::spawn(async move {
            let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                counters.requests.fetch_add(1, Ordering::Relaxed);
                let split = req
                    .headers()
                    .get(KIND_HEADER)
                    .is_some_and(|v| v.as_bytes() == b"split");
                async move { Ok::<_, Infallible>(answer(split)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}

type Chunks = futures_util::stream::Once<
    std::pin::Pin<Box<dyn Future<Output = Result<Frame<Bytes>, Infallible>> + Send>>,
>;

/// The answer: one write, or the head first and the body in a second write.
fn answer(split: bool) -> hyper::Response<Either<Full<Bytes>, StreamBody<Chunks>>> {
    let body = if split {
        let chunk: std::pin::Pin<Box<dyn Future<Output = _> + Send>> = Box::pin(async {
            // Pending once: hyper writes and flushes the head before it gets the body.
            tokio::task::yield_now().await;
            Ok(Frame::data(Bytes::from_static(BODY)))
        });
        Either::Right(StreamBody::new(futures_util::stream::once(chunk)))
    } else {
        Either::Left(Full::new(Bytes::from_static(BODY)))
    };
    hyper::Response::builder()
        .header(hyper::header::CONTENT_TYPE, "text/plain")
        .header(hyper::header::CONTENT_LENGTH, BODY.len())
        .body(body)
        .expect("a valid response")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn both_kinds_answer_the_body_on_one_kept_alive_connection() {
        let ups = Upstreams::start(2, true).unwrap();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        for kind in ["whole", "split", "split"] {
            let resp = http
                .get(format!("http://{}/x", ups.addr(1)))
                .header(KIND_HEADER, kind)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            assert_eq!(resp.headers()["content-length"], "128");
            assert_eq!(resp.bytes().await.unwrap().as_ref(), BODY);
        }
        assert_eq!(ups.counters(1).read(), (1, 3));
        assert_eq!(ups.counters(0).read(), (0, 0));
    }
}
