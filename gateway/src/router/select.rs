//! Selector then rule selection (ShenYu `AbstractShenyuPlugin`, semantics §1).
//!
//! Selectors and rules arrive sorted by `sort` ascending. Every enabled candidate is evaluated
//! (so any candidate's condition error surfaces); among the matches the highest score wins
//! (condition count for `and`, 0 for `or`), ties go to the earliest, i.e. lowest `sort`.
//!
//! A plugin's selectors are kept in a [`SelectorTable`] with a [`SelectorIndex`] built when
//! the snapshot is compiled, so a request only evaluates the selectors that can match its path;
//! the result (selector or error) is the one the scan of every selector gives.
//!
//! The tables know no plugin: a selector carries a payload `S` and each rule a payload `R`,
//! which the plugin owning the table compiles from their handles (see `crate::plugin`).

use std::sync::Arc;

use model::{MatchMode, RuleData, SelectorData, SelectorType};

use imbl::OrdMap;

use super::index::{Entry, Order, SelectorIndex};
use super::{Condition, MatchError, RequestView, eval_all};

/// A selector compiled for matching, with its rules and its plugin's payloads.
#[derive(Debug)]
pub(crate) struct CompiledSelector<S, R> {
    /// Selector id.
    pub(crate) id: Arc<str>,
    enabled: bool,
    selector_type: SelectorType,
    match_mode: MatchMode,
    continued: bool,
    conditions: Vec<Condition>,
    /// What the plugin compiled from the selector (its handle).
    pub(crate) handle: S,
    /// The selector's rules, sorted by `sort`.
    pub(crate) rules: Vec<CompiledRule<R>>,
}

/// A rule compiled for matching, with its plugin's payload.
#[derive(Debug)]
pub(crate) struct CompiledRule<R> {
    /// Rule id.
    pub(crate) id: Arc<str>,
    enabled: bool,
    match_mode: MatchMode,
    conditions: Vec<Condition>,
    /// What the plugin compiled from the rule (its handle).
    pub(crate) handle: R,
}

/// Which rule a matched selector runs with.
#[derive(Debug)]
pub(crate) enum RuleChoice<'s, R> {
    /// `continued == false`: ShenYu's synthesized `default_rule` with a default handle.
    Default,
    /// A real rule.
    Rule(&'s CompiledRule<R>),
}

impl<R> Clone for RuleChoice<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for RuleChoice<'_, R> {}

/// The id ShenYu gives the synthesized rule of a non-continued selector.
pub(crate) const DEFAULT_RULE_ID: &str = "default_rule";

impl<S, R> CompiledSelector<S, R> {
    /// Compiles a selector and its rules (in order), with the payloads the plugin compiled:
    /// `handle` for the selector, `rule_handle` for each rule.
    pub(crate) fn compile<'r>(
        s: &SelectorData,
        handle: S,
        rules: impl IntoIterator<Item = &'r RuleData>,
        mut rule_handle: impl FnMut(&RuleData) -> R,
    ) -> Self {
        CompiledSelector {
            id: Arc::from(s.id.as_str()),
            enabled: s.enabled,
            selector_type: s.selector_type,
            match_mode: s.match_mode,
            continued: s.continued,
            conditions: s.condition_list.iter().map(Condition::compile).collect(),
            handle,
            rules: rules
                .into_iter()
                .map(|r| CompiledRule::compile(r, rule_handle(r)))
                .collect(),
        }
    }

    fn score(&self) -> usize {
        score(self.match_mode, &self.conditions)
    }

    /// Where the selector goes in the index: only where [`Self::matches`] is provably
    /// `Ok(false)` for the paths the entry leaves it out of.
    fn index_entry(&self) -> Entry<'_> {
        if !self.enabled {
            return Entry::Never;
        }
        match self.selector_type {
            SelectorType::FullFlow => Entry::Always,
            SelectorType::Custom => match self.conditions.first() {
                None => Entry::Never,
                // `and` stops at the first false condition: a false `uri` key hides nothing.
                Some(first) if self.match_mode.is_all() => first.uri_key().unwrap_or(Entry::Always),
                Some(_) => Entry::Always,
            },
        }
    }

    fn matches(&self, req: &RequestView<'_>) -> Result<bool, MatchError> {
        if !self.enabled {
            return Ok(false);
        }
        match self.selector_type {
            SelectorType::FullFlow => Ok(true),
            SelectorType::Custom if self.conditions.is_empty() => Ok(false),
            SelectorType::Custom => eval_all(self.match_mode, &self.conditions, req),
        }
    }

    /// Picks the rule: `continued == false` → default rule; full flow → the last rule
    /// without evaluation; otherwise the best enabled matching rule. `None`: no rule.
    pub(crate) fn select_rule(
        &self,
        req: &RequestView<'_>,
    ) -> Result<Option<RuleChoice<'_, R>>, MatchError> {
        if !self.continued {
            return Ok(Some(RuleChoice::Default));
        }
        if self.selector_type == SelectorType::FullFlow {
            return Ok(self.rules.last().map(RuleChoice::Rule));
        }
        let best = best_of(&self.rules, |r| {
            Ok((r.enabled && eval_all(r.match_mode, &r.conditions, req)?).then(|| r.score()))
        })?;
        Ok(best.map(RuleChoice::Rule))
    }
}

