//! Which selector and which rule a plugin runs a request with (`shenyu-semantics.md` §1,
//! steps 2–10), written from the document as a plain scan: sort, filter, score, pick. The
//! conditions of each selector and rule are decided by [`Reference::rule`] (the match
//! strategies of §6).

use model::ConditionData;

use super::{Outcome, PlantedBug, Reference, Request};

/// The id ShenYu gives the rule it synthesizes for a selector with `continued == false`
/// (`Constants.DEFAULT_RULE`).
pub const DEFAULT_RULE_ID: &str = "default_rule";

/// A selector of one plugin, with its rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// Its id (what the gateway names in `x-gantry-selector-id`).
    pub id: String,
    /// Its `sort`.
    pub sort: i32,
    /// Whether it is enabled.
    pub enabled: bool,
    /// `type == 0`: matches every request, conditions ignored.
    pub full_flow: bool,
    /// 0 `and`, 1 `or`, anything else `and` (but scored as `or`).
    pub match_mode: i32,
    /// `false`: its rules are not evaluated, the synthesized [`DEFAULT_RULE_ID`] runs.
    pub continued: bool,
    /// Its conditions.
    pub conditions: Vec<ConditionData>,
    /// Its rules, in any order.
    pub rules: Vec<Rule>,
}

/// A rule of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Its id (what the gateway names in `x-gantry-rule-id`).
    pub id: String,
    /// Its `sort`.
    pub sort: i32,
    /// Whether it is enabled.
    pub enabled: bool,
    /// 0 `and`, 1 `or`, anything else `and` (but scored as `or`).
    pub match_mode: i32,
    /// Its conditions.
    pub conditions: Vec<ConditionData>,
}

/// What a plugin does with a request, by its selectors and rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// No selector matched (divide: HTTP 404, code -107).
    NoSelector,
    /// The selector matched but no rule did (divide: HTTP 404, code -102).
    NoRule {
        /// The selector's id.
        selector: String,
    },
    /// The request runs with this selector and rule.
    Chosen {
        /// The selector's id.
        selector: String,
        /// The rule's id ([`DEFAULT_RULE_ID`] for a selector that does not continue).
        rule: String,
    },
    /// A condition failed, or is outside the model (never an error nor a match).
    Failed(Outcome),
}

/// What [`Reference::choose`] needs of a selector or rule to rank it among several.
trait Candidate {
    fn sort(&self) -> i32;
    fn match_mode(&self) -> i32;
    fn conditions(&self) -> &[ConditionData];
}

impl Candidate for Selector {
    fn sort(&self) -> i32 {
        self.sort
    }
    fn match_mode(&self) -> i32 {
        self.match_mode
    }
    fn conditions(&self) -> &[ConditionData] {
        &self.conditions
    }
}

impl Candidate for Rule {
    fn sort(&self) -> i32 {
        self.sort
    }
    fn match_mode(&self) -> i32 {
        self.match_mode
    }
    fn conditions(&self) -> &[ConditionData] {
        &self.conditions
    }
}

impl Reference {
    /// The selector and rule of §1 for `req` among one plugin's `selectors`:
    /// - the selectors in `sort` order (equal sorts keep the order of `selectors`);
    /// - each one matches if enabled and full flow, or enabled, custom, with conditions, and
    ///   its match strategy holds (the first failing condition in that order is the answer);
    /// - of the matches, the highest score wins (condition count for match mode 0, else 0),
    ///   ties to the earliest;
    /// - a selector that does not continue runs [`DEFAULT_RULE_ID`]; a full-flow one its
    ///   last rule by `sort`, unevaluated (even disabled); otherwise its rules are ranked the
    ///   same way (enabled and matching; an empty `and` rule matches) — none: no rule.
    pub fn choose(&self, selectors: &[Selector], req: &Request) -> Choice {
        let selector = match self.best(selectors, |s| {
            if !s.enabled {
                Ok(false)
            } else if s.full_flow {
                Ok(true)
            } else if s.conditions.is_empty() {
                Ok(false)
            } else {
                self.holds(s, req)
            }
        }) {
            Ok(Some(s)) => s,
            Ok(None) => return Choice::NoSelector,
            Err(failed) => return Choice::Failed(failed),
        };
        let chosen = |rule: &str| Choice::Chosen {
            selector: selector.id.clone(),
            rule: rule.to_owned(),
        };
        if !selector.continued {
            return chosen(DEFAULT_RULE_ID);
        }
        let rule = if selector.full_flow {
            Ok(self.in_order(&selector.rules).last().copied())
        } else {
            self.best(&selector.rules, |r| {
                if r.enabled {
                    self.holds(r, req)
                } else {
                    Ok(false)
                }
            })
        };
        match rule {
            Ok(Some(r)) => chosen(&r.id),
            Ok(None) => Choice::NoRule {
                selector: selector.id.clone(),
            },
            Err(failed) => Choice::Failed(failed),
        }
    }

