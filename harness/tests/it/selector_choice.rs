//! End-to-end property test of the choice among several selectors and rules: proptest
//! generates a divide plugin's selectors (distinct `sort`s in a shuffled creation order,
//! enabled or not, custom or full flow, `and`/`or`, continued or not, 0–3 `uri`/`header`
//! conditions) each with 0–3 rules (alike), pushes them through the admin to a live gateway,
//! and compares the selector and rule the gateway names (`x-gantry-selector-id`,
//! `x-gantry-rule-id`, or the -107 / -102 answers) with [`Reference::choose`], the
//! harness's independent model of `shenyu-semantics.md` §1.
//!
//! One proptest case is one selector set, alone in the plugin: created, awaited (digests
//! equal), probed, deleted, awaited. `sort`s are distinct because ShenYu breaks equal sorts
//! by list order, which the admin does not define. The planted-bug trial runs the same
//! property against a model that ignores `sort` and requires it to fail.

use crate::live::DivideTopology;
use std::time::Instant;

use futures_util::{StreamExt, TryStreamExt, stream};
use harness::internals::probe::{RULE_ID_HEADER, SELECTOR_ID_HEADER};
use harness::reference::{Choice, Outcome, PlantedBug, Reference, Request, Rule, Selector};
use libtest_mimic::{Failed, Trial};
use model::{ConditionData, ConditionDto, MatchMode, RuleDto, SelectorDto, SyncMode};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

/// Selector sets per run.
const CASES: u32 = 40;
/// Admin calls in flight at once.
const IN_FLIGHT: usize = 4;
/// The header some conditions read.
const KEY: &str = "x-k";

/// The conditions a selector or rule may have (type, operator, value), overlapping on
/// [`PATHS`] so that several selectors match one request.
const CONDITIONS: &[(&str, &str, &str)] = &[
    ("uri", "startsWith", "/a"),
    ("uri", "startsWith", "/a/b"),
    ("uri", "startsWith", "/"),
    ("uri", "=", "/a/b"),
    ("uri", "endsWith", "b"),
    ("uri", "match", "/a/**"),
    ("uri", "contains", "c"),
    ("header", "=", "1"),
];

/// The request paths.
const PATHS: &[&str] = &["/a", "/a/b", "/a/c", "/b", "/a/b/c", "/x/b"];

/// A generated selector or rule; `id` is its name until the admin gives it an id.
#[derive(Debug, Clone)]
struct Item {
    sort: i32,
    enabled: bool,
    or: bool,
    conditions: Vec<(&'static str, &'static str, &'static str)>,
}

/// A generated selector and its rules.
#[derive(Debug, Clone)]
struct Sel {
    item: Item,
    full_flow: bool,
    continued: bool,
    rules: Vec<Item>,
}

/// A selector set and the requests (path, whether `x-k: 1` is sent) sent to it.
#[derive(Debug, Clone)]
struct Case {
    selectors: Vec<Sel>,
    requests: Vec<(&'static str, bool)>,
}

fn item(max_conditions: usize) -> impl Strategy<Value = Item> {
    (
        prop::bool::weighted(0.85),
        prop::bool::weighted(0.3),
        prop::collection::vec(select(CONDITIONS), 0..=max_conditions),
    )
        .prop_map(|(enabled, or, conditions)| Item {
            sort: 0,
            enabled,
            or,
            conditions,
        })
}

/// `items` given the distinct sorts `1..=n` in a shuffled order.
fn sorted<T: Clone + std::fmt::Debug>(
    items: Vec<T>,
    set: fn(&mut T, i32),
) -> impl Strategy<Value = Vec<T>> {
    let sorts: Vec<i32> = (1..).take(items.len()).collect();
    Just(sorts).prop_shuffle().prop_map(move |sorts| {
        let mut items = items.clone();
        for (it, s) in items.iter_mut().zip(sorts) {
            set(it, s * 10);
        }
        items
    })
}

fn selector() -> impl Strategy<Value = Sel> {
    (
        item(3),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.85),
        prop::collection::vec(item(2), 0..=3)
            .prop_flat_map(|rules| sorted(rules, |r, s| r.sort = s)),
    )
        .prop_map(|(item, full_flow, continued, rules)| Sel {
            item,
            full_flow,
            continued,
            rules,
        })
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(selector(), 1..=5)
            .prop_flat_map(|sels| sorted(sels, |s, sort| s.item.sort = sort)),
        prop::collection::vec((select(PATHS), any::<bool>()), 1..=6),
    )
        .prop_map(|(selectors, requests)| Case {
            selectors,
            requests,
        })
}

