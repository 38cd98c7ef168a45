//! Selector then rule selection (ShenYu `AbstractShenyuPlugin`, semantics §1).
//!
//! Selectors and rules arrive sorted by `sort` ascending. Every enabled candidate is evaluated
//! (so any candidate's condition error surfaces); among the matches the highest score wins
//! (condition count for `and`, 0 for `or`), ties go to the earliest, i.e. lowest `sort`.

use std::sync::Arc;

use model::{
    ContextMappingRuleHandle, DivideRuleHandle, MatchMode, RuleData, SelectorData, SelectorType,
};

use super::{Condition, MatchError, RequestView, eval_all};
use crate::balance::Pool;
use crate::plugin::context_path;
use crate::plugin::param_mapping::{self, BodyMapping};

/// A selector compiled for matching, with its rules.
#[derive(Debug)]
pub(crate) struct CompiledSelector {
    /// Selector id.
    pub(crate) id: Arc<str>,
    enabled: bool,
    selector_type: SelectorType,
    match_mode: MatchMode,
    continued: bool,
    conditions: Vec<Condition>,
    /// Usable upstreams (divide selectors only, `status == true`) with the balancers' state.
    pub(crate) pool: Arc<Pool>,
    /// The selector's rules, sorted by `sort`.
    pub(crate) rules: Vec<CompiledRule>,
}

/// A rule compiled for matching.
#[derive(Debug)]
pub(crate) struct CompiledRule {
    /// Rule id.
    pub(crate) id: Arc<str>,
    enabled: bool,
    match_mode: MatchMode,
    conditions: Vec<Condition>,
    /// The divide rule handle (defaults when absent, unreadable or not a divide rule).
    pub(crate) handle: DivideRuleHandle,
    /// The handle of the other plugins gantry runs.
    pub(crate) plugin_handle: PluginHandle,
}

/// A non-divide rule handle, parsed once per snapshot.
#[derive(Debug, Clone)]
pub(crate) enum PluginHandle {
    /// No handle gantry reads (or an unreadable one, logged).
    None,
    /// contextPath.
    ContextPath(ContextMappingRuleHandle),
    /// paramMapping.
    ParamMapping(Arc<BodyMapping>),
}

/// Which rule a matched selector runs with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RuleChoice<'s> {
    /// `continued == false`: ShenYu's synthesized `default_rule` with a default handle.
    Default,
    /// A real rule.
    Rule(&'s CompiledRule),
}

/// The id ShenYu gives the synthesized rule of a non-continued selector.
pub(crate) const DEFAULT_RULE_ID: &str = "default_rule";

impl CompiledSelector {
    /// Compiles a selector and its (already sorted) rules. `previous`: the same selector in
    /// the previous snapshot, whose upstream pool (and balancer state) is kept when the
    /// handle did not change.
    pub(crate) fn compile(
        s: &SelectorData,
        rules: &[RuleData],
        previous: Option<&CompiledSelector>,
    ) -> CompiledSelector {
        let handle = s.handle.as_deref().unwrap_or("");
        let pool = match previous {
            Some(p) if p.pool.handle() == handle => p.pool.clone(),
            _ if s.plugin_name == "divide" => Arc::new(Pool::from_handle(handle, &s.id)),
            _ => Arc::new(Pool::new(Vec::new())),
        };
        CompiledSelector {
            id: Arc::from(s.id.as_str()),
            enabled: s.enabled,
            selector_type: s.selector_type,
            match_mode: s.match_mode,
            continued: s.continued,
            conditions: s.condition_list.iter().map(Condition::compile).collect(),
            pool,
            rules: rules.iter().map(CompiledRule::compile).collect(),
        }
    }

    fn score(&self) -> usize {
        match self.match_mode {
            MatchMode::And => self.conditions.len(),
            MatchMode::Or => 0,
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
    ) -> Result<Option<RuleChoice<'_>>, MatchError> {
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

impl CompiledRule {
    fn compile(r: &RuleData) -> CompiledRule {
        let handle = match r.handle.as_deref() {
            Some(h) if r.plugin_name == "divide" => DivideRuleHandle::parse(h).unwrap_or_else(|e| {
                tracing::warn!(rule = %r.id, error = %e, "unreadable divide rule handle; using defaults");
                DivideRuleHandle::default()
            }),
            _ => DivideRuleHandle::default(),
        };
        let plugin_handle = match (r.plugin_name.as_str(), r.handle.as_deref()) {
            (context_path::NAME, Some(h)) => ContextMappingRuleHandle::parse(h)
                .map(PluginHandle::ContextPath)
                .map_err(|e| e.to_string()),
            (param_mapping::NAME, Some(h)) => BodyMapping::parse(h)
                .map(|m| PluginHandle::ParamMapping(Arc::new(m)))
                .map_err(|e| e.to_string()),
            _ => Ok(PluginHandle::None),
        }
        .unwrap_or_else(|e| {
            tracing::warn!(rule = %r.id, plugin = %r.plugin_name, error = %e, "unreadable rule handle; ignored");
            PluginHandle::None
        });
        CompiledRule {
            id: Arc::from(r.id.as_str()),
            plugin_handle,
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
        match self.match_mode {
            MatchMode::And => self.conditions.len(),
            MatchMode::Or => 0,
        }
    }
}

/// Picks the selector among a plugin's selectors (sorted by `sort`). `None`: no match.
pub(crate) fn select_selector<'s>(
    selectors: &'s [CompiledSelector],
    req: &RequestView<'_>,
) -> Result<Option<&'s CompiledSelector>, MatchError> {
    best_of(selectors, |s| Ok(s.matches(req)?.then(|| s.score())))
}

/// The first item with the highest score among those `score_of` accepts; every item is
/// evaluated so that errors are never hidden by an earlier match.
fn best_of<'s, T>(
    items: &'s [T],
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

    fn compile_sorted(mut sels: Vec<SelectorData>) -> Vec<CompiledSelector> {
        sels.sort_by_key(|s| s.sort);
        sels.iter()
            .map(|s| CompiledSelector::compile(s, &[], None))
            .collect()
    }

    fn pick(sels: &[CompiledSelector], path: &str) -> Option<String> {
        let req = TestRequest::get(path);
        select_selector(sels, &req.view())
            .unwrap()
            .map(|s| s.id.to_string())
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
        assert_eq!(select_selector(&sels, &req.view()).unwrap_err().status, 500);
    }

    fn rule_pick(s: &SelectorData, rules: Vec<RuleData>, path: &str) -> Option<String> {
        let mut rules = rules;
        rules.sort_by_key(|r| r.sort);
        let c = CompiledSelector::compile(s, &rules, None);
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
