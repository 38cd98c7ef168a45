//! Observing the churn check ([`crate::judge::churn`]): steady load on the stable route for a
//! baseline phase, then again while the harness churns routes of its own on the admin; at the
//! end it deletes what it made and waits until every running gateway holds the admin's config
//! again.

use model::lock::MutexExt;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use model::SelectorDto;
use serde_json::json;

use super::Case;
use super::checks::NoVerdict;
use crate::client::AdminClient;
use crate::judge::churn::{ChurnObservation, Phase};
use crate::lower::{self, Addresses};
use crate::probe::judge;
use crate::scenario::ast::{ChurnSpec, RuleSpec, SelectorSpec, UpdateSelector};

/// Where the churned routes live: `/gantry-churn/<slot>/`.
const PREFIX: &str = "/gantry-churn";

/// Where the held routes live: `/gantry-held/<i>/`.
const HELD_PREFIX: &str = "/gantry-held";

/// Held routes created at once (the admin's writes queue on its database anyway).
const HOLD_IN_FLIGHT: usize = 8;

/// How many churned routes cycle beside a burst's: enough that a slow admin answer does not
/// leave a tick without an idle route.
const SLOTS: u32 = 32;

/// The stage of one churned route; each admin change moves it to the next.
#[derive(Debug)]
enum Stage {
    /// Nothing on the admin.
    Empty,
    /// A selector without a rule.
    Selector { id: String, dto: SelectorDto },
    /// A selector with its rule.
    Ruled { id: String, dto: SelectorDto },
    /// Its upstream and conditions changed.
    Updated { id: String },
}

/// One churned route.
#[derive(Debug)]
struct Slot {
    index: u32,
    /// How many times it went through the cycle (picks its upstreams).
    round: usize,
    stage: Stage,
}

/// What the churned routes are made of.
struct Churner<'a> {
    admin: &'a AdminClient,
    plugin_id: String,
    addrs: &'a Addresses,
    /// The case's upstreams, by name.
    upstreams: Vec<String>,
}

/// A divide selector `name` on the paths under `path` to the `upstream`.
fn route(name: &str, path: &str, upstream: &str) -> SelectorSpec {
    serde_json::from_value(json!({
        "name": name,
        "plugin": "divide",
        "conditions": [{ "paramType": "uri", "operator": "startsWith", "paramValue": path }],
        "upstreams": [{ "upstream": upstream }],
    }))
    .expect("a churn selector is a valid spec")
}

/// The one rule of a route on the paths under `path`.
fn all_under(path: &str) -> RuleSpec {
    serde_json::from_value(json!({
        "name": "all",
        "conditions": [{ "paramType": "uri", "operator": "startsWith", "paramValue": path }],
    }))
    .expect("a churn rule is a valid spec")
}