fn conditions(item: &Item) -> Vec<ConditionData> {
    item.conditions
        .iter()
        .map(|&(t, op, v)| ConditionData::new(t, op, if t == "header" { KEY } else { "/" }, v))
        .collect()
}

fn dtos(item: &Item) -> Vec<ConditionDto> {
    conditions(item)
        .iter()
        .map(|c| ConditionDto::new(&c.param_type, &c.operator, &c.param_name, &c.param_value))
        .collect()
}

fn mode(item: &Item) -> MatchMode {
    if item.or {
        MatchMode::Or
    } else {
        MatchMode::And
    }
}

/// Whether the gateway's answer is the model's choice; a -102 answer that names no selector
/// agrees with any "no rule".
fn agrees(seen: &Choice, want: &Choice) -> bool {
    match (seen, want) {
        (Choice::NoRule { selector }, Choice::NoRule { .. }) if selector.is_empty() => true,
        _ => seen == want,
    }
}

/// What the gateway answered: the choice it names (a -102 without the selector header names
/// none: an empty selector), or something else.
fn seen(status: u16, selector: Option<String>, rule: Option<String>, body: &str) -> Choice {
    let code = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|j| j["code"].as_i64());
    match (status, selector, rule, code) {
        (200, Some(selector), Some(rule), _) => Choice::Chosen { selector, rule },
        (404, _, _, Some(-107)) => Choice::NoSelector,
        (404, selector, _, Some(-102)) => Choice::NoRule {
            selector: selector.unwrap_or_default(),
        },
        _ => Choice::Failed(Outcome::Unmodelled {
            reason: format!(
                "HTTP {status}: {}",
                body.chars().take(200).collect::<String>()
            ),
        }),
    }
}

struct Live {
    base: DivideTopology,
    next: std::cell::Cell<u64>,
    pushed: std::cell::Cell<(usize, usize)>,
}

impl Live {
    async fn start(mode: SyncMode) -> Result<Live, Failed> {
        let base = DivideTopology::start(mode).await?;
        if base.baseline != 0 {
            return Err(format!(
                "the admin starts with {} selectors, not none",
                base.baseline
            )
            .into());
        }
        Ok(Live {
            base,
            next: std::cell::Cell::new(0),
            pushed: std::cell::Cell::new((0, 0)),
        })
    }

    /// Creates `case`'s selectors and rules, probes its requests, deletes everything: the
    /// model of what was made (with the admin's ids) and the gateway's answers.
    async fn run(&self, case: &Case) -> Result<(Vec<Selector>, Vec<Choice>), String> {
        let run = self.next.get();
        self.next.set(run + 1);
        let made: Vec<Result<Selector, String>> = stream::iter(
            case.selectors
                .iter()
                .enumerate()
                .map(|(i, s)| self.create(run, i, s)),
        )
        .buffered(IN_FLIGHT)
        .collect()
        .await;
        let ids: Vec<String> = made.iter().flatten().map(|s| s.id.clone()).collect();
        let result = async {
            let model: Vec<Selector> = made.into_iter().collect::<Result<_, _>>()?;
            self.base
                .converge(ids.len(), "after creating the selectors")
                .await?;
            let answers: Vec<Choice> = stream::iter(case.requests.iter().map(|r| self.probe(r)))
                .buffered(IN_FLIGHT)
                .try_collect()
                .await?;
            let (n, r) = self.pushed.get();
            self.pushed.set((n + 1, r + answers.len()));
            Ok((model, answers))
        }
        .await;
        if !ids.is_empty() {
            self.base
                .admin
                .delete_selectors(&ids)
                .await
                .map_err(|e| format!("deleting the selectors: {e}"))?;
        }
        self.base
            .converge(0, "after deleting the selectors")
            .await?;
        result
    }

