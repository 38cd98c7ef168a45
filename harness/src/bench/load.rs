//! The load generator: keep-alive HTTP/1.1 connections (a hyper client connection per
//! worker, TCP_NODELAY) sending `GET path` to one target, in two kinds of pass:
//!
//! - **closed loop** ([`Pass::Closed`]): `connections` workers each send the next request as
//!   soon as the previous answer's body is read, for `duration`: the target's maximum
//!   throughput under that concurrency, latency measured per request.
//! - **open loop** ([`Pass::Open`]): requests are *scheduled* at a fixed `rate` (request `i` at
//!   `t0 + i / rate`), and whichever of the `connections` workers is free takes the next one.
//!   Latency is corrected for coordinated omission: when a request could only be sent after its
//!   scheduled time because every connection was still busy, its latency counts from the
//!   scheduled time ([`latency_origin`]), so a stall shows in every request it delayed, not
//!   just one. A worker that was idle and slept until the scheduled time measures from when it
//!   woke (the generator's own timer lateness is not charged to the target; it is reported as
//!   `timer_late_p99_ms`). Requests still unsent or unanswered at the pass's hard deadline
//!   (`duration` + [`DRAIN`]) are recorded with the time they had waited by then.
//!
//! Latencies go into HDR histograms (1 µs to 60 s, 3 significant figures). Only 2xx answers
//! are recorded as latencies; other statuses and transport errors are counted.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::time::Instant;

/// How long a pass may run past its duration to finish what is in flight.
pub(crate) const DRAIN: Duration = Duration::from_secs(2);
/// One request's deadline.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Largest latency a histogram holds, µs.
const MAX_US: u64 = 60_000_000;

/// Where the load goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// A label (`direct`, `nginx`, `gantry-100`).
    pub name: String,
    /// The listening address.
    pub addr: SocketAddr,
    /// The request path.
    pub path: String,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
}

/// One pass of load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Each connection sends back to back.
    Closed {
        /// Connections (workers).
        connections: usize,
        /// How long.
        duration: Duration,
    },
    /// A fixed request rate.
    Open {
        /// Requests per second.
        rate: u32,
        /// Connections (workers) sharing the schedule.
        connections: usize,
        /// How long.
        duration: Duration,
    },
}

/// A new latency histogram, µs.
pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("valid bounds")
}

/// Records `d` (µs, at least 1) in `h`.
fn record(h: &mut Histogram<u64>, d: Duration) {
    h.saturating_record(u64::try_from(d.as_micros()).unwrap_or(MAX_US).max(1));
}

/// What one pass measured.
#[derive(Debug, Clone)]
pub(crate) struct PassResult {
    /// 2xx answers.
    pub ok: u64,
    /// Non-2xx answers.
    pub non_2xx: u64,
    /// Transport errors and timeouts.
    pub errors: u64,
    /// Open loop: scheduled requests never sent before the hard deadline.
    pub unsent: u64,
    /// Connections opened.
    pub connects: u64,
    /// From the first scheduled request (or the start) to the last answer.
    pub elapsed: Duration,
    /// Latencies of the 2xx answers (and, open loop, of the unsent and timed-out slots), µs.
    pub latency: Histogram<u64>,
    /// Open loop: how late the generator's timer woke idle workers, µs.
    pub timer_late: Histogram<u64>,
}

/// A pass's figures for reports, latencies in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Summary {
    /// 2xx answers per second.
    pub rps: f64,
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Maximum.
    pub max_ms: f64,
    /// 2xx answers.
    pub ok: u64,
    /// Non-2xx answers, transport errors, timeouts and unsent requests.
    pub failed: u64,
    /// Connections the generator opened.
    pub connects: u64,
    /// Open loop: the generator's timer lateness, p99.
    pub timer_late_p99_ms: f64,
}

