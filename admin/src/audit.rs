//! The start-time audit of stored handles: rows this admin's checks ([`crate::validate`])
//! would refuse on write, but which are in the database anyway, written before a check
//! existed or by another admin sharing the database (a ShenYu admin stores any integer as a
//! divide rule's `retry`). They are kept and published as they are; each is logged once at
//! start, so the operator can fix it.

use std::collections::HashMap;

use crate::store::{Store, StoreError};
use crate::validate;

/// A stored handle the admin would refuse on write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// `selector` or `rule`.
    pub(crate) table: &'static str,
    /// The row's id.
    pub(crate) id: String,
    /// Its plugin's name.
    pub(crate) plugin: String,
    /// Why it would be refused: `{field}: {message}` (e.g. `handle.retry: must be within …`).
    pub(crate) reason: String,
}

/// The stored selector and rule handles that [`validate::selector_handle`] and
/// [`validate::rule_handle_of`] refuse, selectors first, each in store order.
pub(crate) async fn stored_handles(store: &Store) -> Result<Vec<Finding>, StoreError> {
    let plugins: HashMap<String, String> = store
        .plugins()
        .await?
        .into_iter()
        .map(|p| (p.id, p.name))
        .collect();
    let plugin_of = |id: &str| plugins.get(id).cloned().unwrap_or_default();
    let mut findings = Vec::new();
    let mut selector_plugin = HashMap::new();
    for selector in store.selectors().await? {
        let plugin = plugin_of(&selector.plugin_id);
        if let Some(handle) = selector.handle.as_deref().filter(|h| !h.trim().is_empty())
            && let Err(e) = validate::selector_handle(&plugin, handle)
        {
            findings.push(Finding {
                table: "selector",
                id: selector.id.clone(),
                plugin: plugin.clone(),
                reason: e.to_string(),
            });
        }
        selector_plugin.insert(selector.id, plugin);
    }
    for rule in store.rules().await? {
        let plugin = selector_plugin
            .get(&rule.selector_id)
            .cloned()
            .unwrap_or_default();
        let handle = rule.handle.as_deref().filter(|h| !h.trim().is_empty());
        if let Err(e) = validate::rule_handle_of(&plugin, handle) {
            findings.push(Finding {
                table: "rule",
                id: rule.id,
                plugin,
                reason: e.to_string(),
            });
        }
    }
    Ok(findings)
}

/// Logs each of [`stored_handles`] as a WARN line naming the table, id, plugin and field,
/// then their count; returns them.
pub(crate) async fn warn_stored_handles(store: &Store) -> Result<Vec<Finding>, StoreError> {
    let findings = stored_handles(store).await?;
    for f in &findings {
        tracing::warn!(
            table = f.table,
            id = %f.id,
            plugin = %f.plugin,
            "stored handle this admin would refuse on write (kept and published as stored): {}",
            f.reason
        );
    }
    if !findings.is_empty() {
        tracing::warn!(
            count = findings.len(),
            "stored selector and rule handles this admin would refuse on write; fix or delete them"
        );
    }
    Ok(findings)
}

#[cfg(test)]
mod tests {
    use model::BUILTIN_PLUGINS;

    use super::*;
    use crate::store::{RuleRecord, SelectorRecord};

    const NOW: &str = "2024-01-01 00:00:00";

    fn selector(id: &str, plugin_id: &str, handle: &str) -> SelectorRecord {
        SelectorRecord {
            plugin_id: plugin_id.to_owned(),
            handle: Some(handle.to_owned()),
            ..crate::store::tests::selector(id, 1)
        }
    }

    fn rule(id: &str, selector_id: &str, handle: &str) -> RuleRecord {
        RuleRecord {
            enabled: true,
            handle: Some(handle.to_owned()),
            ..crate::store::tests::rule(id, selector_id, 1)
        }
    }

    /// Rows written around the admin's checks (through the store, as another admin sharing
    /// the database would) are found, each naming its table, id, plugin and field; good rows
    /// are not.
    #[tokio::test]
    async fn stored_handles_the_admin_would_refuse_are_named() {
        let store = Store::open(":memory:").await.unwrap();
        store.seed_plugins(BUILTIN_PLUGINS, NOW).await.unwrap();
        let good = r#"[{"upstreamUrl":"10.0.0.5:8189","protocol":"http://","weight":50}]"#;
        let evil = r#"[{"upstreamUrl":"10.0.0.5:8189","protocol":"http://127.0.0.1:9/#"}]"#;
        store
            .put_selector(&selector("s1", "5", good))
            .await
            .unwrap();
        store
            .put_selector(&selector("s2", "5", evil))
            .await
            .unwrap();
        store
            .put_selector(&selector("s3", "2", "{not json"))
            .await
            .unwrap();
        store
            .put_rule(&rule("r1", "s1", r#"{"retry":3,"timeout":3000}"#))
            .await
            .unwrap();
        store
            .put_rule(&rule("r2", "s1", r#"{"retry":2147483647,"timeout":3000}"#))
            .await
            .unwrap();
        store
            .put_rule(&rule("r3", "s1", r#"{"retry":1,"timeout":-5}"#))
            .await
            .unwrap();

        let findings = warn_stored_handles(&store).await.unwrap();
        let named: Vec<(&str, &str, &str, &str)> = findings
            .iter()
            .map(|f| {
                let field = f.reason.split(':').next().unwrap();
                (f.table, f.id.as_str(), f.plugin.as_str(), field)
            })
            .collect();
        assert_eq!(
            named,
            [
                ("selector", "s2", "divide", "handle[0].protocol"),
                ("selector", "s3", "waf", "handle"),
                ("rule", "r2", "divide", "handle.retry"),
                ("rule", "r3", "divide", "handle.timeout"),
            ],
            "{findings:#?}"
        );
        assert!(findings[2].reason.contains("2147483647"), "{findings:#?}");
    }
}
