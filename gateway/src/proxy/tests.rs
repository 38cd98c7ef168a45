//! The proxy against real upstreams (wiremock, raw sockets): bodies, retries, errors.

mod end_to_end {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use model::{
        ConditionData, ConfigSet, DataEvent, DataEventType, PluginData, RuleData, SelectorData,
    };
    use serde_json::{Value, json};
    use tokio::net::TcpListener;
    use wiremock::matchers::{any, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use bytes::Bytes;
    use http_body_util::BodyExt;

    use super::super::*;
    use crate::plugin::Chain;
    use crate::router::RequestView;
    use crate::snapshot::{ConfigData, Snapshot};

    /// A wiremock upstream echoing path, query and body; `/slow` answers after an hour.
    /// Its journal counts the requests ([`hits`]).
    async fn echo() -> (String, MockServer) {
        let server = MockServer::start().await;
        Mock::given(path("/slow"))
            .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3600)))
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(any())
            .respond_with(|req: &wiremock::Request| {
                ResponseTemplate::new(200).set_body_json(json!({
                    "path": req.url.path(),
                    "query": req.url.query(),
                    "body": String::from_utf8_lossy(&req.body),
                }))
            })
            .mount(&server)
            .await;
        (server.address().to_string(), server)
    }

    /// How many requests `server` has received.
    async fn hits(server: &MockServer) -> usize {
        server.received_requests().await.unwrap_or_default().len()
    }

    /// An address that refuses connections.
    async fn refused() -> String {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().to_string()
    }

    fn plugin(name: &str, sort: i32, enabled: bool) -> PluginData {
        PluginData {
            id: name.into(),
            name: name.into(),
            enabled,
            sort,
            ..Default::default()
        }
    }

    fn selector(plugin: &str, prefix: &str, handle: Option<String>) -> SelectorData {
        SelectorData {
            id: format!("{plugin}-s"),
            plugin_name: plugin.into(),
            enabled: true,
            handle,
            condition_list: vec![ConditionData::new("uri", "startsWith", "/", prefix)],
            ..Default::default()
        }
    }

    fn rule(plugin: &str, handle: &str) -> RuleData {
        RuleData {
            id: format!("{plugin}-r"),
            selector_id: format!("{plugin}-s"),
            plugin_name: plugin.into(),
            enabled: true,
            handle: Some(handle.into()),
            condition_data_list: vec![ConditionData::new("uri", "match", "/", "/**")],
            ..Default::default()
        }
    }

    fn snapshot(
        plugins: Vec<PluginData>,
        selectors: Vec<SelectorData>,
        rules: Vec<RuleData>,
    ) -> Snapshot {
        let config = ConfigSet {
            plugins,
            selectors,
            rules,
            meta_data: Vec::new(),
        };
        let mut d = ConfigData::default();
        for event in DataEvent::full_sync(DataEventType::Myself, config, Vec::new()) {
            d.apply(event);
        }
        Snapshot::build(d)
    }

    fn upstreams(urls: &[&str]) -> Option<String> {
        let items: Vec<Value> = urls
            .iter()
            .map(|u| json!({"upstreamUrl": u, "protocol": "http://", "weight": 50}))
            .collect();
        Some(Value::Array(items).to_string())
    }

    /// The test client's address.
    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    /// Runs the chain for one request from [`PEER`].
    fn route(snap: &Snapshot, req: &Request<Body>) -> Result<Forward, Rejection> {
        let view = RequestView {
            method: req.method(),
            path: req.uri().path(),
            query: req.uri().query(),
            authority: None,
            headers: req.headers(),
            peer: PEER,
            peer_trusted: false,
        };
        Chain::standard().run_now(&snap.active, &view)
    }

    /// Runs the chain and the proxy for one request.
    async fn call(snap: &Snapshot, req: Request<Body>) -> (u16, Value) {
        let response = match route(snap, &req) {
            Ok(f) => Proxy::new().forward(req, f, PEER).await.response,
            Err(r) => r.into_response(),
        };
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    fn get(uri: &str) -> Request<Body> {
        Request::get(uri).body(Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn context_path_rewrites_and_param_mapping_maps_the_body() {
        let (up, _server) = echo().await;
        let snap = snapshot(
            vec![
                plugin("paramMapping", 70, true),
                plugin("contextPath", 80, true),
                plugin("divide", 200, true),
            ],
            vec![
                selector("paramMapping", "/ctx", None),
                selector("contextPath", "/ctx", None),
                // divide matches on contextPath + realUrl.
                selector("divide", "/ctx/v1/api", upstreams(&[&up])),
            ],
            vec![
                rule(
                    "paramMapping",
                    r#"{"addParameterKeys":[{"path":"$","key":"by","value":"gw"}],"removeParameterKeys":["$.secret"]}"#,
                ),
                rule("contextPath", r#"{"contextPath":"/ctx","addPrefix":"/v1"}"#),
                rule("divide", r#"{"timeout":3000}"#),
            ],
        );
        let req = Request::post("/ctx/api/x?q=1")
            .header("content-type", "application/json")
            .body(Body::from(r#"{"a":1,"secret":"s"}"#))
            .unwrap();
        let (status, body) = call(&snap, req).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["path"], "/v1/api/x");
        assert_eq!(body["query"], "q=1");
        let sent: Value = serde_json::from_str(body["body"].as_str().unwrap()).unwrap();
        assert_eq!(sent, json!({"a":1,"by":"gw"}));
        // Other content types pass unchanged.
        let req = Request::post("/ctx/api/x")
            .header("content-type", "text/plain")
            .body(Body::from("secret=s"))
            .unwrap();
        assert_eq!(call(&snap, req).await.1["body"], "secret=s");
    }

    #[tokio::test]
    async fn chain_follows_plugin_sort_and_skips_disabled_plugins() {
        let (up, _server) = echo().await;
        let build = |context_sort: i32, context_enabled: bool| {
            snapshot(
                vec![
                    plugin("contextPath", context_sort, context_enabled),
                    plugin("divide", 200, true),
                ],
                vec![
                    selector("contextPath", "/ctx", None),
                    // divide matches on contextPath + realUrl: the original path.
                    selector("divide", "/ctx/api", upstreams(&[&up])),
                ],
                vec![
                    rule("contextPath", r#"{"contextPath":"/ctx"}"#),
                    rule("divide", "{}"),
                ],
            )
        };
        let (status, body) = call(&build(80, true), get("/ctx/api/x")).await;
        assert_eq!((status, &body["path"]), (200, &json!("/api/x")));
        // Disabled: the upstream gets the full path.
        let (status, body) = call(&build(80, false), get("/ctx/api/x")).await;
        assert_eq!((status, &body["path"]), (200, &json!("/ctx/api/x")));
        // Sorted after divide: too late to matter.
        let (status, body) = call(&build(300, true), get("/ctx/api/x")).await;
        assert_eq!((status, &body["path"]), (200, &json!("/ctx/api/x")));
    }

    /// An upstream whose answers stream one chunk, then hold their bodies open until
    /// `release` gets a permit; it counts requests.
    async fn held() -> (String, Arc<AtomicUsize>, Arc<tokio::sync::Semaphore>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let (counter, gate) = (hits.clone(), release.clone());
        let app = axum::Router::new().fallback(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            let gate = gate.clone();
            async move {
                let chunks = futures_util::stream::unfold(0, move |n| {
                    let gate = gate.clone();
                    async move {
                        match n {
                            0 => Some((Ok::<_, std::io::Error>(Bytes::from("start")), 1)),
                            1 => {
                                drop(gate.acquire().await);
                                Some((Ok(Bytes::from("end")), 2))
                            }
                            _ => None,
                        }
                    }
                });
                Body::from_stream(chunks)
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (addr.to_string(), hits, release)
    }

    /// leastActive sees a request as active until the client has its whole body, not
    /// just the headers. While a response from `slow` streams, every request goes to
    /// `fast` (an early lease end would tie them: all 20 on `fast` would then have
    /// probability 2^-20); once it ends they tie again and `slow` is picked (all 60 on
    /// `fast` has probability 2^-60).
    #[tokio::test]
    async fn least_active_counts_a_request_until_its_body_ends() {
        let (slow, slow_hits, release) = held().await;
        let (fast, fast_server) = echo().await;
        let snap = snapshot(
            vec![plugin("divide", 200, true)],
            vec![selector("divide", "/", upstreams(&[&slow, &fast]))],
            vec![rule("divide", r#"{"loadBalance":"leastActive"}"#)],
        );
        let proxy = Proxy::new();
        let forward = |req: Request<Body>| {
            let to = route(&snap, &req).unwrap();
            proxy.forward(req, to, PEER)
        };
        let pinned = Request::get("/stream")
            .header("specify-domain", slow.as_str())
            .body(Body::empty())
            .unwrap();
        let mut streaming = forward(pinned).await.response.into_body();
        let first = streaming.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "start");
        assert_eq!(slow_hits.load(Ordering::SeqCst), 1);
        for i in 0..20 {
            let response = forward(get("/x")).await.response;
            // Checked before reading the body: one held by `slow` would never end.
            assert_eq!(
                slow_hits.load(Ordering::SeqCst),
                1,
                "request {i} went to the upstream that has one in flight"
            );
            response.into_body().collect().await.unwrap();
        }
        assert_eq!(hits(&fast_server).await, 20);
        release.add_permits(1);
        // Collecting consumes (and so ends) the body.
        let rest = streaming.collect().await.unwrap().to_bytes();
        assert_eq!(rest, "end");
        for _ in 0..60 {
            let response = forward(get("/x")).await.response;
            response.into_body().collect().await.unwrap();
        }
        assert!(
            slow_hits.load(Ordering::SeqCst) > 1,
            "the lease outlived the response body"
        );
    }

    fn divide(urls: &[&str], rule_handle: &str) -> Snapshot {
        snapshot(
            vec![plugin("divide", 200, true)],
            vec![selector("divide", "/", upstreams(urls))],
            vec![rule("divide", rule_handle)],
        )
    }

    #[tokio::test]
    async fn retries_current_and_failover() {
        let (up, server) = echo().await;
        let down = refused().await;
        // specify-domain forces the first attempt onto the refusing upstream.
        let first_down = || {
            Request::get("/x")
                .header("specify-domain", down.as_str())
                .body(Body::empty())
                .unwrap()
        };
        let failover = divide(&[&down, &up], r#"{"retry":1,"retryStrategy":"failover"}"#);
        let (status, body) = call(&failover, first_down()).await;
        assert_eq!((status, &body["path"]), (200, &json!("/x")));
        let current = divide(&[&down, &up], r#"{"retry":2,"retryStrategy":"current"}"#);
        let (status, body) = call(&current, first_down()).await;
        assert_eq!((status, &body["code"]), (502, &json!(-103)));
        // Failover with nothing left to try.
        let alone = divide(&[&down], r#"{"retry":1,"retryStrategy":"failover"}"#);
        let (status, body) = call(&alone, get("/x")).await;
        assert_eq!((status, &body["code"]), (503, &json!(-119)));
        // Timeouts are retried: 1 + 2 attempts reach the upstream.
        let slow = divide(&[&up], r#"{"retry":2,"timeout":100}"#);
        let before = hits(&server).await;
        let (status, body) = call(&slow, get("/slow")).await;
        assert_eq!((status, &body["code"]), (504, &json!(504)));
        assert_eq!(hits(&server).await - before, 3);
        let once = divide(&[&up], r#"{"retry":0,"timeout":100}"#);
        let before = hits(&server).await;
        assert_eq!(call(&once, get("/slow")).await.0, 504);
        assert_eq!(hits(&server).await - before, 1);
    }

    /// An upstream error is an answer: passed through (status, body, headers), never
    /// retried. A dropped connection is a failure: retried, then a 502.
    #[tokio::test]
    async fn a_5xx_passes_through_and_a_dropped_connection_is_retried() {
        let server = MockServer::start().await;
        Mock::given(path("/fail"))
            .respond_with(
                ResponseTemplate::new(503)
                    .insert_header("x-why", "maintenance")
                    .set_body_string("down"),
            )
            .mount(&server)
            .await;
        // wiremock's server drops the connection when the responder errs.
        Mock::given(path("/drop"))
            .respond_with_err(|_: &wiremock::Request| {
                std::io::Error::from(std::io::ErrorKind::ConnectionReset)
            })
            .mount(&server)
            .await;
        let up = server.address().to_string();
        let snap = divide(&[&up], r#"{"retry":2,"retryStrategy":"current"}"#);
        let response = match route(&snap, &get("/fail")) {
            Ok(f) => Proxy::new().forward(get("/fail"), f, PEER).await.response,
            Err(r) => panic!("no route: {r:?}"),
        };
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()["x-why"], "maintenance");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, "down");
        assert_eq!(hits(&server).await, 1, "a 5xx answer was retried");
        let (status, body) = call(&snap, get("/drop")).await;
        assert_eq!((status, &body["code"]), (502, &json!(-103)), "{body}");
        assert_eq!(hits(&server).await, 1 + 3, "1 + retry attempts");
    }

    #[tokio::test]
    async fn size_limits() {
        let (up, _server) = echo().await;
        let snap = divide(&[&up], r#"{"headerMaxSize":10,"requestMaxSize":4}"#);
        let big_header = Request::get("/x")
            .header("x-big", "01234567890")
            .body(Body::empty())
            .unwrap();
        let (status, body) = call(&snap, big_header).await;
        assert_eq!((status, &body["code"]), (431, &json!(431)));
        let big_body = Request::post("/x")
            .header("content-length", "5")
            .body(Body::from("12345"))
            .unwrap();
        let (status, body) = call(&snap, big_body).await;
        assert_eq!((status, &body["code"]), (413, &json!(413)));
        let small = Request::post("/x")
            .header("content-length", "4")
            .body(Body::from("1234"))
            .unwrap();
        assert_eq!(call(&snap, small).await.1["body"], "1234");
    }

    /// A network for [`Proxy::over`]: every connection goes to `to` (or is refused, when
    /// `None`, or never opens, when `hang`), whatever the host; it counts them.
    #[derive(Debug, Clone)]
    struct Net {
        to: Option<std::net::SocketAddr>,
        hang: bool,
        opened: Arc<AtomicUsize>,
    }

    impl Net {
        fn new(to: Option<std::net::SocketAddr>, hang: bool) -> Net {
            Net {
                to,
                hang,
                opened: Arc::new(AtomicUsize::new(0)),
            }
        }

        fn opened(&self) -> usize {
            self.opened.load(Ordering::SeqCst)
        }
    }

    impl netserve::Connect for Net {
        type Io = tokio::net::TcpStream;

        async fn connect(&self, _host: &str, _port: u16) -> std::io::Result<Self::Io> {
            self.opened.fetch_add(1, Ordering::SeqCst);
            if self.hang {
                std::future::pending::<()>().await;
            }
            match self.to {
                Some(addr) => tokio::net::TcpStream::connect(addr).await,
                None => Err(std::io::ErrorKind::ConnectionRefused.into()),
            }
        }
    }

    /// Runs the chain and a proxy over `net` for one request.
    async fn call_over(net: &Net, snap: &Snapshot, req: Request<Body>) -> (u16, Value) {
        let to = route(snap, &req).unwrap();
        let response = Proxy::over(net.clone())
            .forward(req, to, PEER)
            .await
            .response;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// The proxy opens its upstream connections through the network it is given (a host
    /// no resolver knows reaches the echo server), keeps them alive between requests, and
    /// classifies that network's failures as with the OS's: a refused connection is
    /// retried, then 502 (-103); one that never opens is 504.
    #[tokio::test]
    async fn connections_open_through_the_given_network() {
        let (_, server) = echo().await;
        let snap = divide(&["upstream.invalid:80"], r#"{"retry":2,"timeout":200}"#);
        let net = Net::new(Some(*server.address()), false);
        let proxy = Proxy::over(net.clone());
        for _ in 0..3 {
            let to = route(&snap, &get("/x")).unwrap();
            let response = proxy.forward(get("/x"), to, PEER).await.response;
            assert_eq!(response.status(), 200);
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let body: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["path"], "/x");
        }
        assert_eq!(hits(&server).await, 3);
        assert_eq!(net.opened(), 1, "keep-alive pooling reuses the connection");

        let refusing = Net::new(None, false);
        let (status, body) = call_over(&refusing, &snap, get("/x")).await;
        assert_eq!((status, &body["code"]), (502, &json!(-103)), "{body}");
        assert_eq!(refusing.opened(), 3, "1 + retry attempts");

        let hanging = Net::new(None, true);
        let once = divide(&["upstream.invalid:80"], r#"{"retry":0,"timeout":100}"#);
        let (status, body) = call_over(&hanging, &once, get("/x")).await;
        assert_eq!((status, &body["code"]), (504, &json!(504)), "{body}");
        assert_eq!(hanging.opened(), 1);
    }
}
