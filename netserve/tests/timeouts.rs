//! The accept loop's timeouts, over raw TCP: a slow or silent head is cut after the header-read
//! limit, an idle kept-alive connection after the idle limit, and a client that keeps making
//! progress (or waits for a slow answer) is never cut. Time passes by waiting for a condition
//! (another connection being closed by a limit), never by a fixed sleep.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::routing::get;
use netserve::Timeouts;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;

/// The longest any expected close or answer may take.
const DEADLINE: Duration = Duration::from_secs(10);

/// Serves `/` (answers the client's address) and `/held` (answers once `release` is notified)
/// with `timeouts`.
async fn start(timeouts: Timeouts) -> (SocketAddr, Arc<Notify>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let release = Arc::new(Notify::new());
    let held = release.clone();
    let router = Router::new()
        .route(
            "/",
            get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.to_string() }),
        )
        .route(
            "/held",
            get(move || async move {
                held.notified().await;
                "released"
            }),
        );
    tokio::spawn(netserve::serve(
        listener,
        router,
        timeouts,
        std::future::pending(),
    ));
    (addr, release)
}

/// Waits until the server closes `conn` (EOF or reset); panics after the deadline or if
/// bytes arrive instead.
async fn closed(conn: &mut TcpStream, what: &str) {
    let mut buf = [0u8; 256];
    match tokio::time::timeout(DEADLINE, conn.read(&mut buf)).await {
        Err(_) => panic!("{what}: the server kept the connection open for {DEADLINE:?}"),
        Ok(Ok(0) | Err(_)) => {}
        Ok(Ok(n)) => panic!(
            "{what}: unexpected bytes {:?}",
            String::from_utf8_lossy(&buf[..n])
        ),
    }
}

/// Sends a GET for `path` and reads one whole answer (`Content-Length` framed); returns the
/// status line and the body.
async fn get_on(conn: &mut TcpStream, path: &str) -> (String, String) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
    conn.write_all(request.as_bytes()).await.unwrap();
    tokio::time::timeout(DEADLINE, read_answer(conn))
        .await
        .unwrap_or_else(|_| panic!("no answer to {path} within {DEADLINE:?}"))
}

async fn read_answer(conn: &mut TcpStream) -> (String, String) {
    let mut data = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).into_owned();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().unwrap())
                })
                .expect("a content-length");
            if data.len() >= end + 4 + length {
                let body = String::from_utf8_lossy(&data[end + 4..end + 4 + length]);
                let status = head.lines().next().unwrap_or_default().to_owned();
                return (status, body.into_owned());
            }
        }
        let n = conn.read(&mut buf).await.unwrap();
        assert!(n > 0, "connection closed mid-answer: {data:?}");
        data.extend_from_slice(&buf[..n]);
    }
}

#[tokio::test]
async fn a_half_sent_head_is_cut_after_the_header_read_timeout() {
    let timeouts = Timeouts {
        header_read: Duration::from_millis(300),
        idle: Duration::from_secs(60),
    };
    let (addr, _) = start(timeouts).await;
    let started = Instant::now();
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(b"GET / HTTP/1.1\r\nHost: test\r\nX-Slow: ")
        .await
        .unwrap();
    closed(&mut conn, "half a head").await;
    assert!(started.elapsed() >= timeouts.header_read);
    // A client that sends nothing at all is cut the same way.
    let started = Instant::now();
    let mut silent = TcpStream::connect(addr).await.unwrap();
    closed(&mut silent, "a silent client").await;
    assert!(started.elapsed() >= timeouts.header_read);
    // On a kept-alive connection the limit restarts with the next request's first byte.
    let mut conn = TcpStream::connect(addr).await.unwrap();
    let (status, _) = get_on(&mut conn, "/").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    let started = Instant::now();
    conn.write_all(b"GET / HT").await.unwrap();
    closed(&mut conn, "half a second head").await;
    assert!(started.elapsed() >= timeouts.header_read);
    assert!(
        started.elapsed() < timeouts.idle,
        "cut by the idle limit, not the header limit"
    );
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let timeouts = Timeouts {
        header_read: Duration::from_millis(200),
        idle: Duration::from_millis(800),
    };
    let (addr, _) = start(timeouts).await;
    let mut conn = TcpStream::connect(addr).await.unwrap();
    // The server's idle time starts once it has answered, so after this instant: measured
    // from the answer's arrival instead, a loaded machine made it look early.
    let idle_from = Instant::now();
    let (status, body) = get_on(&mut conn, "/").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(body, conn.local_addr().unwrap().to_string(), "ConnectInfo");
    closed(&mut conn, "an idle connection").await;
    assert!(
        idle_from.elapsed() >= timeouts.idle,
        "closed after {:?}, before the idle limit",
        idle_from.elapsed()
    );
}

#[tokio::test]
async fn a_client_that_makes_progress_is_never_cut() {
    // The idle limit leaves the main connection ample margin over the header probe's wait.
    let timeouts = Timeouts {
        header_read: Duration::from_millis(200),
        idle: Duration::from_secs(2),
    };
    let (addr, release) = start(timeouts).await;
    let mut conn = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut conn, "/").await.0, "HTTP/1.1 200 OK");
    // Idle for longer than the header limit: a silent probe connected after that answer is
    // cut by the header limit, so at least that much time has passed.
    let mut probe = TcpStream::connect(addr).await.unwrap();
    closed(&mut probe, "the header-limit probe").await;
    assert_eq!(get_on(&mut conn, "/").await.0, "HTTP/1.1 200 OK");
    // A request in progress for longer than both limits: a probe that goes idle after the
    // request started is cut by the idle limit before the answer is released.
    conn.write_all(b"GET /held HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut probe = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut probe, "/").await.0, "HTTP/1.1 200 OK");
    closed(&mut probe, "the idle-limit probe").await;
    release.notify_one();
    let (status, body) = tokio::time::timeout(DEADLINE, read_answer(&mut conn))
        .await
        .expect("the held answer");
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "released")
    );
    // And the connection is still good for more.
    assert_eq!(get_on(&mut conn, "/").await.0, "HTTP/1.1 200 OK");
}