impl PassResult {
    fn empty() -> Self {
        Self {
            ok: 0,
            non_2xx: 0,
            errors: 0,
            unsent: 0,
            connects: 0,
            elapsed: Duration::ZERO,
            latency: histogram(),
            timer_late: histogram(),
        }
    }

    fn merge(&mut self, other: &PassResult) {
        self.ok += other.ok;
        self.non_2xx += other.non_2xx;
        self.errors += other.errors;
        self.unsent += other.unsent;
        self.connects += other.connects;
        self.latency
            .add(&other.latency)
            .expect("histograms share bounds");
        self.timer_late
            .add(&other.timer_late)
            .expect("histograms share bounds");
    }

    /// The figures.
    pub(crate) fn summary(&self) -> Summary {
        let ms = |us: u64| us as f64 / 1000.0;
        let q = |h: &Histogram<u64>, q: f64| {
            if h.is_empty() {
                0.0
            } else {
                ms(h.value_at_quantile(q))
            }
        };
        let secs = self.elapsed.as_secs_f64();
        Summary {
            rps: if secs > 0.0 {
                self.ok as f64 / secs
            } else {
                0.0
            },
            p50_ms: q(&self.latency, 0.50),
            p99_ms: q(&self.latency, 0.99),
            p999_ms: q(&self.latency, 0.999),
            max_ms: if self.latency.is_empty() {
                0.0
            } else {
                ms(self.latency.max())
            },
            ok: self.ok,
            failed: self.non_2xx + self.errors + self.unsent,
            connects: self.connects,
            timer_late_p99_ms: q(&self.timer_late, 0.99),
        }
    }
}

/// Where an open-loop request's latency counts from: its scheduled time when the worker took
/// it at or after that time (every connection was busy, or the generator fell behind: the
/// wait is part of what a user would see), else the moment the idle worker woke up to send it.
pub(crate) fn latency_origin(scheduled: Instant, taken_at: Instant, woke_at: Instant) -> Instant {
    if taken_at >= scheduled {
        scheduled
    } else {
        woke_at
    }
}

/// The open-loop schedule: `total` requests, request `i` at `t0 + i × interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Schedule {
    /// When request 0 is due.
    pub t0: Instant,
    /// Time between two requests.
    pub interval: Duration,
    /// Requests in the pass.
    pub total: u64,
}

impl Schedule {
    /// `rate` requests per second for `duration`, starting at `t0`.
    pub(crate) fn new(t0: Instant, rate: u32, duration: Duration) -> Self {
        let rate = rate.max(1);
        Self {
            t0,
            interval: Duration::from_nanos(1_000_000_000 / u64::from(rate)),
            total: (f64::from(rate) * duration.as_secs_f64()).round() as u64,
        }
    }

    /// When request `i` is due.
    pub(crate) fn at(&self, i: u64) -> Instant {
        self.t0
            + Duration::from_nanos(u64::try_from(self.interval.as_nanos()).unwrap_or(u64::MAX) * i)
    }
}

/// One connection of a worker; reconnects after an error.
struct Conn {
    target: Arc<Target>,
    sender: Option<SendRequest<Empty<Bytes>>>,
    connects: u64,
}

/// How one request went.
enum Outcome {
    Ok,
    Status,
    Error,
    Timeout,
}

impl Conn {
    fn new(target: Arc<Target>) -> Self {
        Self {
            target,
            sender: None,
            connects: 0,
        }
    }

    async fn connect(&mut self) -> Result<(), String> {
        let tcp = tokio::net::TcpStream::connect(self.target.addr)
            .await
            .map_err(|e| e.to_string())?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        self.connects += 1;
        self.sender = Some(sender);
        Ok(())
    }

    /// Sends one request and reads the whole answer.
    async fn request(&mut self) -> Outcome {
        match tokio::time::timeout(REQUEST_TIMEOUT, self.exchange()).await {
            Ok(Ok(true)) => Outcome::Ok,
            Ok(Ok(false)) => Outcome::Status,
            Ok(Err(_)) => {
                self.sender = None;
                Outcome::Error
            }
            Err(_) => {
                self.sender = None;
                Outcome::Timeout
            }
        }
    }