impl<R> CompiledRule<R> {
    fn compile(r: &RuleData, handle: R) -> CompiledRule<R> {
        CompiledRule {
            id: Arc::from(r.id.as_str()),
            enabled: r.enabled,
            match_mode: r.match_mode,
            conditions: r
                .condition_data_list
                .iter()
                .map(Condition::compile)
                .collect(),
            handle,
        }
    }

    fn score(&self) -> usize {
        score(self.match_mode, &self.conditions)
    }
}

/// The score of a matching selector or rule among several (ShenYu `manyMatchSelector`): its
/// condition count for code 0 (`and`), 0 for `or` and for every other code, although those
/// are evaluated as `and` (ShenYu compares the code with 0 here).
fn score(mode: MatchMode, conditions: &[Condition]) -> usize {
    match mode {
        MatchMode::And => conditions.len(),
        MatchMode::Or | MatchMode::Other(_) => 0,
    }
}

/// A plugin's compiled selectors, in order, with their index. Persistent: a copy shares
/// everything, and inserting or removing a selector costs O(log n).
#[derive(Debug)]
pub(crate) struct SelectorTable<S, R> {
    selectors: OrdMap<Order, Arc<CompiledSelector<S, R>>>,
    index: SelectorIndex<Arc<CompiledSelector<S, R>>>,
}

impl<S, R> Clone for SelectorTable<S, R> {
    fn clone(&self) -> Self {
        SelectorTable {
            selectors: self.selectors.clone(),
            index: self.index.clone(),
        }
    }
}

impl<S, R> Default for SelectorTable<S, R> {
    fn default() -> Self {
        SelectorTable {
            selectors: OrdMap::new(),
            index: SelectorIndex::default(),
        }
    }
}

impl<S, R> SelectorTable<S, R> {
    /// Adds `selector` at `order`.
    pub(crate) fn insert(&mut self, order: Order, selector: Arc<CompiledSelector<S, R>>) {
        self.index
            .insert(selector.index_entry(), order, selector.clone());
        self.selectors.insert(order, selector);
    }

    /// Removes and returns the selector at `order`.
    pub(crate) fn remove(&mut self, order: Order) -> Option<Arc<CompiledSelector<S, R>>> {
        let selector = self.selectors.remove(&order)?;
        self.index.remove(selector.index_entry(), order);
        Some(selector)
    }

    /// The selectors, in order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &CompiledSelector<S, R>> {
        self.selectors.values().map(|s| &**s)
    }

    /// The index, rendered canonically (see [`SelectorIndex::rendered`]).
    #[cfg(test)]
    pub(crate) fn index_rendered(&self) -> String {
        self.index.rendered()
    }

    /// The selector at `order`, shared.
    #[cfg(test)]
    pub(crate) fn get(&self, order: Order) -> Option<&Arc<CompiledSelector<S, R>>> {
        self.selectors.get(&order)
    }
}

