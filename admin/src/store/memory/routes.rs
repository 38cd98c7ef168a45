//! Selectors, rules and registrations, in memory: the twins of `store/selectors.rs`,
//! `store/rules.rs` and [`Store::put_registration`](crate::store::Store::put_registration).

use std::cmp::Ordering;

use super::{Memory, Tables, Violation, delete_known, set_enabled, sorted, upsert};
use crate::store::{Batch, MetaRecord, RuleRecord, SelectorRecord, StoreError};

/// `ORDER BY sort, id` for selectors.
fn selector_order(a: &SelectorRecord, b: &SelectorRecord) -> Ordering {
    (a.sort, &a.id).cmp(&(b.sort, &b.id))
}

/// `ORDER BY sort, id` for rules.
fn rule_order(a: &RuleRecord, b: &RuleRecord) -> Ordering {
    (a.sort, &a.id).cmp(&(b.sort, &b.id))
}

impl Tables {
    /// The selectors of plugin `plugin_id`, by sort, then id.
    pub(super) fn selectors_of(&self, plugin_id: &str) -> Vec<SelectorRecord> {
        let owned = self.selectors.values().filter(|s| s.plugin_id == plugin_id);
        sorted(owned, selector_order)
    }

    /// The rules of selector `selector_id`, by sort, then id.
    pub(super) fn rules_of(&self, selector_id: &str) -> Vec<RuleRecord> {
        let owned = self.rules.values().filter(|r| r.selector_id == selector_id);
        sorted(owned, rule_order)
    }

    /// Refuses selector `s` as the `selector` table's foreign key would.
    fn check_selector(&self, s: &SelectorRecord) -> Result<(), StoreError> {
        if self.plugins.contains_key(&s.plugin_id) {
            Ok(())
        } else {
            Err(Violation::foreign_key())
        }
    }

    /// Refuses rule `r` as the `rule` table's foreign key would, counting the selectors in
    /// `also` (written before it in the same transaction) as stored.
    fn check_rule(&self, r: &RuleRecord, also: &[SelectorRecord]) -> Result<(), StoreError> {
        let id = &r.selector_id;
        if self.selectors.contains_key(id) || also.iter().any(|s| s.id == *id) {
            Ok(())
        } else {
            Err(Violation::foreign_key())
        }
    }
}

impl Memory {
    /// [`Store::put_registration`](crate::store::Store::put_registration): every record is
    /// checked before the first is written, in the order the transaction writes them, so the
    /// first refusal is the one SQLite gives and nothing is written.
    pub(in crate::store) fn put_registration(
        &self,
        selectors: &[SelectorRecord],
        rules: &[RuleRecord],
        meta: Option<&MetaRecord>,
    ) -> Result<(), StoreError> {
        let mut tables = self.tables();
        // Writing selectors changes no plugin, and writing rules no selector or metadata: each
        // check sees what the writes before it leave.
        for s in selectors {
            tables.check_selector(s)?;
        }
        for r in rules {
            tables.check_rule(r, selectors)?;
        }
        if let Some(m) = meta {
            tables.check_meta(m)?;
        }
        for s in selectors {
            upsert(&mut tables.selectors, s);
        }
        for r in rules {
            upsert(&mut tables.rules, r);
        }
        if let Some(m) = meta {
            upsert(&mut tables.meta, m);
        }
        Ok(())
    }

    /// [`Store::selectors`](crate::store::Store::selectors): by sort, then id.
    pub(in crate::store) fn selectors(&self) -> Vec<SelectorRecord> {
        sorted(self.tables().selectors.values(), selector_order)
    }

    /// [`Store::selector`](crate::store::Store::selector).
    pub(in crate::store) fn selector(&self, id: &str) -> Option<SelectorRecord> {
        self.tables().selectors.get(id).cloned()
    }

    /// [`Store::selector_named`](crate::store::Store::selector_named): the first by sort,
    /// then id.
    pub(in crate::store) fn selector_named(
        &self,
        plugin_id: &str,
        name: &str,
    ) -> Option<SelectorRecord> {
        self.tables()
            .selectors
            .values()
            .filter(|s| s.plugin_id == plugin_id && s.name == name)
            .min_by(|a, b| selector_order(a, b))
            .cloned()
    }

    /// [`Store::put_selector`](crate::store::Store::put_selector).
    pub(in crate::store) fn put_selector(&self, s: &SelectorRecord) -> Result<(), StoreError> {
        let mut tables = self.tables();
        tables.check_selector(s)?;
        upsert(&mut tables.selectors, s);
        Ok(())
    }

    /// [`Store::delete_selectors`](crate::store::Store::delete_selectors): the selectors
    /// found, in the order named, and their rules (by sort, then id, selector after
    /// selector).
    pub(in crate::store) fn delete_selectors(
        &self,
        ids: &[String],
    ) -> (Vec<SelectorRecord>, Vec<RuleRecord>) {
        let mut tables = self.tables();
        let (mut selectors, mut rules) = (Vec::new(), Vec::new());
        for id in ids {
            if let Some(selector) = tables.selectors.remove(id) {
                let owned = tables.rules_of(id);
                for rule in &owned {
                    tables.rules.remove(&rule.id);
                }
                selectors.push(selector);
                rules.extend(owned);
            }
        }
        (selectors, rules)
    }

    /// [`Store::set_selectors_enabled`](crate::store::Store::set_selectors_enabled).
    pub(in crate::store) fn set_selectors_enabled(
        &self,
        ids: &[String],
        enabled: bool,
        now: &str,
    ) -> Batch<SelectorRecord> {
        set_enabled(&mut self.tables().selectors, ids, enabled, now)
    }

    /// [`Store::rules`](crate::store::Store::rules): by sort, then id.
    pub(in crate::store) fn rules(&self) -> Vec<RuleRecord> {
        sorted(self.tables().rules.values(), rule_order)
    }

    /// [`Store::selector_rules`](crate::store::Store::selector_rules): by sort, then id.
    pub(in crate::store) fn selector_rules(&self, selector_id: &str) -> Vec<RuleRecord> {
        self.tables().rules_of(selector_id)
    }

    /// [`Store::rule`](crate::store::Store::rule).
    pub(in crate::store) fn rule(&self, id: &str) -> Option<RuleRecord> {
        self.tables().rules.get(id).cloned()
    }

    /// [`Store::rule_named`](crate::store::Store::rule_named): the first by sort, then id.
    pub(in crate::store) fn rule_named(&self, selector_id: &str, name: &str) -> Option<RuleRecord> {
        self.tables()
            .rules
            .values()
            .filter(|r| r.selector_id == selector_id && r.name == name)
            .min_by(|a, b| rule_order(a, b))
            .cloned()
    }

    /// [`Store::put_rule`](crate::store::Store::put_rule).
    pub(in crate::store) fn put_rule(&self, r: &RuleRecord) -> Result<(), StoreError> {
        let mut tables = self.tables();
        tables.check_rule(r, &[])?;
        upsert(&mut tables.rules, r);
        Ok(())
    }

    /// [`Store::delete_rules`](crate::store::Store::delete_rules): the rules found, in the
    /// order named.
    pub(in crate::store) fn delete_rules(&self, ids: &[String]) -> Vec<RuleRecord> {
        delete_known(&mut self.tables().rules, ids)
    }

    /// [`Store::set_rules_enabled`](crate::store::Store::set_rules_enabled).
    pub(in crate::store) fn set_rules_enabled(
        &self,
        ids: &[String],
        enabled: bool,
        now: &str,
    ) -> Batch<RuleRecord> {
        set_enabled(&mut self.tables().rules, ids, enabled, now)
    }
}
