//! Websocket sync against a served admin: full sync, increments, running mode, pings, and
//! the limits an open endpoint needs (message size, sessions, full syncs over all sessions).

use crate::common::{Client, DEADLINE, Served, is_id, rule_body, selector_body};
use futures_util::{SinkExt, StreamExt};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

async fn connect(served: &Served) -> Socket {
    let url = format!("ws://{}/websocket", served.addr);
    let (socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    socket
}

/// The next message, waiting at most [`DEADLINE`].
async fn next_message(socket: &mut Socket) -> Message {
    tokio::time::timeout(DEADLINE, socket.next())
        .await
        .expect("a frame arrives in time")
        .expect("the socket is open")
        .unwrap()
}

async fn next_json(socket: &mut Socket) -> Value {
    match next_message(socket).await {
        Message::Text(text) => serde_json::from_str(text.as_str()).unwrap(),
        other => panic!("expected a text frame, got {other:?}"),
    }
}

async fn send(socket: &mut Socket, text: &str) {
    socket.send(Message::text(text)).await.unwrap();
}

fn kind(frame: &Value) -> (&str, &str) {
    (
        frame["groupType"].as_str().unwrap_or(""),
        frame["eventType"].as_str().unwrap(),
    )
}

#[tokio::test]
async fn full_sync_increments_and_running_mode() {
    let served = Served::start(admin::Config::new(":memory:")).await;
    let client = Client::login(&served).await;
    let (_, created) = client
        .send(Method::POST, "/selector", Some(selector_body("/http")))
        .await;
    let first = created["data"].as_str().unwrap().to_owned();

    let mut socket = connect(&served).await;
    send(&mut socket, "RUNNING_MODE").await;
    assert_eq!(
        next_json(&mut socket).await,
        json!({"eventType":"RUNNING_MODE","runningMode":"STANDALONE","isMaster":true,"masterUrl":"/websocket"})
    );

    // Committed after the session subscribed but before MYSELF: the session may forward it
    // before answering MYSELF, but must not replay it after the full sync.
    let (_, created) = client
        .send(Method::POST, "/selector", Some(selector_body("/early")))
        .await;
    let early = created["data"].as_str().unwrap().to_owned();

    send(&mut socket, "hello, ignored").await;
    send(&mut socket, "MYSELF").await;
    let mut frames = vec![next_json(&mut socket).await];
    if kind(&frames[0]) == ("SELECTOR", "UPDATE") {
        assert_eq!(frames[0]["data"][0]["id"], early.as_str());
        frames[0] = next_json(&mut socket).await;
    }
    for _ in 1..5 {
        frames.push(next_json(&mut socket).await);
    }
    let kinds: Vec<_> = frames.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            ("PLUGIN", "MYSELF"),
            ("SELECTOR", "MYSELF"),
            ("RULE", "MYSELF"),
            ("META_DATA", "MYSELF"),
            ("APP_AUTH", "MYSELF")
        ]
    );
    assert_eq!(
        frames[0]["data"].as_array().unwrap().len(),
        model::BUILTIN_PLUGINS.len()
    );
    assert_eq!(frames[2]["data"], json!([]), "empty groups are sent too");
    assert_eq!(frames[1]["data"][0]["id"], first.as_str());
    assert_eq!(frames[1]["data"][1]["id"], early.as_str());
    insta::assert_json_snapshot!("myself_selector_frame", frames[1], {
        ".data[].id" => "[id]",
    });

    let (_, created) = client
        .send(Method::POST, "/selector", Some(selector_body("/second")))
        .await;
    let second = created["data"].as_str().unwrap().to_owned();
    let frame = next_json(&mut socket).await;
    assert_eq!(kind(&frame), ("SELECTOR", "UPDATE"));
    assert_eq!(
        frame["data"][0]["id"],
        second.as_str(),
        "the first increment follows the full sync"
    );

    client
        .send(
            Method::POST,
            "/rule",
            Some(rule_body(&second, "/http/order")),
        )
        .await;
    let frame = next_json(&mut socket).await;
    assert_eq!(kind(&frame), ("RULE", "UPDATE"));
    // `[selector id]` stands for `second`, the selector made above: the redaction checks it.
    insta::assert_json_snapshot!("rule_update_frame", frame, {
        ".data[].id" => "[id]",
        ".data[].selectorId" => is_id(&second, "[selector id]"),
    });

    socket
        .send(Message::Ping(b"are you there".to_vec().into()))
        .await
        .unwrap();
    match next_message(&mut socket).await {
        Message::Pong(payload) => assert_eq!(payload.as_ref(), b"are you there"),
        other => panic!("expected a pong, got {other:?}"),
    }

    let (status, body) = client
        .send(
            Method::DELETE,
            "/selector/batch",
            Some(json!({"ids":[second]})),
        )
        .await;
    assert_eq!((status, body["data"].as_i64()), (200, Some(1)));
    let frame = next_json(&mut socket).await;
    assert_eq!(kind(&frame), ("SELECTOR", "DELETE"));
    assert_eq!(frame["data"][0]["id"], second.as_str());
    assert_eq!(frame["data"][0]["pluginName"], "divide");
    let frame = next_json(&mut socket).await;
    assert_eq!(kind(&frame), ("RULE", "DELETE"));
    assert_eq!(frame["data"][0]["selectorId"], second.as_str());

    // A rejected request sends nothing: the next frame is the following good change.
    let (status, _) = client
        .send(Method::POST, "/selector", Some(json!({"pluginId":"99"})))
        .await;
    assert_eq!(status, 400);
    client
        .send(
            Method::POST,
            "/plugin/enabled",
            Some(json!({"ids":["5"],"enabled":false})),
        )
        .await;
    let frame = next_json(&mut socket).await;
    assert_eq!(kind(&frame), ("PLUGIN", "UPDATE"));
    assert_eq!(frame["data"][0]["enabled"], false);

    served.stop().await;
    match tokio::time::timeout(DEADLINE, socket.next())
        .await
        .expect("the session ends on shutdown")
    {
        None | Some(Err(_)) | Some(Ok(Message::Close(_))) => {}
        Some(Ok(other)) => panic!("expected the session to close, got {other:?}"),
    }
}

