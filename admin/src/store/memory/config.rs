//! Plugins and their handle definitions, in memory: the twins of `store/plugins.rs` and
//! `store/plugin_handles.rs`.

use model::BuiltinPlugin;

use super::super::plugin_handles::{BUILTIN_HANDLES, seed_id};
use super::super::plugins::DeletedPlugins;
use super::{
    Memory, Violation, delete_known, find, first_missing, set_enabled, sorted, taken, upsert,
};
use crate::store::{Batch, PluginHandleRecord, PluginRecord, StoreError};

impl Memory {
    /// [`Store::seed_plugins`](crate::store::Store::seed_plugins): the absent built-in
    /// plugins and handle definitions, all or none.
    pub(in crate::store) fn seed_plugins(
        &self,
        plugins: &[BuiltinPlugin],
        now: &str,
    ) -> Result<(), StoreError> {
        let mut tables = self.tables();
        // Written on copies (seeding runs once a start), which replace the tables when whole.
        let mut stored = tables.plugins.clone();
        for p in plugins {
            // ON CONFLICT (id) DO NOTHING: a taken id is skipped, a taken name refused.
            if stored.contains_key(p.id) {
                continue;
            }
            if stored.values().any(|q| q.name == p.name) {
                return Err(Violation::unique("plugin", &["name"]));
            }
            let record = PluginRecord {
                id: p.id.to_owned(),
                name: p.name.to_owned(),
                role: p.role.to_owned(),
                sort: p.sort,
                enabled: p.enabled,
                config: p.config.map(str::to_owned),
                date_created: now.to_owned(),
                date_updated: now.to_owned(),
            };
            stored.insert(record.id.clone(), record);
        }
        let mut handles = tables.plugin_handles.clone();
        for handle in BUILTIN_HANDLES {
            let Some(plugin) = plugins.iter().find(|p| p.name == handle.plugin) else {
                continue;
            };
            let id = seed_id(plugin.id, handle);
            // ON CONFLICT DO NOTHING: a taken id or (plugin, field, type) is skipped.
            let clash = handles.values().any(|h| {
                h.plugin_id == plugin.id
                    && h.field == handle.field
                    && h.handle_type == handle.handle_type
            });
            if handles.contains_key(&id) || clash {
                continue;
            }
            if !stored.contains_key(plugin.id) {
                return Err(Violation::foreign_key());
            }
            let record = PluginHandleRecord {
                id,
                plugin_id: plugin.id.to_owned(),
                field: handle.field.to_owned(),
                label: handle.label.to_owned(),
                data_type: handle.data_type,
                handle_type: handle.handle_type,
                sort: handle.sort,
                ext_obj: handle.ext_obj.map(str::to_owned),
                date_created: now.to_owned(),
                date_updated: now.to_owned(),
            };
            handles.insert(record.id.clone(), record);
        }
        tables.plugins = stored;
        tables.plugin_handles = handles;
        Ok(())
    }

    /// [`Store::plugins`](crate::store::Store::plugins): by sort, then id.
    pub(in crate::store) fn plugins(&self) -> Vec<PluginRecord> {
        sorted(self.tables().plugins.values(), |a, b| {
            (a.sort, &a.id).cmp(&(b.sort, &b.id))
        })
    }

    /// [`Store::plugin`](crate::store::Store::plugin).
    pub(in crate::store) fn plugin(&self, id: &str) -> Option<PluginRecord> {
        self.tables().plugins.get(id).cloned()
    }

    /// [`Store::plugin_named`](crate::store::Store::plugin_named).
    pub(in crate::store) fn plugin_named(&self, name: &str) -> Option<PluginRecord> {
        find(&self.tables().plugins, |p| p.name == name)
    }

    /// [`Store::update_plugin`](crate::store::Store::update_plugin).
    pub(in crate::store) fn update_plugin(&self, p: &PluginRecord) -> Result<bool, StoreError> {
        let mut tables = self.tables();
        if !tables.plugins.contains_key(&p.id) {
            return Ok(false);
        }
        if taken(&tables.plugins, &p.id, |q| q.name == p.name) {
            return Err(Violation::unique("plugin", &["name"]));
        }
        if let Some(row) = tables.plugins.get_mut(&p.id) {
            *row = PluginRecord {
                date_created: row.date_created.clone(),
                ..p.clone()
            };
        }
        Ok(true)
    }

