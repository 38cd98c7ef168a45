use std::time::Duration;

use super::super::Header;
use super::super::load::{Pass, Summary};
use super::super::procstat::Usage;
use super::super::upstream::UpstreamKind;
use super::drive::cost;
use super::report::{AddedRatio, Cost, GatewaySetup, KindResult, PassName, ProxyReport, Settings};
use super::setup::PATH;
use super::summary::{regressions, stalls, summarise, upstream_use};
use super::*;

fn s(rps: f64, p50: f64) -> Summary {
    Summary {
        rps,
        p50_ms: p50,
        p99_ms: p50 * 2.0,
        p999_ms: p50 * 3.0,
        max_ms: p50 * 4.0,
        ok: 10,
        failed: 0,
        connects: 1,
        timer_late_p99_ms: 0.1,
    }
}

fn passes() -> Vec<Pass> {
    vec![
        Pass::Closed {
            connections: 1,
            duration: Duration::from_secs(1),
        },
        Pass::Open {
            rate: 100,
            connections: 1,
            duration: Duration::from_secs(1),
        },
    ]
}

/// A closed pass's cost: `cpu` µs and `cs` context switches per 100 requests.
fn per_request(cpu: f64, cs: f64) -> Cost {
    Cost {
        cpu_us_per_request: cpu,
        switches_per_100: cs,
    }
}

fn result() -> KindResult {
    let targets = vec![
        ("direct".to_owned(), None),
        ("nginx".to_owned(), None),
        ("gantry-1".to_owned(), Some(1)),
    ];
    // rounds[target][round][pass]
    let rounds = vec![
        vec![vec![s(1000.0, 0.10), s(100.0, 0.10)]; 3],
        vec![
            vec![s(500.0, 0.20), s(100.0, 0.15)],
            vec![s(400.0, 0.30), s(100.0, 0.15)],
            vec![s(600.0, 0.20), s(100.0, 0.15)],
        ],
        vec![vec![s(250.0, 0.30), s(100.0, 0.20)]; 3],
    ];
    let uses = vec![
        upstream_use("direct", 16, 1000, 16),
        upstream_use("nginx", 16, 1000, 16),
        upstream_use("gantry-1", 900, 1000, 900),
    ];
    // costs[target][round]: none for direct; each field's median on its own.
    let costs = vec![
        Vec::new(),
        vec![
            per_request(10.0, 5.0),
            per_request(20.0, 6.0),
            per_request(12.0, 50.0),
        ],
        vec![per_request(24.0, 100.0); 3],
    ];
    summarise(
        UpstreamKind::Split,
        &targets,
        &passes(),
        &rounds,
        &costs,
        uses,
    )
}

#[test]
fn cost_per_request_from_two_readings() {
    let before = Usage {
        cpu_us: 1_000,
        switches: 10,
    };
    let after = Usage {
        cpu_us: 31_000,
        switches: 60,
    };
    let mut pass = s(1000.0, 0.1);
    pass.ok = 1_000;
    assert_eq!(
        cost(Some(before), Some(after), &pass),
        Some(Cost {
            cpu_us_per_request: 30.0,
            switches_per_100: 5.0
        })
    );
    assert_eq!(cost(None, Some(after), &pass), None, "no first reading");
    assert_eq!(cost(Some(before), None, &pass), None, "the process is gone");
    pass.ok = 0;
    assert_eq!(cost(Some(before), Some(after), &pass), None, "no request");
}

#[test]
fn medians_added_latency_and_ratios() {
    let k = result();
    let nginx = &k.targets[1];
    assert_eq!(nginx.closed.rps, 500.0);
    assert_eq!(nginx.closed.ok, 30);
    assert!(
        (nginx.added[0].p50_ms - 0.1).abs() < 1e-9,
        "{:?}",
        nginx.added
    );
    assert!((nginx.added[1].p50_ms - 0.05).abs() < 1e-9);
    assert!(k.targets[0].added.is_empty());
    let r = &k.ratios[0];
    assert_eq!((r.selectors, r.throughput), (1, 0.5));
    let AddedRatio { pass, ratio } = r.added_latency[0];
    assert_eq!(pass, PassName::Closed);
    assert!((ratio.unwrap() - 2.0).abs() < 1e-9);
    assert!((r.added_latency[1].ratio.unwrap() - 2.0).abs() < 1e-9);
}

#[test]
fn a_delayed_ack_stall_is_called_out() {
    let mut k = result();
    assert!(k.stalls.is_empty(), "{:?}", k.stalls);
    k.targets[2].open[0].summary.p99_ms = 44.0;
    let s = stalls(UpstreamKind::Split, &k.targets);
    assert_eq!(s.len(), 1, "{s:?}");
    assert!(
        s[0].starts_with("gantry-1 with the `split` upstream at 100 rps: p99 44.0 ms"),
        "{s:?}"
    );
}

#[test]
fn a_connection_per_request_is_flagged() {
    let k = result();
    assert_eq!(k.targets[0].upstream.warning, None);
    let w = k.targets[2].upstream.warning.as_deref().unwrap();
    assert!(
        w.starts_with("gantry-1 opened 900 upstream connections for 1000 requests"),
        "{w}"
    );
    let reused = upstream_use("gantry-1", 0, 5000, 3);
    assert_eq!(
        (reused.requests_per_connection, reused.warning),
        (None, None)
    );
}