#[tokio::test]
async fn every_session_gets_every_change() {
    let served = Served::start(admin::Config::new(":memory:")).await;
    let client = Client::login(&served).await;
    let mut a = connect(&served).await;
    let mut b = connect(&served).await;
    // A full sync on each proves both sessions are subscribed before the change below.
    for socket in [&mut a, &mut b] {
        send(socket, "MYSELF").await;
        for _ in 0..5 {
            next_json(socket).await;
        }
    }
    client
        .send(Method::POST, "/selector", Some(selector_body("/both")))
        .await;
    for socket in [&mut a, &mut b] {
        let frame = next_json(socket).await;
        assert_eq!(kind(&frame), ("SELECTOR", "UPDATE"));
        assert_eq!(frame["data"][0]["name"], "/both");
    }
    served.stop().await;
}

/// Frames up to the `RUNNING_MODE` reply, which answers the last request sent.
async fn frames_until_running_mode(socket: &mut Socket) -> Vec<Value> {
    let mut frames = Vec::new();
    loop {
        let frame = next_json(socket).await;
        if frame["eventType"] == "RUNNING_MODE" {
            return frames;
        }
        frames.push(frame);
    }
}

fn full_sync_frames(frames: &[Value]) -> usize {
    frames
        .iter()
        .filter(|frame| frame["eventType"] == "MYSELF")
        .count()
}

#[tokio::test]
async fn myself_requests_are_rate_limited_per_session() {
    let served = Served::start(admin::Config {
        full_sync_interval: std::time::Duration::from_secs(3600),
        ..admin::Config::new(":memory:")
    })
    .await;
    let client = Client::login(&served).await;
    let mut a = connect(&served).await;
    for _ in 0..20 {
        send(&mut a, "MYSELF").await;
    }
    send(&mut a, "RUNNING_MODE").await;
    // Requests are handled in order: all twenty MYSELFs before RUNNING_MODE.
    let frames = frames_until_running_mode(&mut a).await;
    assert_eq!(
        full_sync_frames(&frames),
        5,
        "one full sync (five groups) for twenty MYSELFs"
    );

    // Increments keep flowing while a full sync is owed.
    client
        .send(Method::POST, "/selector", Some(selector_body("/owed")))
        .await;
    let frame = next_json(&mut a).await;
    assert_eq!(kind(&frame), ("SELECTOR", "UPDATE"));

    // The limit is per session: another one is answered at once.
    let mut b = connect(&served).await;
    send(&mut b, "MYSELF").await;
    send(&mut b, "RUNNING_MODE").await;
    let frames = frames_until_running_mode(&mut b).await;
    assert_eq!(full_sync_frames(&frames), 5);
    assert_eq!(frames[1]["data"][0]["name"], "/owed");
    served.stop().await;
}

