use std::collections::HashMap;
use std::time::Duration;

use super::super::Header;
use super::fd_limit::{FdLimit, raise_fd_limit};
use super::report::{ChangeResult, FanoutReport, RunResult, Settings, verdict};
use super::subscribers::{listener_form, markers};
use super::*;

#[test]
fn markers_are_read_whole() {
    let frame = r#"{"groupType":"SELECTOR","data":[{"name":"fanout-change-1"},{"name":"fanout-change-12"}]}"#;
    assert_eq!(markers(frame), vec![1, 12]);
    assert_eq!(markers("fanout-change-x"), Vec::<u32>::new());
}

#[test]
fn the_listener_form_sends_every_group() {
    let mut held = HashMap::new();
    held.insert("SELECTOR".to_owned(), ("abc".to_owned(), 42));
    assert_eq!(
        listener_form(&held),
        "PLUGIN=00000000000000000000000000000000%2C0&SELECTOR=abc%2C42&\
         RULE=00000000000000000000000000000000%2C0&META_DATA=00000000000000000000000000000000%2C0&\
         APP_AUTH=00000000000000000000000000000000%2C0"
    );
}

fn run_result(kind: FanoutKind, n: usize, keeps_up: bool) -> RunResult {
    RunResult {
        kind,
        subscribers: n,
        requested: n,
        connected: n,
        connect_ms: 100.0,
        connect_admin_cpu_ms: 10,
        changes: vec![ChangeResult {
            change: 1,
            holders: n,
            p50_ms: 1.0,
            p99_ms: 2.0,
            all_ms: Some(3.0),
            admin_cpu_ms: 20,
        }],
        all_hold_ms: Some(if keeps_up { 3.0 } else { 3000.0 }),
        admin_cpu_ms_per_change: 20.0,
        admin_cpu_us_per_subscriber: 20_000.0 / n as f64,
        admin_rss_kib: 20480,
        admin_rss_peak_kib: 40960,
        bench_cpu_ms: 50,
        lost: 0,
        keeps_up,
        why: (!keeps_up).then(|| "too slow".to_owned()),
    }
}

#[test]
fn the_verdict_names_where_the_admin_stops_keeping_up() {
    let runs = vec![
        run_result(FanoutKind::Websocket, 1000, true),
        run_result(FanoutKind::Websocket, 10_000, false),
        run_result(FanoutKind::Http, 1000, true),
    ];
    let v = verdict(FanoutKind::Websocket, &runs, 1000);
    assert!(
        v.starts_with("websocket: one admin stops keeping up at 10000 subscribers (too slow); it kept up with 1000"),
        "{v}"
    );
    assert!(v.contains("at 2.0 µs of admin CPU per subscriber"), "{v}");
    assert!(v.contains("about 500000 subscribers"), "{v}");
    let v = verdict(FanoutKind::Http, &runs, 1000);
    assert!(
        v.starts_with("http: one admin keeps up with 1000 subscribers"),
        "{v}"
    );
}

#[test]
fn the_report_renders_and_serialises() {
    let report = FanoutReport {
        header: Header::new("fanout", Duration::from_secs(1)),
        settings: Settings {
            sizes: vec![1000],
            changes: 1,
            keep_up_ms: 1000,
            connect_concurrency: 256,
        },
        fd_limit: FdLimit {
            needed: 2024,
            before: (Some(1024), Some(4096)),
            after: (Some(2024), Some(4096)),
            action: "raised".into(),
        },
        runs: vec![run_result(FanoutKind::Http, 1000, true)],
        verdict: vec!["http: fine".into()],
    };
    let text = render(&report);
    let row = text.lines().find(|l| l.starts_with("http ")).unwrap();
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        [
            "http", "1000", "100", "3.000", "2.000", "20", "20.0", "20", "40", "50", "yes"
        ]
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["fd_limit"]["before"], serde_json::json!([1024, 4096]));
    assert_eq!(json["runs"][0]["kind"], "http");
    assert_eq!(json["runs"][0]["changes"][0]["all_ms"], 3.0);
}

#[test]
fn a_low_soft_limit_is_raised() {
    let l = raise_fd_limit(64);
    assert!(l.after.0.is_none_or(|s| s >= 64), "{l:?}");
}