    /// `items` in `sort` order, stable; with [`PlantedBug::IgnoresSort`], as given.
    fn in_order<'a, T: Candidate>(&self, items: &'a [T]) -> Vec<&'a T> {
        let mut ordered: Vec<&T> = items.iter().collect();
        if self.bug != Some(PlantedBug::IgnoresSort) {
            ordered.sort_by_key(|c| c.sort());
        }
        ordered
    }

    /// Whether `c`'s conditions hold under its match strategy.
    fn holds(&self, c: &impl Candidate, req: &Request) -> Result<bool, Outcome> {
        match self.rule(c.match_mode(), c.conditions(), req) {
            Outcome::Match => Ok(true),
            Outcome::NoMatch => Ok(false),
            failed => Err(failed),
        }
    }

    /// The first of the highest score among the `items` that `matches` (in `sort` order);
    /// the first failure in that order ends the scan.
    fn best<'a, T: Candidate>(
        &self,
        items: &'a [T],
        matches: impl Fn(&T) -> Result<bool, Outcome>,
    ) -> Result<Option<&'a T>, Outcome> {
        let mut best: Option<(&T, usize)> = None;
        for item in self.in_order(items) {
            if !matches(item)? {
                continue;
            }
            let score = if item.match_mode() == 0 {
                item.conditions().len()
            } else {
                0
            };
            if best.is_none_or(|(_, top)| score > top) {
                best = Some((item, score));
            }
        }
        Ok(best.map(|(item, _)| item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(op: &str, v: &str) -> ConditionData {
        ConditionData::new("uri", op, "/", v)
    }

    fn selector(id: &str, sort: i32, mode: i32, conditions: Vec<ConditionData>) -> Selector {
        Selector {
            id: id.to_owned(),
            sort,
            enabled: true,
            full_flow: false,
            match_mode: mode,
            continued: true,
            conditions,
            rules: vec![rule("r", 1, 0, vec![])],
        }
    }

    fn rule(id: &str, sort: i32, mode: i32, conditions: Vec<ConditionData>) -> Rule {
        Rule {
            id: id.to_owned(),
            sort,
            enabled: true,
            match_mode: mode,
            conditions,
        }
    }

    fn picked(model: &Reference, selectors: &[Selector], path: &str) -> Choice {
        model.choose(selectors, &Request::new("GET", path))
    }

    fn chosen(selector: &str, rule: &str) -> Choice {
        Choice::Chosen {
            selector: selector.to_owned(),
            rule: rule.to_owned(),
        }
    }

    #[test]
    fn score_then_sort() {
        let m = Reference::new();
        let two = selector(
            "two",
            5,
            0,
            vec![uri("startsWith", "/a"), uri("endsWith", "x")],
        );
        let one = selector("one", 1, 0, vec![uri("startsWith", "/a")]);
        let late = selector("late", 3, 0, vec![uri("startsWith", "/")]);
        let or = selector("or", 0, 1, vec![uri("startsWith", "/a"), uri("=", "/q")]);
        let odd = selector(
            "odd",
            0,
            7,
            vec![uri("startsWith", "/a"), uri("endsWith", "x")],
        );
        let all = [two, one, late.clone(), or.clone(), odd];
        assert_eq!(picked(&m, &all, "/a/x"), chosen("two", "r"));
        assert_eq!(picked(&m, &all, "/a/y"), chosen("one", "r"));
        assert_eq!(picked(&m, &all, "/b"), chosen("late", "r"));
        // An `or` selector scores 0: a later `and` one with one condition beats it.
        assert_eq!(picked(&m, &[late, or.clone()], "/a/y"), chosen("late", "r"));
        assert_eq!(picked(&m, &[or], "/b"), Choice::NoSelector);
        // Ignoring `sort`, the list order decides the tie.
        let buggy = Reference::with_planted_bug(PlantedBug::IgnoresSort);
        let tie = [
            selector("b", 2, 0, vec![uri("startsWith", "/")]),
            selector("a", 1, 0, vec![uri("startsWith", "/a")]),
        ];
        assert_eq!(picked(&m, &tie, "/a"), chosen("a", "r"));
        assert_eq!(picked(&buggy, &tie, "/a"), chosen("b", "r"));
    }

    #[test]
    fn disabled_empty_full_flow_and_continued() {
        let m = Reference::new();
        let mut off = selector(
            "off",
            0,
            0,
            vec![uri("startsWith", "/"), uri("startsWith", "/")],
        );
        off.enabled = false;
        let empty = selector("empty", 0, 0, vec![]);
        assert_eq!(picked(&m, &[off, empty], "/a"), Choice::NoSelector);
        let mut full = selector("full", 9, 0, vec![]);
        full.full_flow = true;
        let mut last = rule("last", 8, 0, vec![uri("=", "/never")]);
        last.enabled = false;
        full.rules = vec![last, rule("first", 2, 0, vec![])];
        assert_eq!(picked(&m, &[full.clone()], "/a"), chosen("full", "last"));
        full.continued = false;
        assert_eq!(picked(&m, &[full], "/a"), chosen("full", DEFAULT_RULE_ID));
    }

    #[test]
    fn rules_rank_like_selectors() {
        let m = Reference::new();
        let mut s = selector("s", 1, 0, vec![uri("startsWith", "/")]);
        let mut off = rule(
            "off",
            0,
            0,
            vec![uri("startsWith", "/a"), uri("endsWith", "x")],
        );
        off.enabled = false;
        s.rules = vec![
            rule("any", 3, 0, vec![]),
            rule("a", 2, 0, vec![uri("startsWith", "/a")]),
            rule("none", 1, 1, vec![]),
            off,
        ];
        assert_eq!(
            picked(&m, std::slice::from_ref(&s), "/a/x"),
            chosen("s", "a")
        );
        assert_eq!(
            picked(&m, std::slice::from_ref(&s), "/b"),
            chosen("s", "any")
        );
        s.rules.remove(0);
        assert_eq!(
            picked(&m, &[s], "/b"),
            Choice::NoRule {
                selector: "s".into()
            }
        );
    }
}
