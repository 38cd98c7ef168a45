//! Metadata, app auth entries and dashboard users, in memory: the twins of `store/meta.rs`,
//! `store/app_auths.rs` and `store/users.rs`.

use super::{Memory, Tables, Violation, delete_known, find, set_enabled, sorted, taken, upsert};
use crate::store::{AppAuthRecord, Batch, MetaRecord, StoreError, UserRecord};

impl Tables {
    /// Refuses metadata `m` as the `meta_data` table's UNIQUE path would.
    pub(super) fn check_meta(&self, m: &MetaRecord) -> Result<(), StoreError> {
        if taken(&self.meta, &m.id, |o| o.path == m.path) {
            Err(Violation::unique("meta_data", &["path"]))
        } else {
            Ok(())
        }
    }
}

impl Memory {
    /// [`Store::meta_data`](crate::store::Store::meta_data): by id.
    pub(in crate::store) fn meta_data(&self) -> Vec<MetaRecord> {
        self.tables().meta.values().cloned().collect()
    }

    /// [`Store::meta`](crate::store::Store::meta).
    pub(in crate::store) fn meta(&self, id: &str) -> Option<MetaRecord> {
        self.tables().meta.get(id).cloned()
    }

    /// [`Store::meta_by_path`](crate::store::Store::meta_by_path).
    pub(in crate::store) fn meta_by_path(&self, path: &str) -> Option<MetaRecord> {
        find(&self.tables().meta, |m| m.path == path)
    }

    /// [`Store::put_meta`](crate::store::Store::put_meta): a unique violation for a path
    /// another entry has.
    pub(in crate::store) fn put_meta(&self, m: &MetaRecord) -> Result<(), StoreError> {
        let mut tables = self.tables();
        tables.check_meta(m)?;
        upsert(&mut tables.meta, m);
        Ok(())
    }

    /// [`Store::delete_meta`](crate::store::Store::delete_meta): the entries found, in the
    /// order named.
    pub(in crate::store) fn delete_meta(&self, ids: &[String]) -> Vec<MetaRecord> {
        delete_known(&mut self.tables().meta, ids)
    }

    /// [`Store::set_meta_enabled`](crate::store::Store::set_meta_enabled).
    pub(in crate::store) fn set_meta_enabled(
        &self,
        ids: &[String],
        enabled: bool,
        now: &str,
    ) -> Batch<MetaRecord> {
        set_enabled(&mut self.tables().meta, ids, enabled, now)
    }

    /// [`Store::app_auths`](crate::store::Store::app_auths): by app key.
    pub(in crate::store) fn app_auths(&self) -> Vec<AppAuthRecord> {
        sorted(self.tables().app_auths.values(), |a, b| {
            a.app_key.cmp(&b.app_key)
        })
    }

    /// [`Store::app_auth`](crate::store::Store::app_auth).
    pub(in crate::store) fn app_auth(&self, id: &str) -> Option<AppAuthRecord> {
        self.tables().app_auths.get(id).cloned()
    }

    /// [`Store::put_app_auth`](crate::store::Store::put_app_auth): a unique violation for an
    /// app key another entry has.
    pub(in crate::store) fn put_app_auth(&self, a: &AppAuthRecord) -> Result<(), StoreError> {
        let mut tables = self.tables();
        if taken(&tables.app_auths, &a.id, |o| o.app_key == a.app_key) {
            return Err(Violation::unique("app_auth", &["app_key"]));
        }
        upsert(&mut tables.app_auths, a);
        Ok(())
    }

    /// [`Store::delete_app_auths`](crate::store::Store::delete_app_auths): the entries found,
    /// in the order named.
    pub(in crate::store) fn delete_app_auths(&self, ids: &[String]) -> Vec<AppAuthRecord> {
        delete_known(&mut self.tables().app_auths, ids)
    }

    /// [`Store::set_app_auths_enabled`](crate::store::Store::set_app_auths_enabled).
    pub(in crate::store) fn set_app_auths_enabled(
        &self,
        ids: &[String],
        enabled: bool,
        now: &str,
    ) -> Batch<AppAuthRecord> {
        set_enabled(&mut self.tables().app_auths, ids, enabled, now)
    }

    /// [`Store::users`](crate::store::Store::users): by name.
    pub(in crate::store) fn users(&self) -> Vec<UserRecord> {
        sorted(self.tables().users.values(), |a, b| {
            a.user_name.cmp(&b.user_name)
        })
    }

    /// [`Store::user_named`](crate::store::Store::user_named).
    pub(in crate::store) fn user_named(&self, user_name: &str) -> Option<UserRecord> {
        find(&self.tables().users, |u| u.user_name == user_name)
    }

    /// [`Store::insert_user_if_absent`](crate::store::Store::insert_user_if_absent)
    /// (`ON CONFLICT DO NOTHING`: a taken id or name inserts nothing).
    pub(in crate::store) fn insert_user_if_absent(&self, user: &UserRecord) -> bool {
        let mut tables = self.tables();
        let name_taken = tables.users.values().any(|u| u.user_name == user.user_name);
        if name_taken || tables.users.contains_key(&user.id) {
            return false;
        }
        tables.users.insert(user.id.clone(), user.clone());
        true
    }

    /// [`Store::put_user_password`](crate::store::Store::put_user_password)
    /// (`ON CONFLICT (user_name) DO UPDATE`: the name is checked first, as SQLite and
    /// PostgreSQL check a conflict target first; a new name with a taken id is refused).
    pub(in crate::store) fn put_user_password(&self, user: &UserRecord) -> Result<(), StoreError> {
        let mut tables = self.tables();
        let named = tables
            .users
            .values_mut()
            .find(|u| u.user_name == user.user_name);
        if let Some(stored) = named {
            stored.password.clone_from(&user.password);
            stored.date_updated.clone_from(&user.date_updated);
            return Ok(());
        }
        if tables.users.contains_key(&user.id) {
            return Err(Violation::primary_key("dashboard_user"));
        }
        tables.users.insert(user.id.clone(), user.clone());
        Ok(())
    }

    /// [`Store::set_user_enabled`](crate::store::Store::set_user_enabled).
    pub(in crate::store) fn set_user_enabled(
        &self,
        user_name: &str,
        enabled: bool,
        now: &str,
    ) -> bool {
        let mut tables = self.tables();
        let named = tables.users.values_mut().find(|u| u.user_name == user_name);
        let Some(user) = named else {
            return false;
        };
        user.enabled = enabled;
        now.clone_into(&mut user.date_updated);
        true
    }
}