#[test]
fn the_report_renders_as_tables() {
    let report = ProxyReport {
        header: Header {
            gantry_version: "0.1.0",
            bench: "proxy",
            profile: "release",
            machine: super::super::Machine {
                cpus: 2,
                cpu_model: Some("Test CPU".into()),
                memory_mib: Some(1024),
                kernel: Some("6.1".into()),
            },
            took_s: 1.0,
        },
        settings: Settings {
            connections: 1,
            duration_ms: 1000,
            warmup_ms: 100,
            rates: vec![100],
            rounds: 3,
            selectors: vec![1],
            nginx_workers: 2,
            nginx_keepalive: 64,
            nginx: Some("/usr/sbin/nginx".into()),
            upstream_nodelay: true,
            path: PATH,
            baseline: None,
        },
        notes: vec!["a note".into()],
        setup: vec![GatewaySetup {
            selectors: 1,
            load_ms: 5.0,
            sync_ms: 50.0,
        }],
        results: vec![result()],
    };
    let text = render(&report);
    assert!(text.contains("upstream `split`"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("gantry-1") && l.contains("250") && l.contains("+0.200")),
        "{text}"
    );
    assert!(
        text.contains(
            "gantry-1 / nginx: throughput 0.50×, added p50 closed 2.00×, @100 2.00×, \
             CPU per request 2.00×"
        ),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("nginx") && l.contains(" 12.0 ") && l.contains(" 6.0 ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("direct") && l.contains(" - ")),
        "{text}"
    );
    assert_eq!(
        json_cost(&report, 2),
        serde_json::json!({"cpu_us_per_request": 24.0, "switches_per_100": 100.0})
    );
    assert_eq!(json_cost(&report, 0), serde_json::Value::Null);
    assert!(text.contains("note: a note"), "{text}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["bench"], "proxy");
    assert_eq!(json["results"][0]["kind"], "split");
    assert_eq!(
        json["results"][0]["targets"][2]["added"][1]["pass"],
        "open@100"
    );
    let ratio = &json["results"][0]["ratios"][0]["added_latency"][0];
    assert_eq!(ratio["pass"], "closed");
    assert!(
        (ratio["ratio"].as_f64().unwrap() - 2.0).abs() < 1e-9,
        "{ratio}"
    );
    assert_eq!(json["results"][0]["targets"][1]["open"][0]["rate"], 100);
    assert_eq!(json["results"][0]["targets"][1]["open"][0]["p50_ms"], 0.15);
}

fn json_cost(report: &ProxyReport, target: usize) -> serde_json::Value {
    serde_json::to_value(report).unwrap()["results"][0]["targets"][target]["cost"].clone()
}

/// direct, nginx, gantry-1 and baseline-1 (the `--baseline` revision's gateway): gantry-1
/// does 250 rps against the baseline's `baseline_rps`.
fn with_baseline(baseline_rps: f64) -> KindResult {
    let targets = vec![
        ("direct".to_owned(), None),
        ("nginx".to_owned(), None),
        ("gantry-1".to_owned(), Some(1)),
        ("baseline-1".to_owned(), Some(1)),
    ];
    let rounds = vec![
        vec![vec![s(1000.0, 0.10), s(100.0, 0.10)]; 3],
        vec![vec![s(500.0, 0.20), s(100.0, 0.15)]; 3],
        vec![vec![s(250.0, 0.30), s(100.0, 0.20)]; 3],
        vec![vec![s(baseline_rps, 0.50), s(100.0, 0.20)]; 3],
    ];
    let costs = vec![
        Vec::new(),
        vec![per_request(10.0, 1.0); 3],
        vec![per_request(20.0, 1.0); 3],
        vec![per_request(40.0, 1.0); 3],
    ];
    let uses = ["direct", "nginx", "gantry-1", "baseline-1"]
        .iter()
        .map(|t| upstream_use(t, 16, 1000, 16))
        .collect();
    summarise(
        UpstreamKind::Whole,
        &targets,
        &passes(),
        &rounds,
        &costs,
        uses,
    )
}

#[test]
fn the_baseline_is_a_reference_not_a_gantry() {
    let k = with_baseline(200.0);
    assert_eq!(
        k.ratios.len(),
        1,
        "only gantry-1 is set against nginx: {:?}",
        k.ratios
    );
    let r = &k.baseline_ratios[0];
    assert_eq!((r.selectors, r.throughput), (1, 1.25));
    assert_eq!(r.cpu_per_request, Some(0.5));
    // Added p50 in the closed pass: 0.20 against the baseline's 0.40.
    assert!(
        (r.added_latency[0].ratio.unwrap() - 0.5).abs() < 1e-9,
        "{r:?}"
    );
    assert!(regressions(&[k], "main", 0.9).is_empty());
}

#[test]
fn a_throughput_below_the_threshold_is_a_regression() {
    let k = with_baseline(300.0);
    let lines = regressions(&[k], "main", 0.9);
    assert_eq!(
        lines,
        ["[whole] gantry-1 at 0.83× the throughput of main's (threshold 0.90×)"]
    );
    let k = with_baseline(300.0);
    assert!(
        regressions(&[k], "main", 0.8).is_empty(),
        "0.83× is above 0.80×"
    );
}