    async fn exchange(&mut self) -> Result<bool, String> {
        if self.sender.as_ref().is_none_or(SendRequest::is_closed) {
            self.connect().await?;
        }
        let sender = self.sender.as_mut().expect("connected");
        sender.ready().await.map_err(|e| e.to_string())?;
        let mut req = hyper::Request::get(self.target.path.as_str())
            .header(hyper::header::HOST, self.target.addr.to_string());
        for (k, v) in &self.target.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req.body(Empty::new()).map_err(|e| e.to_string())?;
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let ok = resp.status().is_success();
        resp.into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?;
        Ok(ok)
    }
}

/// Runs one pass against `target`.
pub(crate) async fn run(target: &Target, pass: Pass) -> PassResult {
    let target = Arc::new(target.clone());
    match pass {
        Pass::Closed {
            connections,
            duration,
        } => closed(target, connections.max(1), duration).await,
        Pass::Open {
            rate,
            connections,
            duration,
        } => open(target, rate, connections.max(1), duration).await,
    }
}

async fn closed(target: Arc<Target>, connections: usize, duration: Duration) -> PassResult {
    let start = Instant::now();
    let deadline = start + duration;
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            let target = Arc::clone(&target);
            tokio::spawn(async move {
                let mut conn = Conn::new(target);
                let mut r = PassResult::empty();
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    match conn.request().await {
                        Outcome::Ok => {
                            r.ok += 1;
                            record(&mut r.latency, sent.elapsed());
                        }
                        Outcome::Status => r.non_2xx += 1,
                        Outcome::Error | Outcome::Timeout => {
                            r.errors += 1;
                            // Do not spin on a target that refuses connections.
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }
                r.connects = conn.connects;
                r
            })
        })
        .collect();
    let mut total = PassResult::empty();
    for w in workers {
        if let Ok(r) = w.await {
            total.merge(&r);
        }
    }
    total.elapsed = start.elapsed();
    total
}