impl Churner<'_> {
    /// Slot `index`'s selector at `round` (`upstream` picks among the case's upstreams,
    /// `deeper` narrows its path, for an update).
    fn selector(&self, index: u32, upstream: usize, deeper: bool) -> SelectorSpec {
        let path = if deeper {
            format!("{PREFIX}/{index}/x/")
        } else {
            format!("{PREFIX}/{index}/")
        };
        route(
            &format!("gantry-churn-{index}"),
            &path,
            &self.upstreams[upstream % self.upstreams.len()],
        )
    }

    /// Creates the selector of `spec` on the admin: its id and what was sent.
    async fn create(&self, spec: &SelectorSpec) -> Result<(String, SelectorDto), String> {
        let dto = lower::selector_dto(spec, &self.plugin_id, self.addrs);
        let id = self
            .admin
            .create_selector(&dto)
            .await
            .map_err(|e| e.to_string())?;
        Ok((id, dto))
    }

    /// Creates held route `index` (its selector, then its rule): the selector's id, if it
    /// was made, and whether the rule was too.
    async fn hold_one(&self, index: u32) -> (Option<String>, Result<(), String>) {
        let path = format!("{HELD_PREFIX}/{index}/");
        let upstream = &self.upstreams[index as usize % self.upstreams.len()];
        let spec = route(&format!("gantry-held-{index}"), &path, upstream);
        let id = match self.create(&spec).await {
            Ok((id, _)) => id,
            Err(e) => return (None, Err(e)),
        };
        let rule = self
            .admin
            .create_rule(&lower::rule_dto(&all_under(&path), &id))
            .await;
        let made = match rule {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(format!("the rule of held route {index} is not listed")),
            Err(e) => Err(e.to_string()),
        };
        (Some(id), made)
    }

    /// Creates `n` held routes, [`HOLD_IN_FLIGHT`] at a time: the ids of every selector made
    /// (those in flight when one failed included, so all can be deleted), and the first
    /// error (after which no more are started).
    async fn hold(&self, n: u32) -> (Vec<String>, Option<String>) {
        let failed = AtomicBool::new(false);
        let failed = &failed;
        let mut made = futures_util::stream::iter(0..n)
            .map(|index| async move {
                if failed.load(Ordering::Relaxed) {
                    return (None, Ok(()));
                }
                self.hold_one(index).await
            })
            .buffer_unordered(HOLD_IN_FLIGHT);
        let (mut ids, mut error) = (Vec::new(), None);
        while let Some((id, result)) = made.next().await {
            ids.extend(id);
            if let Err(e) = result {
                failed.store(true, Ordering::Relaxed);
                error.get_or_insert(e);
            }
        }
        (ids, error)
    }

    /// Makes the next admin change of `slot`.
    async fn advance(&self, slot: &mut Slot) -> Result<(), String> {
        let (index, round) = (slot.index, slot.round);
        slot.stage = match std::mem::replace(&mut slot.stage, Stage::Empty) {
            Stage::Empty => {
                let (id, dto) = self.create(&self.selector(index, round, false)).await?;
                Stage::Selector { id, dto }
            }
            Stage::Selector { id, dto } => {
                let rule = all_under(&format!("{PREFIX}/{index}/"));
                let created = self.admin.create_rule(&lower::rule_dto(&rule, &id)).await;
                match created {
                    Ok(Some(_)) => Stage::Ruled { id, dto },
                    Ok(None) => {
                        slot.stage = Stage::Selector { id, dto };
                        return Err(format!(
                            "the rule of churned selector {index} is not listed"
                        ));
                    }
                    Err(e) => {
                        slot.stage = Stage::Selector { id, dto };
                        return Err(e.to_string());
                    }
                }
            }
            Stage::Ruled { id, mut dto } => {
                let next = self.selector(index, round + 1, true);
                let change = UpdateSelector {
                    name: next.name,
                    upstreams: Some(next.upstreams),
                    conditions: Some(next.conditions),
                    ..Default::default()
                };
                lower::update_selector(&mut dto, &id, &change, self.addrs);
                if let Err(e) = self.admin.update_selector(&id, &dto).await {
                    slot.stage = Stage::Ruled { id, dto };
                    return Err(e.to_string());
                }
                Stage::Updated { id }
            }
            Stage::Updated { id } => {
                if let Err(e) = self.delete(std::slice::from_ref(&id)).await {
                    slot.stage = Stage::Updated { id };
                    return Err(e);
                }
                slot.round += 1;
                Stage::Empty
            }
        };
        Ok(())
    }

    /// Deletes the selectors `ids` (with their rules).
    async fn delete(&self, ids: &[String]) -> Result<(), String> {
        let deleted = self
            .admin
            .delete_selectors(ids)
            .await
            .map_err(|e| e.to_string())?;
        if usize::try_from(deleted).ok() == Some(ids.len()) {
            Ok(())
        } else {
            Err(format!(
                "deleting churned selectors {ids:?}: the admin deleted {deleted}"
            ))
        }
    }
}

/// Admin changes made during the churn phase.
#[derive(Debug, Default)]
struct Changes {
    acknowledged: u64,
    failed: u64,
    first_errors: Vec<String>,
}

impl Changes {
    fn count(&mut self, result: Result<(), String>) {
        match result {
            Ok(()) => self.acknowledged += 1,
            Err(e) => {
                self.failed += 1;
                if self.first_errors.len() < 3 {
                    self.first_errors.push(e);
                }
            }
        }
    }
}

