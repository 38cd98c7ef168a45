//! [`Groups`]: the long-poll cache's view of the five synced groups ([`ConfigGroups`], in the
//! store's order, kept by applying the admin's change events), and each group's JSON exactly
//! as a rebuild from the database writes it. A change costs one map update plus one
//! serialisation of the group it touches; other groups are not looked at (but for RULE when a
//! selector moves to another plugin: [`Groups::apply`]).

use model::{ConfigGroup, DataEvent, DataEventType, EventPayload, RuleData};

use crate::service::Snapshot;
use crate::service::groups::ConfigGroups;

/// The five synced groups as the database holds them, each group's JSON at hand.
#[derive(Debug)]
pub(super) struct Groups(ConfigGroups);

impl Groups {
    /// The groups of `snapshot`.
    pub(super) fn from_snapshot(snapshot: Snapshot) -> Self {
        Self(ConfigGroups::from_snapshot(snapshot))
    }

    /// Takes in one change event; answers the groups whose JSON may have changed.
    ///
    /// A rule's `pluginName` is its selector's plugin's name, which the database joins in: a
    /// selector moved to another plugin changes its rules too (this admin says so with RULE
    /// events; a full SELECTOR event does not).
    pub(super) fn apply(&mut self, event: &DataEvent) -> Vec<ConfigGroup> {
        let groups = &mut self.0;
        let kind = event.event_type;
        let moved: Vec<String> = match (&event.payload, kind) {
            (EventPayload::Selector(items), DataEventType::Create | DataEventType::Update) => items
                .iter()
                .filter(|s| {
                    groups
                        .selectors
                        .get(&s.id)
                        .is_some_and(|old| old.plugin_name != s.plugin_name)
                })
                .map(|s| s.id.clone())
                .collect(),
            _ => Vec::new(),
        };
        let touched = groups.apply(event);
        let rules_moved = match &event.payload {
            EventPayload::Selector(_) if kind.is_full() => self.join_rule_plugins(|_| true),
            EventPayload::Selector(_) if !moved.is_empty() => {
                self.join_rule_plugins(|rule| moved.contains(&rule.selector_id))
            }
            _ => false,
        };
        if rules_moved {
            vec![ConfigGroup::Selector, ConfigGroup::Rule]
        } else if touched {
            vec![event.group()]
        } else {
            Vec::new()
        }
    }

    /// Sets the `pluginName` of the rules `which` selects to their selector's (left alone
    /// when the selector is unknown); answers whether one changed.
    fn join_rule_plugins(&mut self, which: impl Fn(&RuleData) -> bool) -> bool {
        let ConfigGroups {
            selectors, rules, ..
        } = &mut self.0;
        let mut changed = false;
        for rule in rules.values_mut().filter(|r| which(r)) {
            if let Some(selector) = selectors.get(&rule.selector_id)
                && selector.plugin_name != rule.plugin_name
            {
                rule.plugin_name.clone_from(&selector.plugin_name);
                changed = true;
            }
        }
        changed
    }

    /// The JSON text of `group`'s list; groups gantry does not model are `[]`.
    pub(super) fn json(&self, group: ConfigGroup) -> String {
        let groups = &self.0;
        match group {
            ConfigGroup::Plugin => groups.plugins.json(),
            ConfigGroup::Selector => groups.selectors.json(),
            ConfigGroup::Rule => groups.rules.json(),
            ConfigGroup::MetaData => groups.meta_data.json(),
            ConfigGroup::AppAuth => groups.app_auth.json(),
            ConfigGroup::ProxySelector
            | ConfigGroup::AiProxyApiKey
            | ConfigGroup::DiscoverUpstream => "[]".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use model::SelectorData;

    use super::*;

    fn selector(id: &str, sort: i32, plugin: &str) -> SelectorData {
        SelectorData {
            id: id.to_owned(),
            sort,
            plugin_name: plugin.to_owned(),
            ..Default::default()
        }
    }

    fn rule(id: &str, sort: i32, selector: &str, plugin: &str) -> RuleData {
        RuleData {
            id: id.to_owned(),
            sort,
            selector_id: selector.to_owned(),
            plugin_name: plugin.to_owned(),
            ..Default::default()
        }
    }

    fn groups(selectors: Vec<SelectorData>, rules: Vec<RuleData>) -> Groups {
        Groups::from_snapshot(Snapshot {
            config: model::ConfigSet {
                selectors,
                rules,
                ..Default::default()
            },
            app_auth: Vec::new(),
        })
    }

    fn ids(json: &str) -> Vec<String> {
        let items: Vec<serde_json::Value> = serde_json::from_str(json).unwrap();
        items
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn items_are_kept_in_the_queries_order_by_sort_then_id_bytes() {
        let mut groups = groups(
            vec![selector("9", 1, "divide"), selector("10", 1, "divide")],
            Vec::new(),
        );
        // "10" < "9" byte by byte; sort first.
        assert_eq!(ids(&groups.json(ConfigGroup::Selector)), ["10", "9"]);
        let touched = groups.apply(&DataEvent::new(
            DataEventType::Update,
            EventPayload::Selector(vec![
                selector("10", 2, "divide"),
                selector("8", 0, "divide"),
            ]),
        ));
        assert_eq!(touched, [ConfigGroup::Selector]);
        assert_eq!(ids(&groups.json(ConfigGroup::Selector)), ["8", "9", "10"]);
        let touched = groups.apply(&DataEvent::new(
            DataEventType::Delete,
            EventPayload::Selector(vec![selector("9", 123, "")]),
        ));
        assert_eq!(touched, [ConfigGroup::Selector]);
        assert_eq!(ids(&groups.json(ConfigGroup::Selector)), ["8", "10"]);
        assert_eq!(groups.json(ConfigGroup::ProxySelector), "[]");
    }

    #[test]
    fn an_updates_before_conditions_are_not_kept() {
        let mut groups = groups(vec![selector("1", 1, "divide")], Vec::new());
        let mut updated = selector("1", 1, "divide");
        updated.before_condition_list = vec![model::ConditionData::default()];
        groups.apply(&DataEvent::new(
            DataEventType::Update,
            EventPayload::Selector(vec![updated]),
        ));
        assert!(
            !groups
                .json(ConfigGroup::Selector)
                .contains("beforeConditionList")
        );
    }

    #[test]
    fn a_selector_moved_to_another_plugin_takes_its_rules_along() {
        let mut groups = groups(
            vec![selector("1", 1, "divide"), selector("2", 1, "divide")],
            vec![rule("3", 1, "1", "divide"), rule("4", 1, "2", "divide")],
        );
        let touched = groups.apply(&DataEvent::new(
            DataEventType::Update,
            EventPayload::Selector(vec![selector("1", 1, "waf")]),
        ));
        assert_eq!(touched, [ConfigGroup::Selector, ConfigGroup::Rule]);
        let rules: Vec<serde_json::Value> =
            serde_json::from_str(&groups.json(ConfigGroup::Rule)).unwrap();
        assert_eq!(rules[0]["pluginName"], "waf");
        assert_eq!(rules[1]["pluginName"], "divide");
        let touched = groups.apply(&DataEvent::new(
            DataEventType::RunningMode,
            EventPayload::Selector(vec![selector("1", 1, "x")]),
        ));
        assert!(touched.is_empty());
    }
}