/// A `MYSELF` within the interval is owed, not dropped: it is answered when the interval
/// ends, with the config as it is then.
#[tokio::test]
async fn an_owed_myself_is_answered_when_the_interval_ends() {
    let served = Served::start(admin::Config {
        full_sync_interval: std::time::Duration::from_millis(300),
        ..admin::Config::new(":memory:")
    })
    .await;
    let client = Client::login(&served).await;
    let mut socket = connect(&served).await;
    send(&mut socket, "MYSELF").await;
    for _ in 0..5 {
        assert_eq!(next_json(&mut socket).await["eventType"], "MYSELF");
    }
    client
        .send(Method::POST, "/selector", Some(selector_body("/later")))
        .await;
    send(&mut socket, "MYSELF").await;
    let mut frames = Vec::new();
    while frames.len() < 5 {
        let frame = next_json(&mut socket).await;
        // The increment may come first (or be folded into the full sync).
        if kind(&frame) != ("SELECTOR", "UPDATE") {
            frames.push(frame);
        }
    }
    assert_eq!(full_sync_frames(&frames), 5, "{frames:?}");
    assert_eq!(kind(&frames[1]), ("SELECTOR", "MYSELF"));
    assert_eq!(frames[1]["data"][0]["name"], "/later");
    served.stop().await;
}

/// A client message that never ends (continuation frames without FIN) is not buffered past
/// the admin's limit: the session is closed with 1009, and the admin goes on serving.
#[tokio::test]
async fn a_never_ending_fragmented_message_closes_the_session_with_1009() {
    let served = Served::start(admin::Config::new(":memory:")).await;
    let mut socket = connect(&served).await;
    let piece = vec![b'x'; 8 * 1024];
    let first = Frame::message(piece.clone(), OpCode::Data(Data::Text), false);
    socket.send(Message::Frame(first)).await.unwrap();
    // 128 KiB in all, twice the limit; sends may fail once the admin has closed.
    for _ in 0..15 {
        let more = Frame::message(piece.clone(), OpCode::Data(Data::Continue), false);
        if socket.send(Message::Frame(more)).await.is_err() {
            break;
        }
    }
    match next_message(&mut socket).await {
        Message::Close(Some(close)) => assert_eq!(close.code, CloseCode::Size, "{close:?}"),
        other => panic!("expected a close frame, got {other:?}"),
    }

    let mut other = connect(&served).await;
    send(&mut other, "MYSELF").await;
    for _ in 0..5 {
        assert_eq!(next_json(&mut other).await["eventType"], "MYSELF");
    }
    served.stop().await;
}

/// Sessions beyond `max_websocket_sessions` are refused with 503 until one ends.
#[tokio::test]
async fn upgrades_beyond_the_session_limit_get_503() {
    let served = Served::start(admin::Config {
        max_websocket_sessions: 2,
        ..admin::Config::new(":memory:")
    })
    .await;
    let url = format!("ws://{}/websocket", served.addr);
    let mut a = connect(&served).await;
    let _b = connect(&served).await;
    match tokio_tungstenite::connect_async(&url).await {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 503),
        Err(other) => panic!("expected 503, got {other:?}"),
        Ok(_) => panic!("a third session is refused"),
    }

    a.close(None).await.unwrap();
    // The admin notices the close a moment later: try until a session is accepted.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match tokio_tungstenite::connect_async(&url).await {
            Ok(_) => break,
            Err(WsError::Http(response)) if response.status() == 503 => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "a closed session frees its place"
                );
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    served.stop().await;
}

/// Full syncs are limited over all sessions, not only per session: at one a second (burst
/// of one), three sessions asking at once are answered one second apart.
#[tokio::test]
async fn full_syncs_are_rate_limited_over_all_sessions() {
    let served = Served::start(admin::Config {
        full_sync_rate: 1,
        ..admin::Config::new(":memory:")
    })
    .await;
    let mut sockets = vec![
        connect(&served).await,
        connect(&served).await,
        connect(&served).await,
    ];
    let started = tokio::time::Instant::now();
    for socket in &mut sockets {
        send(socket, "MYSELF").await;
    }
    let mut answered = futures_util::future::join_all(sockets.iter_mut().map(async |socket| {
        for _ in 0..5 {
            assert_eq!(next_json(socket).await["eventType"], "MYSELF");
        }
        started.elapsed()
    }))
    .await;
    answered.sort();
    let second = std::time::Duration::from_secs(1);
    assert!(answered[1] >= second, "{answered:?}");
    assert!(answered[2] >= 2 * second, "{answered:?}");
    served.stop().await;
}