    /// Creates selector `i` of run `run` and its rules; returns its model.
    async fn create(&self, run: u64, i: usize, s: &Sel) -> Result<Selector, String> {
        let refused = |what: String, e: &dyn std::fmt::Display| {
            format!("the admin refused {what} (the generator must only make what it accepts): {e}")
        };
        let name = format!("choice-{run}-s{i}");
        let dto = SelectorDto {
            plugin_id: Some(self.base.plugin_id.clone()),
            name: Some(name.clone()),
            selector_type: Some(if s.full_flow { 0 } else { 1 }),
            match_mode: Some(mode(&s.item).code()),
            sort: Some(s.item.sort),
            enabled: Some(s.item.enabled),
            loged: Some(false),
            continued: Some(s.continued),
            match_restful: Some(false),
            handle: Some(self.base.handle.clone()),
            selector_conditions: Some(dtos(&s.item)),
            ..Default::default()
        };
        let id = self
            .base
            .admin
            .create_selector(&dto)
            .await
            .map_err(|e| refused(format!("selector {name} {s:?}"), &e))?;
        let mut rules = Vec::new();
        for (j, r) in s.rules.iter().enumerate() {
            let rule_name = format!("{name}-r{j}");
            let dto = RuleDto {
                selector_id: Some(id.clone()),
                name: Some(rule_name.clone()),
                match_mode: Some(mode(r).code()),
                sort: Some(r.sort),
                enabled: Some(r.enabled),
                loged: Some(false),
                match_restful: Some(false),
                handle: Some(harness::internals::lower::DIVIDE_RULE_HANDLE.to_owned()),
                rule_conditions: Some(dtos(r)),
                ..Default::default()
            };
            let made = self.base.admin.create_rule(&dto).await;
            let rule_id = match made {
                Ok(Some(rule_id)) => rule_id,
                other => {
                    let _ = self
                        .base
                        .admin
                        .delete_selectors(std::slice::from_ref(&id))
                        .await;
                    return Err(match other {
                        Err(e) => refused(format!("rule {rule_name} {r:?}"), &e),
                        _ => format!("rule {rule_name} was not found after its creation"),
                    });
                }
            };
            rules.push(Rule {
                id: rule_id,
                sort: r.sort,
                enabled: r.enabled,
                match_mode: mode(r).code(),
                conditions: conditions(r),
            });
        }
        Ok(Selector {
            id,
            sort: s.item.sort,
            enabled: s.item.enabled,
            full_flow: s.full_flow,
            match_mode: mode(&s.item).code(),
            continued: s.continued,
            conditions: conditions(&s.item),
            rules,
        })
    }

