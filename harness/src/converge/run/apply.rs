//! Sending a history's operations to the admin, faults around them, and recording what the
//! admin acknowledged.

use std::time::Instant;

use model::{ConditionDto, MatchMode, RuleDto, SelectorDto};

use super::super::history::{History, Op, Step, Upstream};
use super::live::{CaseState, Live};
use super::paths::{context_path, registered_path, route_path};
use crate::client::AdminClient;
use crate::lower::{custom_selector, divide_rule};
use crate::runner::register_client;

impl Live {
    /// Applies every step; returns when the last fault was healed (or the last operation
    /// acknowledged). Every fault is healed even when an operation inside it fails.
    pub(super) async fn apply(
        &mut self,
        case: u64,
        history: &History,
        state: &mut CaseState,
    ) -> Result<Instant, String> {
        for step in &history.0 {
            match step {
                Step::Op(op) => self.op(case, *op, state).await?,
                Step::Fault { fault, during } => {
                    let etcd_before = self.inject(*fault).await?;
                    self.faults += 1;
                    *self.fault_kinds.entry(fault.kind()).or_default() += 1;
                    let writes = state.writes;
                    let mut done = Ok(());
                    for op in during {
                        done = self.op(case, *op, state).await;
                        if done.is_err() {
                            break;
                        }
                    }
                    // A compaction covers the operations during it: at least one etcd write
                    // each that changed something (the runner's `compact: etcd` counts one per
                    // admin change).
                    let writes = state.writes - writes;
                    let others = match fault.one_gateway() {
                        Some(down) => self.others_answer(down).await,
                        None => Ok(()),
                    };
                    self.heal(*fault, etcd_before.map(|r| r + writes)).await?;
                    done?;
                    others?;
                }
            }
        }
        Ok(Instant::now())
    }

    /// Sends `op` when it applies (see [`Writer::op`]).
    async fn op(&self, case: u64, op: Op, state: &mut CaseState) -> Result<(), String> {
        let addresses = [Upstream::Alpha, Upstream::Beta]
            .map(|u| self.topo.upstream_address(u.name()).unwrap_or_default());
        let writer = Writer {
            admin: &self.admin,
            plugin_id: &self.plugin_id,
            handles: &self.handles,
            addresses,
        };
        writer.op(case, op, state).await
    }
}

/// Sends a history's operations to an admin: on the live topology ([`Live`]) and in
/// `gantry sim`, where the client hands them to the admin's router in process.
#[derive(Debug)]
pub(crate) struct Writer<'a> {
    /// The admin, logged in.
    pub(crate) admin: &'a AdminClient,
    /// The divide plugin's id.
    pub(crate) plugin_id: &'a str,
    /// The divide handles sending to alpha and to beta.
    pub(crate) handles: &'a [String; 2],
    /// Alpha's and beta's `host:port`, as registrations name them.
    pub(crate) addresses: [String; 2],
}

impl Writer<'_> {
    /// Sends `op` when it applies; records it in the model once the admin acknowledged it.
    pub(crate) async fn op(&self, case: u64, op: Op, state: &mut CaseState) -> Result<(), String> {
        if !state.model.applies(op) {
            return Ok(());
        }
        let failed = |e: &dyn std::fmt::Display| format!("the admin failed `{op}`: {e}");
        match op {
            Op::Put { key, upstream } => {
                let selector = match state.ids.get(&key) {
                    Some((id, _)) => {
                        let dto = self.selector(case, key, upstream, state.model.enabled(key));
                        self.admin
                            .update_selector(id, &dto)
                            .await
                            .map_err(|e| failed(&e))?;
                        id.clone()
                    }
                    None => {
                        let dto = self.selector(case, key, upstream, true);
                        let id = self
                            .admin
                            .create_selector(&dto)
                            .await
                            .map_err(|e| failed(&e))?;
                        state.ids.insert(key, (id.clone(), None));
                        id
                    }
                };
                if !state.model.has_rule(key) {
                    let rule = self
                        .admin
                        .create_rule(&rule(case, key, &selector))
                        .await
                        .map_err(|e| failed(&e))?
                        .ok_or_else(|| failed(&"the new rule is not listed"))?;
                    if let Some(ids) = state.ids.get_mut(&key) {
                        ids.1 = Some(rule);
                    }
                }
            }
            Op::Enable { key, on } => {
                let (id, _) = &state.ids[&key];
                let upstream = match state.model.upstream(key) {
                    Some(u) => u,
                    None => return Err(failed(&"harness bug: the route has no upstream")),
                };
                let dto = self.selector(case, key, upstream, on);
                self.admin
                    .update_selector(id, &dto)
                    .await
                    .map_err(|e| failed(&e))?;
            }
            Op::Delete { key } => {
                let (id, _) = &state.ids[&key];
                self.admin
                    .delete_selectors(std::slice::from_ref(id))
                    .await
                    .map_err(|e| failed(&e))?;
                state.ids.remove(&key);
            }
            Op::DeleteRule { key } => {
                let rule = state.ids.get_mut(&key).and_then(|ids| ids.1.take());
                let rule = rule.ok_or_else(|| failed(&"harness bug: no rule id"))?;
                self.admin
                    .delete_rules(&[rule])
                    .await
                    .map_err(|e| failed(&e))?;
            }
            Op::Plugin { on } => {
                self.admin
                    .enable_plugins(&[self.plugin_id.to_owned()], on)
                    .await
                    .map_err(|e| failed(&e))?;
            }
            Op::Register { key, upstream } => {
                let address = match upstream {
                    Upstream::Alpha => &self.addresses[0],
                    Upstream::Beta => &self.addresses[1],
                };
                let app = format!("conv-{case}-app-{key}");
                let paths = [registered_path(case, key)];
                let ids =
                    register_client(self.admin, &app, &context_path(case, key), &paths, address)
                        .await
                        .map_err(|e| failed(&e))?;
                state.registered.insert(key, ids);
                state.registrations += 1;
            }
        }
        state.writes += i64::from(state.model.writes(op));
        state.model.acknowledged(op);
        state.acknowledged += 1;
        Ok(())
    }

    fn selector(&self, case: u64, key: u8, upstream: Upstream, enabled: bool) -> SelectorDto {
        let handle = match upstream {
            Upstream::Alpha => &self.handles[0],
            Upstream::Beta => &self.handles[1],
        };
        let condition = ConditionDto::new("uri", "=", "", &route_path(case, key));
        SelectorDto {
            enabled: Some(enabled),
            ..custom_selector(
                self.plugin_id,
                &format!("conv-{case}-{key}"),
                handle,
                vec![condition],
            )
        }
    }
}

fn rule(case: u64, key: u8, selector: &str) -> RuleDto {
    let condition = ConditionDto::new("uri", "=", "", &route_path(case, key));
    divide_rule(
        selector,
        &format!("conv-{case}-{key}-rule"),
        MatchMode::And,
        vec![condition],
    )
}