async fn open(
    target: Arc<Target>,
    rate: u32,
    connections: usize,
    duration: Duration,
) -> PassResult {
    // A little slack so every worker is waiting when request 0 is due.
    let schedule = Schedule::new(Instant::now() + Duration::from_millis(20), rate, duration);
    let hard_deadline = schedule.at(schedule.total) + DRAIN;
    let next = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            let target = Arc::clone(&target);
            let next = Arc::clone(&next);
            tokio::spawn(async move {
                let mut conn = Conn::new(target);
                let mut r = PassResult::empty();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= schedule.total {
                        break;
                    }
                    let scheduled = schedule.at(i);
                    let taken_at = Instant::now();
                    if taken_at >= hard_deadline {
                        r.unsent += 1;
                        record(&mut r.latency, taken_at - scheduled);
                        continue;
                    }
                    let mut woke_at = taken_at;
                    if taken_at < scheduled {
                        tokio::time::sleep_until(scheduled).await;
                        woke_at = Instant::now();
                        record(&mut r.timer_late, woke_at - scheduled);
                    }
                    let origin = latency_origin(scheduled, taken_at, woke_at);
                    let left = hard_deadline.saturating_duration_since(Instant::now());
                    match tokio::time::timeout(left, conn.request()).await {
                        Ok(Outcome::Ok) => {
                            r.ok += 1;
                            record(&mut r.latency, origin.elapsed());
                        }
                        Ok(Outcome::Status) => r.non_2xx += 1,
                        Ok(Outcome::Error) => r.errors += 1,
                        Ok(Outcome::Timeout) | Err(_) => {
                            conn.sender = None;
                            r.errors += 1;
                            record(&mut r.latency, origin.elapsed());
                        }
                    }
                }
                r.connects = conn.connects;
                r
            })
        })
        .collect();
    let mut total = PassResult::empty();
    for w in workers {
        if let Ok(r) = w.await {
            total.merge(&r);
        }
    }
    total.elapsed = Instant::now().saturating_duration_since(schedule.t0);
    total
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    #[test]
    fn a_delayed_request_counts_from_its_schedule_an_idle_one_from_its_wake_up() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // Taken late (the connection was busy): from the schedule.
        assert_eq!(
            latency_origin(t0 + ms(10), t0 + ms(30), t0 + ms(30)),
            t0 + ms(10)
        );
        // Taken early, slept, woke 1 ms late: from the wake-up.
        assert_eq!(
            latency_origin(t0 + ms(10), t0 + ms(5), t0 + ms(11)),
            t0 + ms(11)
        );
    }

    #[test]
    fn the_schedule_spreads_requests_evenly() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, 1000, Duration::from_millis(1500));
        assert_eq!(s.total, 1500);
        assert_eq!(s.at(0), t0);
        assert_eq!(s.at(250), t0 + Duration::from_millis(250));
    }

    #[test]
    fn summaries_read_the_histogram() {
        let mut r = PassResult::empty();
        for us in 1..=1000 {
            r.latency.record(us).unwrap();
        }
        r.ok = 1000;
        r.errors = 2;
        r.elapsed = Duration::from_millis(500);
        let s = r.summary();
        assert_eq!(s.rps, 2000.0);
        assert!(
            (s.p50_ms - 0.5).abs() < 0.01 && (s.p99_ms - 0.99).abs() < 0.01,
            "{s:?}"
        );
        assert_eq!((s.failed, s.max_ms), (2, 1.0));
        assert_eq!(PassResult::empty().summary().p99_ms, 0.0);
    }

    /// A keep-alive server answering at once, except that one answer (the 50th) stalls
    /// `stall`: open loop must charge the stall to every request it held back.
    async fn stalling_server(stall: Duration) -> SocketAddr {
        use hyper::service::service_fn;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let count = Arc::new(AtomicU64::new(0));
        let stalled = Arc::new(AtomicBool::new(false));
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                tcp.set_nodelay(true).unwrap();
                let (count, stalled) = (Arc::clone(&count), Arc::clone(&stalled));
                tokio::spawn(async move {
                    let svc = service_fn(move |_req| {
                        let n = count.fetch_add(1, Ordering::Relaxed);
                        let stall_now = n == 50 && !stalled.swap(true, Ordering::Relaxed);
                        async move {
                            if stall_now {
                                tokio::time::sleep(stall).await;
                            }
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(
                                http_body_util::Full::new(Bytes::from_static(b"ok")),
                            ))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), svc)
                        .await;
                });
            }
        });
        addr
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn open_loop_charges_a_stall_to_every_request_it_delayed() {
        let addr = stalling_server(Duration::from_millis(200)).await;
        let target = Target {
            name: "t".into(),
            addr,
            path: "/".into(),
            headers: Vec::new(),
        };
        let r = run(
            &target,
            Pass::Open {
                rate: 500,
                connections: 1,
                duration: Duration::from_millis(600),
            },
        )
        .await;
        assert_eq!(r.ok, 300, "{:?}", r.summary());
        // The stall held back ~100 scheduled requests (200 ms at 2 ms each); without the
        // correction only one answer would be slow.
        let slow = r.latency.count_between(20_000, MAX_US);
        assert!(
            slow >= 50,
            "only {slow} requests over 20 ms: {:?}",
            r.summary()
        );
        assert!(r.summary().max_ms >= 190.0, "{:?}", r.summary());

        let closed = run(
            &target,
            Pass::Closed {
                connections: 2,
                duration: Duration::from_millis(200),
            },
        )
        .await;
        assert!(
            closed.ok > 100 && closed.errors == 0,
            "{:?}",
            closed.summary()
        );
        assert_eq!(closed.connects, 2);
    }
}