    /// [`Store::insert_plugin`](crate::store::Store::insert_plugin).
    pub(in crate::store) fn insert_plugin(&self, p: &PluginRecord) -> Result<(), StoreError> {
        let mut tables = self.tables();
        // SQLite checks the UNIQUE name before the primary key.
        if tables.plugins.values().any(|q| q.name == p.name) {
            return Err(Violation::unique("plugin", &["name"]));
        }
        if tables.plugins.contains_key(&p.id) {
            return Err(Violation::primary_key("plugin"));
        }
        tables.plugins.insert(p.id.clone(), p.clone());
        Ok(())
    }

    /// [`Store::delete_plugins`](crate::store::Store::delete_plugins): the plugins, with
    /// their selectors (by sort, then id, plugin after plugin), those selectors' rules (by
    /// sort, then id, selector after selector) and their handle definitions; all or none.
    pub(in crate::store) fn delete_plugins(
        &self,
        ids: &[String],
    ) -> Result<DeletedPlugins, String> {
        let mut tables = self.tables();
        if let Some(missing) = first_missing(&tables.plugins, ids) {
            return Err(missing.clone());
        }
        let (mut plugins, mut selectors, mut rules) = (Vec::new(), Vec::new(), Vec::new());
        for id in ids {
            let owned = tables.selectors_of(id);
            for selector in &owned {
                let owned_rules = tables.rules_of(&selector.id);
                for rule in &owned_rules {
                    tables.rules.remove(&rule.id);
                }
                tables.selectors.remove(&selector.id);
                rules.extend(owned_rules);
            }
            tables.plugin_handles.retain(|_, h| h.plugin_id != *id);
            plugins.extend(tables.plugins.remove(id));
            selectors.extend(owned);
        }
        Ok((plugins, selectors, rules))
    }

    /// [`Store::set_plugins_enabled`](crate::store::Store::set_plugins_enabled).
    pub(in crate::store) fn set_plugins_enabled(
        &self,
        ids: &[String],
        enabled: bool,
        now: &str,
    ) -> Batch<PluginRecord> {
        set_enabled(&mut self.tables().plugins, ids, enabled, now)
    }

    /// [`Store::plugin_handles`](crate::store::Store::plugin_handles): by plugin id, type,
    /// sort, then id.
    pub(in crate::store) fn plugin_handles(&self) -> Vec<PluginHandleRecord> {
        sorted(self.tables().plugin_handles.values(), |a, b| {
            (&a.plugin_id, a.handle_type, a.sort, &a.id).cmp(&(
                &b.plugin_id,
                b.handle_type,
                b.sort,
                &b.id,
            ))
        })
    }

    /// [`Store::plugin_handle`](crate::store::Store::plugin_handle).
    pub(in crate::store) fn plugin_handle(&self, id: &str) -> Option<PluginHandleRecord> {
        self.tables().plugin_handles.get(id).cloned()
    }

    /// [`Store::put_plugin_handle`](crate::store::Store::put_plugin_handle): a unique
    /// violation for a taken (plugin, field, type), else a foreign key violation for an
    /// unknown plugin.
    pub(in crate::store) fn put_plugin_handle(
        &self,
        h: &PluginHandleRecord,
    ) -> Result<(), StoreError> {
        let mut tables = self.tables();
        let clash = |o: &PluginHandleRecord| {
            o.plugin_id == h.plugin_id && o.field == h.field && o.handle_type == h.handle_type
        };
        if taken(&tables.plugin_handles, &h.id, clash) {
            return Err(Violation::unique(
                "plugin_handle",
                &["plugin_id", "field", "type"],
            ));
        }
        if !tables.plugins.contains_key(&h.plugin_id) {
            return Err(Violation::foreign_key());
        }
        upsert(&mut tables.plugin_handles, h);
        Ok(())
    }

    /// [`Store::delete_plugin_handles`](crate::store::Store::delete_plugin_handles): all or
    /// none.
    pub(in crate::store) fn delete_plugin_handles(
        &self,
        ids: &[String],
    ) -> Batch<PluginHandleRecord> {
        let mut tables = self.tables();
        if let Some(missing) = first_missing(&tables.plugin_handles, ids) {
            return Err(missing.clone());
        }
        Ok(delete_known(&mut tables.plugin_handles, ids))
    }
}
