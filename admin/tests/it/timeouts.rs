//! The admin's client connection limits (`--header-read-timeout-ms`, `--idle-timeout-ms`):
//! a slow-header client is disconnected and the server still stops gracefully. The limits
//! themselves are tested in `netserve`.

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