/// Picks the selector among a plugin's selectors. `None`: no match.
///
/// The same result as evaluating every selector in order (`select_selector_linear`), but
/// only the index's candidates for the path are evaluated: the selectors it leaves out would
/// evaluate to `false` without error. The first error in order wins (the scan would stop
/// there), else the highest score, ties to the earliest.
pub(crate) fn select_selector<'s, S, R>(
    table: &'s SelectorTable<S, R>,
    req: &RequestView<'_>,
) -> Result<Option<&'s CompiledSelector<S, R>>, MatchError> {
    let mut best: Option<(Order, usize, &'s CompiledSelector<S, R>)> = None;
    // The earliest error so far, at `stop`: only an earlier selector can change the result.
    let mut error: Option<(Order, MatchError)> = None;
    for bucket in table.index.candidates(req.path) {
        for (&order, s) in bucket {
            if error.as_ref().is_some_and(|(stop, _)| order > *stop) {
                break;
            }
            match s.matches(req) {
                Ok(false) => {}
                Ok(true) => {
                    let score = s.score();
                    if best.is_none_or(|(at, b, _)| score > b || (score == b && order < at)) {
                        best = Some((order, score, &**s));
                    }
                }
                Err(e) => error = Some((order, e)),
            }
        }
    }
    match error {
        Some((_, e)) => Err(e),
        None => Ok(best.map(|(_, _, s)| s)),
    }
}

/// The reference selection [`select_selector`] must agree with: every selector in `sort`
/// order, stopping at the first error (ShenYu's scan).
#[cfg(test)]
pub(crate) fn select_selector_linear<'s, S, R>(
    table: &'s SelectorTable<S, R>,
    req: &RequestView<'_>,
) -> Result<Option<&'s CompiledSelector<S, R>>, MatchError> {
    best_of(table.iter(), |s| Ok(s.matches(req)?.then(|| s.score())))
}