impl Case<'_> {
    /// Runs both phases of a churn check and cleans up after it.
    pub(super) async fn churn(
        &self,
        admin: &AdminClient,
        spec: &ChurnSpec,
    ) -> Result<ChurnObservation, NoVerdict> {
        let plugin_id = admin
            .plugin_id("divide")
            .await
            .map_err(|e| NoVerdict::Failed(e.to_string()))?
            .ok_or_else(|| NoVerdict::Failed("the admin has no divide plugin".to_owned()))?;
        let churner = Churner {
            admin,
            plugin_id,
            addrs: &self.addrs,
            upstreams: self.addrs.keys().cloned().collect(),
        };
        let slots = SLOTS + spec.burst.map_or(0, |b| b.changes);
        let slots: Vec<Slot> = (0..slots)
            .map(|index| Slot {
                index,
                round: 0,
                stage: Stage::Empty,
            })
            .collect();

        let (held, error) = churner.hold(spec.held).await;
        if let Some(error) = error {
            let cleaned = churner.delete(&held).await.err();
            return Err(NoVerdict::Failed(format!(
                "creating the {} held routes ({} made): {error}{}",
                spec.held,
                held.len(),
                cleaned.map_or(String::new(), |e| format!("; cleaning them up: {e}"))
            )));
        }
        if !held.is_empty() {
            self.digests_converge(admin, "digest equality with the held routes")
                .await
                .map_err(|e| NoVerdict::Failed(e.to_string()))?;
        }

        let stop = AtomicBool::new(false);
        let (baseline, ()) = tokio::join!(self.load(spec, &stop), async {
            tokio::time::sleep(spec.duration).await;
            stop.store(true, Ordering::Relaxed);
        });

        stop.store(false, Ordering::Relaxed);
        let started = Instant::now();
        let (churn, (changes, slots)) = tokio::join!(self.load(spec, &stop), async {
            let done = churn_for(&churner, slots, spec).await;
            stop.store(true, Ordering::Relaxed);
            done
        });
        let churn_secs = started.elapsed().as_secs_f64();

        let left: Vec<String> = slots
            .iter()
            .filter_map(|s| match &s.stage {
                Stage::Empty => None,
                Stage::Selector { id, .. } | Stage::Ruled { id, .. } | Stage::Updated { id } => {
                    Some(id.clone())
                }
            })
            .chain(held)
            .collect();
        if !left.is_empty() {
            churner
                .delete(&left)
                .await
                .map_err(|e| NoVerdict::Failed(format!("cleaning up after churn: {e}")))?;
        }
        self.digests_converge(admin, "digest equality after churn")
            .await
            .map_err(|e| NoVerdict::Failed(e.to_string()))?;
        Ok(ChurnObservation {
            baseline,
            churn,
            changes: changes.acknowledged,
            failed_changes: (changes.failed, changes.first_errors),
            churn_secs,
            held: spec.held,
        })
    }

    /// `spec.request_rate` requests a second on the stable route over `spec.connections`
    /// connections, each paced (a tick missed while its request is in flight is skipped),
    /// until `stop`; each answer judged against `spec.expect`. The connections are spread
    /// over every running gateway (connection `c` to the `c % n`th); with several, a miss
    /// names its gateway.
    async fn load(&self, spec: &ChurnSpec, stop: &AtomicBool) -> Phase {
        let names = self.names.locked().clone();
        let names = &names;
        let running = self.running_gateways();
        let started = Instant::now();
        let period = Duration::from_secs(1) * spec.connections / spec.request_rate.max(1);
        let connections = (0..spec.connections).map(|c| {
            let at = running[c as usize % running.len()];
            let gateway = &self.gateways[at];
            let named = (self.gateways.len() > 1).then(|| self.gateway_name(at));
            async move {
                let mut phase = Phase::default();
                // The connections' ticks are spread over the period.
                let first = tokio::time::Instant::now() + period * c / spec.connections.max(1);
                let mut tick = tokio::time::interval_at(first, period);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                while !stop.load(Ordering::Relaxed) {
                    tick.tick().await;
                    let sent = Instant::now();
                    let outcome = match gateway.send(&spec.request).await {
                        Ok(resp) => judge(&spec.expect, &resp, names),
                        Err(e) => Err(e.to_string()),
                    };
                    let outcome = outcome.map_err(|e| match &named {
                        Some(gateway) => format!("{gateway}: {e}"),
                        None => e,
                    });
                    phase.record(
                        (sent - started).as_secs_f64() * 1000.0,
                        u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX),
                        outcome,
                    );
                }
                phase
            }
        });
        futures_util::future::join_all(connections)
            .await
            .into_iter()
            .fold(Phase::default(), Phase::merge)
    }
}

/// Makes admin changes at `spec.rate` (one idle slot's next change per tick) and
/// `spec.burst`s (that many idle slots' changes at once) for `spec.duration`; a slot's changes
/// are made in order, different slots' overlap (so the admin's latency does not cap the rate).
/// A tick that finds no idle slot makes no change (the achieved rate shows it). Returns once
/// every change under way has been answered, with every slot.
async fn churn_for(
    churner: &Churner<'_>,
    slots: Vec<Slot>,
    spec: &ChurnSpec,
) -> (Changes, Vec<Slot>) {
    let mut changes = Changes::default();
    let mut idle: VecDeque<Slot> = slots.into();
    let mut busy = FuturesUnordered::new();
    let deadline = tokio::time::Instant::now() + spec.duration;
    let mut tick = tokio::time::interval(Duration::from_secs(1) / spec.rate.max(1));
    let mut burst = spec.burst.map(|b| {
        let mut i = tokio::time::interval(b.every);
        i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        (i, b.changes as usize)
    });
    loop {
        let n = tokio::select! {
            biased;
            () = tokio::time::sleep_until(deadline) => break,
            Some((slot, result)) = busy.next() => {
                changes.count(result);
                idle.push_back(slot);
                continue;
            }
            n = async {
                match &mut burst {
                    Some((every, n)) => {
                        every.tick().await;
                        *n
                    }
                    None => std::future::pending().await,
                }
            } => n,
            _ = tick.tick() => 1,
        };
        for mut slot in idle.drain(..n.min(idle.len())) {
            busy.push(async move {
                let result = churner.advance(&mut slot).await;
                (slot, result)
            });
        }
    }
    while let Some((slot, result)) = busy.next().await {
        changes.count(result);
        idle.push_back(slot);
    }
    (changes, idle.into())
}
