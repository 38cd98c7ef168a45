//! The admin's client connection limits (`--header-read-timeout-ms`, `--idle-timeout-ms`,
//! `--body-read-timeout-ms`): a slow-header client is disconnected and the server still
//! stops gracefully; a request whose body never arrives gets 408, over HTTP/1.1 and h2. The
//! head and idle limits themselves are tested in `netserve`.

use std::time::{Duration, Instant};

use crate::common::{DEADLINE, Served};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test]
async fn a_slow_header_client_is_disconnected() {
    let timeouts = netserve::Timeouts {
        header_read: Duration::from_millis(300),
        idle: Duration::from_secs(60),
    };
    let served = Served::start(admin::Config {
        timeouts,
        ..admin::Config::new(":memory:")
    })
    .await;
    let started = Instant::now();
    let mut conn = TcpStream::connect(served.addr).await.unwrap();
    conn.write_all(b"GET /actuator/health HTTP/1.1\r\nHost: admin\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(DEADLINE, conn.read(&mut buf))
        .await
        .expect("the admin closes a connection whose head never completes");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert!(started.elapsed() >= timeouts.header_read);
    served.stop().await;
}

/// An admin whose request bodies must arrive within `BODY_READ`.
async fn body_limited() -> Served {
    Served::start(admin::Config {
        body_read_timeout: BODY_READ,
        ..admin::Config::new(":memory:")
    })
    .await
}

/// A short body-read deadline, so the tests wait little.
const BODY_READ: Duration = Duration::from_millis(300);

#[tokio::test]
async fn a_body_that_never_arrives_gets_408_and_the_connection_closes() {
    let served = body_limited().await;
    let started = Instant::now();
    let mut conn = TcpStream::connect(served.addr).await.unwrap();
    conn.write_all(
        b"POST /platform/login HTTP/1.1\r\nHost: admin\r\n\
          Content-Type: application/json\r\nContent-Length: 100\r\n\r\n",
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(DEADLINE, conn.read_to_end(&mut answer))
        .await
        .expect("the admin answers and closes a request whose body never arrives")
        .unwrap();
    assert!(started.elapsed() >= BODY_READ);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""code":408"#), "{answer}");
    served.stop().await;
}

#[tokio::test]
async fn a_body_that_never_arrives_over_h2_gets_408() {
    let served = body_limited().await;
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .timeout(DEADLINE)
        .build()
        .unwrap();
    // HEADERS, then no DATA ever.
    let never = futures_util::stream::pending::<Result<Vec<u8>, std::io::Error>>();
    let started = Instant::now();
    let response = client
        .post(served.url("/platform/login"))
        .header("Content-Type", "application/json")
        .body(reqwest::Body::wrap_stream(never))
        .send()
        .await
        .expect("the admin answers a request whose body never arrives");
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status(), 408);
    assert!(started.elapsed() >= BODY_READ);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["code"], 408, "{body}");
    served.stop().await;
}

#[tokio::test]
async fn a_body_that_arrives_in_time_is_served() {
    let served = body_limited().await;
    let answer = reqwest::Client::new()
        .post(served.url("/platform/login"))
        .json(&serde_json::json!({"userName": "admin", "password": "123456"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    served.stop().await;
}
