//! Criterion benches: request matching over 100 / 1k / 10k divide selectors, applying one sync
//! event to a config of 10k selectors (incrementally, and recompiling everything as
//! `--emulate-bug rebuild-per-change` does), and each load balancer over 10 upstreams. Run
//! `cargo bench --workspace --bench gateway -- --quick`.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::net::IpAddr;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use gateway::bench::{Applier, Balancer, Matcher};
use model::{
    ConditionData, ConfigSet, DataEvent, DataEventType, EventPayload, LoadBalance, PluginData,
    RuleData, SelectorData,
};

/// `n` divide selectors `/svc{i}/…` (two AND conditions), each with one rule. `indexed`: the
/// first condition is `uri startsWith /svc{i}/` (the selector index narrows the candidates);
/// otherwise it is `uri match /svc{i}/**` (ShenYu's registered-client shape, which the index
/// cannot narrow: every selector is evaluated).
fn config(n: usize, indexed: bool) -> ConfigSet {
    let plugin = PluginData {
        id: "5".into(),
        name: "divide".into(),
        enabled: true,
        sort: 200,
        ..Default::default()
    };
    let selectors = (0..n)
        .map(|i| SelectorData {
            id: format!("s{i}"),
            plugin_name: "divide".into(),
            enabled: true,
            sort: i32::try_from(i).unwrap_or(i32::MAX),
            handle: Some(format!(
                r#"[{{"upstreamUrl":"10.0.{}.{}:8080","weight":50,"status":true}}]"#,
                i / 250,
                i % 250
            )),
            condition_list: vec![
                if indexed {
                    ConditionData::new("uri", "startsWith", "/", &format!("/svc{i}/"))
                } else {
                    ConditionData::new("uri", "match", "/", &format!("/svc{i}/**"))
                },
                ConditionData::new("req_method", "=", "", "GET"),
            ],
            ..Default::default()
        })
        .collect();
    let rules = (0..n)
        .map(|i| RuleData {
            id: format!("r{i}"),
            selector_id: format!("s{i}"),
            plugin_name: "divide".into(),
            enabled: true,
            handle: Some(r#"{"timeout":3000}"#.into()),
            condition_data_list: vec![ConditionData::new(
                "uri",
                "match",
                "/",
                &format!("/svc{i}/**"),
            )],
            ..Default::default()
        })
        .collect();
    ConfigSet {
        plugins: vec![plugin],
        selectors,
        rules,
        meta_data: Vec::new(),
    }
}

fn matching(c: &mut Criterion) {
    let mut group = c.benchmark_group("match");
    for (indexed, suffix) in [(true, ""), (false, "_unindexed")] {
        for n in [100, 1_000, 10_000] {
            let matcher = Matcher::new(config(n, indexed));
            let hit = format!("/svc{}/order/findById", n / 2);
            assert_eq!(matcher.route(&hit).as_deref(), Ok(&*format!("s{}", n / 2)));
            assert!(matcher.route("/nowhere").is_err());
            group.bench_with_input(
                BenchmarkId::new(format!("hit{suffix}"), n),
                &hit,
                |b, path| {
                    b.iter(|| matcher.route(black_box(path)));
                },
            );
            group.bench_with_input(
                BenchmarkId::new(format!("miss{suffix}"), n),
                "/nowhere",
                |b, path| {
                    b.iter(|| matcher.route(black_box(path)));
                },
            );
        }
    }
    group.finish();
}

/// One event applied to 10k held selectors (each with a rule): what a sync increment costs.
fn applying(c: &mut Criterion) {
    let held = 10_000;
    let config = config(held, true);
    let mut updated = config.selectors[held / 2].clone();
    updated.sort = -1;
    let updated_again = updated.clone();
    let mut created = config.selectors[0].clone();
    created.id = "new".into();
    let mut rule = config.rules[held / 2].clone();
    rule.sort = 7;
    let applier = Applier::new(config);
    let mut group = c.benchmark_group("apply");
    let events = [
        ("selector_update", EventPayload::Selector(vec![updated])),
        ("selector_create", EventPayload::Selector(vec![created])),
        ("rule_update", EventPayload::Rule(vec![rule])),
    ];
    for (name, payload) in events {
        let event = DataEvent::new(DataEventType::Update, payload);
        group.bench_with_input(BenchmarkId::new(name, held), &event, |b, event| {
            b.iter_batched(
                || event.clone(),
                |event| applier.apply(event),
                BatchSize::SmallInput,
            );
        });
    }
    // The same selector update on a gateway that recompiles everything per event (APISIX
    // #13069, `--emulate-bug rebuild-per-change`): the cost the regression case makes visible.
    let event = DataEvent::new(
        DataEventType::Update,
        EventPayload::Selector(vec![updated_again]),
    );
    group.sample_size(10);
    group.bench_with_input(
        BenchmarkId::new("selector_update_rebuilt", held),
        &event,
        |b, event| {
            b.iter_batched(
                || event.clone(),
                |event| applier.rebuild(event),
                BatchSize::SmallInput,
            );
        },
    );
    group.finish();
}

fn balancers(c: &mut Criterion) {
    let handle = format!(
        "[{}]",
        (0..10)
            .map(|i| format!(
                r#"{{"upstreamUrl":"10.0.0.{i}:8080","weight":{},"status":true}}"#,
                10 + i * 10
            ))
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut group = c.benchmark_group("balance");
    for kind in [
        LoadBalance::Random,
        LoadBalance::RoundRobin,
        LoadBalance::Hash,
        LoadBalance::LeastActive,
        LoadBalance::P2c,
        LoadBalance::ShortestResponse,
    ] {
        let balancer = Balancer::new(&handle, kind);
        let client: IpAddr = [192, 168, 7, 9].into();
        group.bench_function(kind.as_str(), |b| {
            b.iter(|| balancer.pick(black_box(client)));
        });
    }
    group.finish();
}

criterion_group!(benches, matching, applying, balancers);
criterion_main!(benches);
