//! `gateway::serve_workers`, the binary's way of serving: a single-threaded runtime per worker
//! thread, each accepting on its own handle of the listener and proxying over a connection
//! pool of its own.

use model::ConfigSet;

use crate::common::{Gateway, eventually, fake_admin, next_session};
use crate::sync::{full_sync, plugin, rule, selector, upstream};

#[tokio::test]
async fn workers_proxy_every_connection_then_drain_and_close_the_listener() {
    let (admin, mut sessions) = fake_admin().await;
    let up = upstream().await;
    let gateway = Gateway::start_workers(
        gateway::Config::new(model::SyncMode::Websocket, vec![format!("http://{admin}")]),
        2,
    )
    .await;
    let addr = gateway.addr;
    let mut conn = next_session(&mut sessions).await;
    let config = ConfigSet {
        plugins: vec![plugin()],
        selectors: vec![selector("s0", "/r0", up)],
        rules: vec![rule("u0", "s0", "/r0/**")],
        meta_data: Vec::new(),
    };
    full_sync(&mut conn, &config).await;
    let kept = reqwest::Client::new();
    eventually("the route served", || async {
        let response = kept.get(gateway.url("/r0/probe")).send().await.ok()?;
        (response.status() == 200).then_some(())
    })
    .await;
    // A connection per request: the kernel hands them to either worker, and each worker's
    // requests go through its own upstream pool. Every one is proxied, with the config the
    // subscriber (on this test's runtime) applied.
    for i in 0..64 {
        let fresh = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        let response = fresh
            .get(gateway.url(&format!("/r0/{i}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "request {i}");
        let headers = response.headers().clone();
        assert_eq!(
            headers
                .get("x-gantry-selector-id")
                .map(|v| v.to_str().unwrap()),
            Some("s0"),
            "request {i}: {headers:?}"
        );
    }
    drop(kept);
    drop(conn);
    gateway.stop().await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "a stopped gateway still accepts on {addr}"
    );
}