/// The first item with the highest score among those `score_of` accepts; every item is
/// evaluated so that errors are never hidden by an earlier match.
fn best_of<'s, T: 's>(
    items: impl IntoIterator<Item = &'s T>,
    mut score_of: impl FnMut(&'s T) -> Result<Option<usize>, MatchError>,
) -> Result<Option<&'s T>, MatchError> {
    let mut best: Option<(&T, usize)> = None;
    for item in items {
        if let Some(score) = score_of(item)?
            && best.is_none_or(|(_, b)| score > b)
        {
            best = Some((item, score));
        }
    }
    Ok(best.map(|(item, _)| item))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::test_helpers::TestRequest;
    use model::ConditionData;

    fn uri(op: &str, v: &str) -> ConditionData {
        ConditionData::new("uri", op, "/", v)
    }

    fn selector(
        id: &str,
        sort: i32,
        mode: MatchMode,
        conditions: Vec<ConditionData>,
    ) -> SelectorData {
        SelectorData {
            id: id.to_owned(),
            plugin_name: "divide".to_owned(),
            enabled: true,
            sort,
            match_mode: mode,
            condition_list: conditions,
            ..Default::default()
        }
    }

    fn rule(id: &str, sort: i32, mode: MatchMode, conditions: Vec<ConditionData>) -> RuleData {
        RuleData {
            id: id.to_owned(),
            selector_id: "s".to_owned(),
            plugin_name: "divide".to_owned(),
            enabled: true,
            sort,
            match_mode: mode,
            condition_data_list: conditions,
            ..Default::default()
        }
    }

    /// The tables of these tests carry no payloads.
    type Table = SelectorTable<(), ()>;

    fn compile(s: &SelectorData, rules: &[RuleData]) -> CompiledSelector<(), ()> {
        CompiledSelector::compile(s, (), rules, |_| ())
    }

    fn compile_sorted(mut sels: Vec<SelectorData>) -> Table {
        sels.sort_by_key(|s| s.sort);
        let mut table = SelectorTable::default();
        for (pos, s) in sels.iter().enumerate() {
            table.insert(Order::nth(pos), Arc::new(compile(s, &[])));
        }
        table
    }

    type Picked = Result<Option<String>, (u16, String)>;

    /// The indexed selection, checked against the linear one.
    fn select(table: &Table, req: &TestRequest) -> Picked {
        let view = req.view();
        let id = |r: Result<Option<&CompiledSelector<(), ()>>, MatchError>| {
            r.map(|s| s.map(|s| s.id.to_string()))
                .map_err(|e| (e.status.as_u16(), e.message))
        };
        let indexed = id(select_selector(table, &view));
        let linear = id(select_selector_linear(table, &view));
        assert_eq!(indexed, linear, "path {:?}", req.path);
        indexed
    }

    fn pick(table: &Table, path: &str) -> Option<String> {
        select(table, &TestRequest::get(path)).unwrap()
    }

    #[test]
    fn more_and_conditions_beat_lower_sort() {
        let a = selector(
            "A",
            5,
            MatchMode::And,
            vec![uri("startsWith", "/a"), uri("endsWith", "x")],
        );
        let b = selector("B", 1, MatchMode::And, vec![uri("startsWith", "/a")]);
        assert_eq!(
            pick(&compile_sorted(vec![a, b]), "/a/x").as_deref(),
            Some("A")
        );
    }

    #[test]
    fn or_selector_scores_zero() {
        let c = selector(
            "C",
            1,
            MatchMode::Or,
            vec![uri("startsWith", "/a"), uri("=", "/q"), uri("=", "/r")],
        );
        let d = selector("D", 9, MatchMode::And, vec![uri("startsWith", "/a")]);
        assert_eq!(
            pick(&compile_sorted(vec![c, d]), "/a/x").as_deref(),
            Some("D")
        );
    }

    /// An unknown match mode code is evaluated as `and` but scores 0 among several matches,
    /// like `or` (ShenYu's `manyMatchSelector` / `manyMatchRule` score only code 0).
    #[test]
    fn unknown_match_mode_matches_as_and_and_scores_zero() {
        let seven = MatchMode::Other(7);
        let two = vec![uri("startsWith", "/a"), uri("endsWith", "x")];
        let a = selector("A", 1, seven, two.clone());
        let b = selector("B", 2, MatchMode::And, vec![uri("startsWith", "/a")]);
        let table = compile_sorted(vec![a.clone(), b]);
        assert_eq!(pick(&table, "/a/x").as_deref(), Some("B"));
        // Evaluated as `and`: alone, it needs both conditions.
        let alone = compile_sorted(vec![a]);
        assert_eq!(pick(&alone, "/a/x").as_deref(), Some("A"));
        assert_eq!(pick(&alone, "/a/y"), None);
        // Against an `or` selector (score 0 too), the lower sort wins.
        let c = selector("C", 0, MatchMode::Or, vec![uri("startsWith", "/a")]);
        let d = selector("D", 1, seven, two.clone());
        assert_eq!(
            pick(&compile_sorted(vec![d, c]), "/a/x").as_deref(),
            Some("C")
        );
        // Rules alike.
        let s = selector("s", 1, MatchMode::And, vec![uri("startsWith", "/")]);
        let r1 = rule("r1", 1, seven, two);
        let r2 = rule("r2", 2, MatchMode::And, vec![uri("startsWith", "/a")]);
        assert_eq!(
            rule_pick(&s, vec![r1.clone(), r2], "/a/x").as_deref(),
            Some("r2")
        );
        assert_eq!(
            rule_pick(&s, vec![r1.clone()], "/a/x").as_deref(),
            Some("r1")
        );
        assert_eq!(rule_pick(&s, vec![r1], "/a/y"), None);
    }

    #[test]
    fn ties_go_to_lowest_sort_then_list_order() {
        let a = selector("A", 3, MatchMode::And, vec![uri("startsWith", "/a")]);
        let b = selector("B", 2, MatchMode::And, vec![uri("startsWith", "/a")]);
        let c = selector("C", 2, MatchMode::And, vec![uri("match", "/a/**")]);
        assert_eq!(
            pick(&compile_sorted(vec![a, b, c]), "/a/x").as_deref(),
            Some("B")
        );
    }

    #[test]
    fn custom_selector_needs_conditions_and_full_flow_always_matches() {
        let empty = selector("E", 1, MatchMode::And, vec![]);
        assert_eq!(pick(&compile_sorted(vec![empty.clone()]), "/a"), None);
        let full = SelectorData {
            selector_type: SelectorType::FullFlow,
            ..selector("F", 2, MatchMode::And, vec![])
        };
        assert_eq!(
            pick(&compile_sorted(vec![empty, full]), "/anything").as_deref(),
            Some("F")
        );
    }

    #[test]
    fn disabled_selector_is_skipped_and_its_errors_hidden() {
        let mut bad = selector("bad", 1, MatchMode::And, vec![uri("regex", "(")]);
        bad.enabled = false;
        let ok = selector("ok", 2, MatchMode::And, vec![uri("startsWith", "/")]);
        assert_eq!(
            pick(&compile_sorted(vec![bad.clone(), ok.clone()]), "/x").as_deref(),
            Some("ok")
        );
        bad.enabled = true;
        let sels = compile_sorted(vec![ok, bad]);
        let req = TestRequest::get("/x");
        assert_eq!(select(&sels, &req).unwrap_err().0, 500);
    }

    #[test]
    fn index_entries() {
        let compile = |s: SelectorData| compile(&s, &[]);
        let and = |c: Vec<ConditionData>| selector("s", 1, MatchMode::And, c);
        let method = ConditionData::new("req_method", "=", "", "GET");
        assert_eq!(
            compile(and(vec![uri("=", " /a/b\t"), uri("regex", "(")])).index_entry(),
            Entry::Exact("/a/b")
        );
        assert_eq!(
            compile(and(vec![uri("startsWith", "/a/"), method.clone()])).index_entry(),
            Entry::Prefix("/a/")
        );
        assert_eq!(
            compile(and(vec![uri("startsWith", "  ")])).index_entry(),
            Entry::Prefix("")
        );
        // Only the first condition, only `uri`, only `=` and `startsWith`, only `and`.
        assert_eq!(
            compile(and(vec![method, uri("=", "/a")])).index_entry(),
            Entry::Always
        );
        assert_eq!(
            compile(and(vec![uri("match", "/a/**")])).index_entry(),
            Entry::Always
        );
        assert_eq!(
            compile(and(vec![ConditionData::new("URI", "=", "/", "/a")])).index_entry(),
            Entry::Always
        );
        assert_eq!(
            compile(and(vec![ConditionData::new("post", "=", "path", "/a")])).index_entry(),
            Entry::Always
        );
        assert_eq!(
            compile(and(vec![ConditionData::new("header", "=", "x", "/a")])).index_entry(),
            Entry::Always
        );
        assert_eq!(
            compile(selector("s", 1, MatchMode::Or, vec![uri("=", "/a")])).index_entry(),
            Entry::Always
        );
        let full = SelectorData {
            selector_type: SelectorType::FullFlow,
            ..and(vec![uri("=", "/a")])
        };
        assert_eq!(compile(full).index_entry(), Entry::Always);
        // Never matching, never evaluated.
        assert_eq!(compile(and(vec![])).index_entry(), Entry::Never);
        let disabled = SelectorData {
            enabled: false,
            ..and(vec![uri("regex", "(")])
        };
        assert_eq!(compile(disabled).index_entry(), Entry::Never);
    }

    #[test]
    fn indexed_selection_keeps_errors_and_ties() {
        let sels = compile_sorted(vec![
            selector("exact", 1, MatchMode::And, vec![uri("=", "/a/b")]),
            selector("prefix", 1, MatchMode::And, vec![uri("startsWith", "/a")]),
            selector(
                "two",
                3,
                MatchMode::And,
                vec![uri("startsWith", " /a/"), uri("endsWith", "b")],
            ),
            selector(
                "bad",
                2,
                MatchMode::And,
                vec![uri("startsWith", "/z"), uri("regex", "(")],
            ),
            selector("or", 0, MatchMode::Or, vec![uri("=", "/q")]),
        ]);
        assert_eq!(pick(&sels, "/a/b").as_deref(), Some("two"));
        assert_eq!(pick(&sels, "/a/c").as_deref(), Some("prefix"));
        assert_eq!(pick(&sels, "/a").as_deref(), Some("prefix"));
        assert_eq!(pick(&sels, "/q").as_deref(), Some("or"));
        assert_eq!(pick(&sels, "/b"), None);
        // The bad regex is reached only under /z, and then it wins over the `or` match.
        assert_eq!(select(&sels, &TestRequest::get("/z")).unwrap_err().0, 500);
        // Of two erroring selectors, the earlier one's error.
        let sels = compile_sorted(vec![
            selector(
                "late",
                5,
                MatchMode::And,
                vec![uri("startsWith", "/"), uri("regex", "(")],
            ),
            selector(
                "early",
                1,
                MatchMode::And,
                vec![uri("=", "/x"), uri("pathPattern", "/**/x")],
            ),
        ]);
        assert_eq!(select(&sels, &TestRequest::get("/x")).unwrap_err().0, 400);
        assert_eq!(select(&sels, &TestRequest::get("/y")).unwrap_err().0, 500);
    }

    mod equivalence {
        use super::*;
        use proptest::prelude::*;
        use proptest::sample::select as one_of;

        /// Path-ish values that share prefixes, with a few non-ASCII ones.
        const VALUES: &[&str] = &[
            "", "/", "/a", "/a/", "/a/b", "/ab", "/a/b/c", "/b", "/é", "/é/x", "/a/**", "/a/*",
            "/{*p}", "/a/{x}", "/a.*", "GET", "h",
        ];
        const OPERATORS: &[&str] = &[
            "=",
            "=",
            "startsWith",
            "startsWith",
            "match",
            "pathPattern",
            "regex",
            "endsWith",
            "contains",
            "exclude",
            "isBlank",
            " ",
        ];
        const PARAM_TYPES: &[&str] = &[
            "uri",
            "uri",
            "uri",
            "uri",
            "header",
            "req_method",
            "query",
            "post",
        ];
        const PADDING: &[&str] = &["", "", "", " ", "\t", "  \n"];

        /// Mostly evaluable conditions; a few fail (unknown operator or param type, bad regex
        /// or path pattern) so that errors are neither rare nor everywhere.
        fn condition() -> impl Strategy<Value = ConditionData> {
            let evaluable = (
                one_of(PARAM_TYPES),
                one_of(OPERATORS),
                one_of(VALUES),
                one_of(PADDING),
                one_of(PADDING),
            )
                .prop_map(|(t, op, v, l, r)| {
                    let name = match t {
                        "header" => "x-h",
                        "query" => "q",
                        "post" => "path",
                        _ => "/",
                    };
                    ConditionData::new(t, op, name, &format!("{l}{v}{r}"))
                });
            let failing = (
                one_of(&["URI =", "uri =~", "uri regex", "uri pathPattern"][..]),
                one_of(&["/a", "(", "/a/**/b"][..]),
            )
                .prop_map(|(t_op, v)| {
                    let (t, op) = t_op.split_once(' ').unwrap_or_default();
                    ConditionData::new(t, op, "/", v)
                });
            prop_oneof![30 => evaluable, 1 => failing]
        }

        fn selector_data() -> impl Strategy<Value = SelectorData> {
            (
                prop::bool::weighted(0.85),
                prop::bool::weighted(0.1),
                prop_oneof![
                    6 => Just(MatchMode::And),
                    2 => Just(MatchMode::Or),
                    1 => Just(MatchMode::Other(7)),
                ],
                0..4i32,
                prop::collection::vec(condition(), 0..4),
            )
                .prop_map(|(enabled, full, mode, sort, conditions)| SelectorData {
                    enabled,
                    selector_type: if full {
                        SelectorType::FullFlow
                    } else {
                        SelectorType::Custom
                    },
                    ..selector("", sort, mode, conditions)
                })
        }

        /// Selectors with unique ids and requests whose paths are mostly the selectors'
        /// values, cut short or extended at either end.
        fn case() -> impl Strategy<Value = (Vec<SelectorData>, Vec<(String, bool)>)> {
            prop::collection::vec(selector_data(), 0..24).prop_flat_map(|mut sels| {
                for (i, s) in sels.iter_mut().enumerate() {
                    s.id = format!("s{i}");
                }
                let mut seeds: Vec<String> = sels
                    .iter()
                    .flat_map(|s| &s.condition_list)
                    .map(|c| c.param_value.trim_matches(|c: char| c <= ' ').to_owned())
                    .collect();
                seeds.extend(VALUES.iter().map(|v| (*v).to_owned()));
                let path = (
                    one_of(&["", "", "", "/a", "/x"][..]),
                    one_of(seeds),
                    one_of(&["", "", "x", "/", "/c", "b"][..]),
                    0..4usize,
                )
                    .prop_map(|(head, seed, suffix, cut)| {
                        let mut p = format!("{head}{seed}{suffix}");
                        // Sometimes drop a few trailing chars (prefixes of values).
                        if cut == 3 {
                            p.pop();
                        }
                        p
                    });
                let requests = prop::collection::vec((path, any::<bool>()), 1..12);
                (Just(sels), requests)
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn indexed_equals_linear((sels, requests) in case()) {
                let table = compile_sorted(sels);
                for (path, with_header) in requests {
                    let mut req = TestRequest::get("/");
                    req.path = path;
                    req.query = Some("q=/a".to_owned());
                    if with_header {
                        req = req.header("x-h", "/a/b");
                    }
                    // `select` asserts the indexed and linear selections are equal.
                    let _ = select(&table, &req);
                }
            }
        }
    }

    fn rule_pick(s: &SelectorData, rules: Vec<RuleData>, path: &str) -> Option<String> {
        let mut rules = rules;
        rules.sort_by_key(|r| r.sort);
        let c = compile(s, &rules);
        let req = TestRequest::get(path);
        c.select_rule(&req.view())
            .unwrap()
            .map(|choice| match choice {
                RuleChoice::Default => DEFAULT_RULE_ID.to_owned(),
                RuleChoice::Rule(r) => r.id.to_string(),
            })
    }

    #[test]
    fn rule_selection() {
        let s = selector("s", 1, MatchMode::And, vec![uri("startsWith", "/")]);
        // Empty AND rule matches everything; more conditions win.
        let r1 = rule("r1", 1, MatchMode::And, vec![]);
        let r2 = rule("r2", 2, MatchMode::And, vec![uri("startsWith", "/a")]);
        assert_eq!(
            rule_pick(&s, vec![r1.clone(), r2.clone()], "/a").as_deref(),
            Some("r2")
        );
        assert_eq!(
            rule_pick(&s, vec![r1, r2.clone()], "/b").as_deref(),
            Some("r1")
        );
        // Empty OR rule matches nothing.
        let r3 = rule("r3", 1, MatchMode::Or, vec![]);
        assert_eq!(rule_pick(&s, vec![r3], "/a"), None);
        // Disabled rule never matches.
        let mut r4 = r2;
        r4.enabled = false;
        assert_eq!(rule_pick(&s, vec![r4], "/a"), None);
        // No rules at all.
        assert_eq!(rule_pick(&s, vec![], "/a"), None);
    }

    #[test]
    fn full_flow_takes_last_rule_unevaluated_and_non_continued_takes_default() {
        let mut full = selector("s", 1, MatchMode::And, vec![]);
        full.selector_type = SelectorType::FullFlow;
        let mut r9 = rule("r9", 9, MatchMode::And, vec![uri("=", "/never")]);
        r9.enabled = false;
        let r1 = rule("r1", 1, MatchMode::And, vec![]);
        assert_eq!(
            rule_pick(&full, vec![r9, r1.clone()], "/a").as_deref(),
            Some("r9")
        );
        let mut stop = selector("s", 1, MatchMode::And, vec![uri("startsWith", "/")]);
        stop.continued = false;
        assert_eq!(
            rule_pick(&stop, vec![r1], "/a").as_deref(),
            Some(DEFAULT_RULE_ID)
        );
    }
}