    async fn probe(&self, &(path, key): &(&'static str, bool)) -> Result<Choice, String> {
        let mut req = self
            .base
            .http
            .get(format!("{}{path}", self.base.topo.gateway().url()));
        if key {
            req = req.header(KEY, "1");
        }
        let resp = req.send().await.map_err(|e| format!("GET {path}: {e}"))?;
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (selector, rule) = (header(SELECTOR_ID_HEADER), header(RULE_ID_HEADER));
        let status = resp.status().as_u16();
        let body = resp.text().await.map_err(|e| format!("GET {path}: {e}"))?;
        Ok(seen(status, selector, rule, &body))
    }
}

fn request(&(path, key): &(&'static str, bool)) -> Request {
    let req = Request::new("GET", path);
    if key { req.with_header(KEY, "1") } else { req }
}

/// Every request's answer against the model's choice; ids are shown as `s<i>` / `s<i>.r<j>`
/// (the generated selector and rule).
fn compare(
    model: &Reference,
    case: &Case,
    made: &[Selector],
    answers: &[Choice],
) -> Result<(), String> {
    let name = |id: &str| {
        made.iter()
            .enumerate()
            .find_map(|(i, s)| {
                if s.id == id {
                    return Some(format!("s{i}"));
                }
                let j = s.rules.iter().position(|r| r.id == id)?;
                Some(format!("s{i}.r{j}"))
            })
            .unwrap_or_else(|| id.to_owned())
    };
    let shown = |c: &Choice| match c {
        Choice::Chosen { selector, rule } => {
            format!("selector {}, rule {}", name(selector), name(rule))
        }
        Choice::NoRule { selector } if selector.is_empty() => "no rule (-102)".to_owned(),
        Choice::NoRule { selector } => format!("selector {}, no rule (-102)", name(selector)),
        Choice::NoSelector => "no selector (-107)".to_owned(),
        Choice::Failed(o) => o.to_string(),
    };
    let wrong: Vec<String> = case
        .requests
        .iter()
        .zip(answers)
        .filter_map(|(r, seen)| {
            let want = model.choose(made, &request(r));
            (!agrees(seen, &want)).then(|| {
                format!(
                    "GET {}{}: the gateway chose {}, the model {}",
                    r.0,
                    if r.1 { " with x-k: 1" } else { "" },
                    shown(seen),
                    shown(&want)
                )
            })
        })
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("\n"))
    }
}

/// The property's verdict (its failure message names the seed and the shrunk case).
fn run_property(trial: &str, model: &Reference) -> Result<Result<(), String>, Failed> {
    let seed = crate::properties::seed_for(trial);
    eprintln!("{trial}: seed {seed:#x} (GANTRY_PROPTEST_SEED={seed:#x} reruns it)");
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let live = rt.block_on(Live::start(SyncMode::Websocket))?;
    rt.block_on(live.base.converge(0, "at start"))?;
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        max_shrink_iters: 200,
        max_shrink_time: 20_000,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let result = runner.run(&case(), |case| {
        let (made, answers) = rt.block_on(live.run(&case)).map_err(TestCaseError::fail)?;
        compare(model, &case, &made, &answers).map_err(TestCaseError::fail)
    });
    let verdict = match result {
        Ok(()) => Ok(()),
        Err(TestError::Abort(why)) => Err(format!("proptest aborted: {why}")),
        Err(TestError::Fail(why, minimal)) => Err(format!(
            "{trial}: the gateway's choice disagrees with the reference model (seed {seed:#x}; \
             rerun with GANTRY_PROPTEST_SEED={seed:#x}).\n{why}\nMinimal case:\n{minimal:#?}"
        )),
    };
    let pushed = live.pushed.get();
    eprintln!(
        "{trial}: {} selector sets, {} requests in {:.1} s",
        pushed.0,
        pushed.1,
        started.elapsed().as_secs_f64()
    );
    Ok(verdict)
}

fn selector_choice() -> Result<(), Failed> {
    run_property("selector_choice@websocket", &Reference::new())?.map_err(Failed::from)
}

/// The property must fail when the model ignores `sort`, naming the disagreement.
fn planted_bug() -> Result<(), Failed> {
    let trial = "selector_choice_planted_bug@websocket";
    let verdict = run_property(trial, &Reference::with_planted_bug(PlantedBug::IgnoresSort))?;
    let Err(message) = verdict else {
        return Err("the property passed with a model that ignores `sort`".into());
    };
    println!("{trial}: the planted bug was caught:\n{message}");
    let checks = [
        (
            message.contains("GANTRY_PROPTEST_SEED="),
            "the message names the seed",
        ),
        (
            message.contains("the gateway chose") && message.contains("the model"),
            "the message shows both choices",
        ),
        (
            message.contains("Minimal case"),
            "the message shows the minimal case",
        ),
    ];
    crate::all_hold(&checks, &message)
}

/// `selector_choice@websocket` and `selector_choice_planted_bug@websocket`.
pub(crate) fn trials() -> Vec<Trial> {
    vec![
        Trial::test("selector_choice@websocket", selector_choice),
        Trial::test("selector_choice_planted_bug@websocket", planted_bug),
    ]
}
