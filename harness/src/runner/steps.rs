//! The steps: each one's admin changes and faults (faults in [`super::faults`]), its wait
//! and digest equality with its `during` probe sent throughout, its `isolated` claim, then its
//! checks.

use model::lock::MutexExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;

use super::faults::{Faulted, StepAdmins};
use super::made::Made;
use super::refused::{Refused, refused};
use super::setup::create_rule;
use super::traffic::Phase;
use super::{Case, StepResult, at, millis, now_us};
use crate::client::AdminClient;
use crate::error::{RunErrorKind, Step};
use crate::judge::Measurements;
use crate::lower;
use crate::report::{CheckOutcome, CheckReport, Event};
use crate::scenario::ast::{AdminChange, Change, Fault, Refusal, Target, Wait};

/// Why a step's `isolated` claim is skipped on a target without gantry's config digest.
const NO_DIGEST_ISOLATION: &str = "the target serves no config digest (GET /actuator/digest): \
    whether the step's change reached the gateway cannot be read";

/// How often a step's `isolated` claim reads the digests.
const ISOLATION_POLL: Duration = Duration::from_millis(20);

/// A plugin whose enabled flag a step changed: its id and original flag.
pub(super) struct ChangedPlugin {
    pub(super) id: String,
    pub(super) enabled: bool,
}

/// A step's delete of one object must report exactly one deleted.
fn one_deleted(deleted: i64) -> StepResult<()> {
    if deleted == 1 {
        return Ok(());
    }
    Err((
        Step::Steps,
        RunErrorKind::DeleteCount {
            deleted,
            expected: 1,
        },
    ))
}

/// A step's `converge` bound on its wait and the digest equality after it: both end by
/// `end`, counted from the end of the step's changes (after an `isolated` hold, which keeps
/// the change away on purpose).
struct Bound {
    /// The step's name.
    step: String,
    /// The bound as failures name it: `5s`.
    text: String,
    /// Whose bound it is: the step's own, or the default, and its stretch by the run mode.
    whose: String,
    /// The bound.
    bound: Duration,
    /// When it started.
    start: Instant,
    /// When it ends.
    end: Instant,
}

impl Bound {
    /// Step `st`'s bound `bound`, `stretch` times as long (`RunMode::stretch`), from now.
    fn new(st: &crate::scenario::ast::StepSpec, bound: Duration, stretch: u32) -> Bound {
        let start = Instant::now();
        let mut whose = match st.converge {
            Some(_) => "the step's bound",
            None => "the default bound of a step with faults",
        }
        .to_owned();
        let stretched = bound * stretch;
        if stretch > 1 {
            whose += &format!(
                ", stretched ×{stretch} by the run mode to {}",
                humantime::format_duration(stretched)
            );
        }
        Bound {
            step: st.name.clone(),
            text: humantime::format_duration(bound).to_string(),
            whose,
            bound: stretched,
            start,
            end: start + stretched,
        }
    }

    /// `wait` with its timeout cut to what is left of the bound.
    fn cap(&self, wait: &Wait) -> Wait {
        let left = self.end.saturating_duration_since(Instant::now());
        Wait {
            timeout: wait.timeout.min(left),
            ..wait.clone()
        }
    }

    /// A wait's failure `e`, naming the bound when the wait (whose own timeout would have
    /// ended it at `own_end`) timed out at the bound rather than at its own timeout.
    fn missed(&self, e: RunErrorKind, own_end: Instant) -> RunErrorKind {
        match e {
            RunErrorKind::Timeout { what, source } if self.end < own_end => {
                let prefix = format!("step `{}`: ", self.step);
                let what = what.strip_prefix(&prefix).unwrap_or(&what);
                self.error(format!("{what}: {source}"))
            }
            e => e,
        }
    }

    /// The wait and the digest equality ended within the bound (a check can end after the
    /// deadline by as long as it takes).
    fn kept(&self) -> Result<(), RunErrorKind> {
        let took = self.start.elapsed();
        match took > self.bound {
            true => Err(self.error(format!(
                "the wait and digest equality took {} ms",
                millis(took)
            ))),
            false => Ok(()),
        }
    }

    fn error(&self, detail: String) -> RunErrorKind {
        RunErrorKind::NotConverged {
            step: self.step.clone(),
            bound: self.text.clone(),
            whose: self.whose.clone(),
            detail,
        }
    }
}

impl Case<'_> {
    /// Runs every step: its changes and faults, its wait, digest equality (bounded by
    /// `converge` after faults; skipped while the admin is down) with its `during` traffic
    /// sent throughout, then its checks; the scenario's background `traffic` is sent
    /// meanwhile, each over its steps, and reported once they are over (its failure first).
    /// A started or restarted admin forgets its sessions, so `admin` logs in again.
    pub(super) async fn steps(
        &self,
        admin: &mut AdminClient,
        made: &mut Made,
        plugins: &mut Vec<ChangedPlugin>,
    ) -> StepResult<()> {
        let (phase, watching) = watch::channel(Phase::default());
        let traffic = (self.scenario.traffic.iter()).map(|t| self.background(t, watching.clone()));
        let steps = async {
            let result = self.each_step(admin, made, plugins, &phase).await;
            phase.send_modify(|p| p.over = true);
            result
        };
        let (result, seen) = tokio::join!(steps, futures_util::future::join_all(traffic));
        self.traffic_reports(seen)?;
        result
    }

    /// The steps of [`Self::steps`], each one's start and end told to `phase`.
    async fn each_step(
        &self,
        admin: &mut AdminClient,
        made: &mut Made,
        plugins: &mut Vec<ChangedPlugin>,
        phase: &watch::Sender<Phase>,
    ) -> StepResult<()> {
        let mut faulted = Faulted::default();
        for (i, st) in self.scenario.steps.iter().enumerate() {
            if self.restart_between_steps {
                self.restart_before(&st.name, admin, &faulted).await?;
            }
            phase.send_modify(|p| p.begun = i + 1);
            let done = AtomicBool::new(false);
            let work = async {
                let result = self
                    .step_until_converged(i, admin, &mut faulted, made, plugins)
                    .await;
                done.store(true, Ordering::Relaxed);
                result
            };
            let (result, sent) = match &st.during {
                Some(during) => {
                    let (result, sent) = tokio::join!(work, self.during(during, &done));
                    (result, Some(sent))
                }
                None => (work.await, None),
            };
            // A starvation ends with its step's wait, digest equality and `during`.
            faulted.starved = None;
            if let (Some(during), Some(sent)) = (&st.during, sent) {
                self.during_report(st, i, during, &sent)?;
            }
            result?;
            self.checks(admin, &st.checks, Some(&st.name), made)
                .await
                .map_err(at(Step::Steps))?;
            phase.send_modify(|p| p.ended = i + 1);
        }
        Ok(())
    }

    /// Step `index`: its changes and faults, its wait and digest equality.
    async fn step_until_converged(
        &self,
        index: usize,
        admin: &mut AdminClient,
        faulted: &mut Faulted,
        made: &mut Made,
        plugins: &mut Vec<ChangedPlugin>,
    ) -> StepResult<()> {
        let st = &self.scenario.steps[index];
        // The precheck: the wait probed once on every running gateway before the changes.
        let before = self.running_gateways();
        let passed = match st.precheck.runs() {
            true => (self.passes_already(&st.wait, &format!("steps[{index}].wait"))).await,
            false => None,
        };
        let mut admins = StepAdmins {
            case: admin,
            via: st.via.and_then(Target::index),
            via_client: None,
        };
        // A compaction covers the step's writes (at least one per admin change before it):
        // etcd's revision before its changes, and the admin changes made so far.
        let mut admin_changes = 0;
        let compacts = (st.changes.iter()).any(|c| matches!(c, Change::Fault(Fault::Compact(_))));
        let etcd_before = match compacts {
            true => self.topo.etcd_revision().await.map_err(at(Step::Steps))?,
            false => 0,
        };
        // A refused step leaves the admin's config as it found it: read before its changes,
        // compared after all of them (a fault that keeps the database away is healed by then).
        let unrefused = match &st.refused {
            Some(_) => Some(config_digest(admins.client(self).await?).await?),
            None => None,
        };
        for (c, change) in st.changes.iter().enumerate() {
            match change {
                Change::Admin(change) => {
                    admin_changes += 1;
                    let field = format!("steps[{index}].changes[{c}].{}", change.name());
                    let client = admins.client(self).await?;
                    let applied = self.apply(client, &st.name, &field, change, made, plugins);
                    match &st.refused {
                        Some(refusal) => must_refuse(&field, refusal, applied).await?,
                        None => applied.await?,
                    }
                }
                Change::Fault(fault) => {
                    let compact_from = etcd_before + admin_changes;
                    self.fault(st, fault, &mut admins, compact_from, faulted)
                        .await?;
                }
            }
        }
        if let Some(before) = unrefused {
            let field = format!("steps[{index}].refused");
            nothing_written(admins.client(self).await?, &field, before).await?;
        }
        let admin = admins.case;
        let committed = now_us();
        // A gateway that started or resumed in the step joins its wait, which could not pass
        // on it before: the wait proves something there.
        let joined = (self.running_gateways().iter()).any(|g| !before.contains(g));
        if let (Some(got), false) = (passed, joined) {
            return Err((
                Step::Steps,
                RunErrorKind::StepWaitPassesBefore {
                    step: st.name.clone(),
                    got,
                },
            ));
        }
        if let Some(hold) = st.isolated {
            self.isolated(admin, index, hold).await?;
        }
        let bound = st.converge_bound().map(|b| Bound::new(st, b, self.stretch));
        let own_end = Instant::now() + st.wait.timeout;
        let wait = match &bound {
            Some(b) => b.cap(&st.wait),
            None => st.wait.clone(),
        };
        let converge = self
            .wait_for(&wait, &format!("step `{}`: the wait probe", st.name))
            .await
            .map_err(|e| match &bound {
                Some(b) => b.missed(e, own_end),
                None => e,
            })
            .map_err(at(Step::Steps))?;
        if faulted.admin_down || faulted.partitioned {
            tracing::info!(case = %self.id, step = %st.name, "the admin is down or the gateway cut off: no digest equality after this step");
            return Ok(());
        }
        let what = format!("step `{}`: digest equality after the wait", st.name);
        let own_end = Instant::now() + self.scenario.wait.timeout;
        let applied = self
            .digests_converge_by(admin, &what, bound.as_ref().map(|b| b.end))
            .await
            .map_err(|e| match &bound {
                Some(b) => b.missed(e, own_end),
                None => e,
            })
            .map_err(at(Step::Steps))?;
        if let Some(b) = &bound {
            b.kept().map_err(at(Step::Steps))?;
        }
        self.timing(
            &format!("step `{}`", st.name),
            committed,
            applied.as_ref(),
            converge,
        );
        Ok(())
    }

    /// Holds step `index`'s `isolated` claim for `hold` from now: every running gateway's
    /// digest, read with the admin's every [`ISOLATION_POLL`], must differ from it every time
    /// (an equal one: the change reached the gateway). Reported as the check
    /// `steps[index].isolated`, skipped on a target without a config digest; its measurements
    /// count the digest pairs read (one per gateway per round) and those that differed.
    async fn isolated(&self, admin: &AdminClient, index: usize, hold: Duration) -> StepResult<()> {
        let st = &self.scenario.steps[index];
        let started = Instant::now();
        // Digest pairs read, and those that differed.
        let (mut read, mut apart) = (0, 0);
        let outcome = match self.caps.digest {
            false => CheckOutcome::Skipped(NO_DIGEST_ISOLATION.into()),
            true => match self.held_apart(admin, hold, &mut read, &mut apart).await {
                Ok(()) => CheckOutcome::Passed,
                Err(why) => CheckOutcome::Failed(vec![format!(
                    "`isolated: {}`: {why}",
                    humantime::format_duration(hold)
                )]),
            },
        };
        self.step_check(CheckReport {
            name: format!("step `{}` kept from the gateway", st.name),
            path: format!("steps[{index}].isolated"),
            step: Some(st.name.clone()),
            kind: crate::report::events::ISOLATION_CHECK,
            outcome,
            elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
            measurements: Measurements::Probe {
                sent: read,
                passed: apart,
            },
        })
    }

    /// Polls the admin's and every running gateway's digest until `hold` has passed (the last
    /// round starts at or after it), counting the pairs `read` and those `apart`; fails at the
    /// first gateway whose digest equals the admin's, or when a digest cannot be read.
    async fn held_apart(
        &self,
        admin: &AdminClient,
        hold: Duration,
        read: &mut u32,
        apart: &mut u32,
    ) -> Result<(), String> {
        let started = Instant::now();
        let mut tick = tokio::time::interval(ISOLATION_POLL);
        loop {
            tick.tick().await;
            let into = started.elapsed();
            let at = format!("{} ms into the hold", into.as_millis());
            for i in self.running_gateways() {
                let name = self.gateway_name(i);
                let a = (admin.digest().await).map_err(|e| format!("{at}, the admin: {e}"))?;
                let g =
                    (self.gateways[i].digest().await).map_err(|e| format!("{at}, {name}: {e}"))?;
                *read += 1;
                if a.digest == g.report.digest {
                    return Err(format!(
                        "{at}, {name} holds the admin's config: its digest {} equals the \
                         admin's {} (the change reached it)",
                        g.report.digest, a.digest
                    ));
                }
                *apart += 1;
            }
            if into >= hold {
                return Ok(());
            }
        }
    }

    /// Reports a check of a step and fails the step when it failed.
    pub(super) fn step_check(&self, report: CheckReport) -> StepResult<()> {
        (self.events)(Event::CheckFinished {
            id: self.id.clone(),
            check: report.clone(),
        });
        let failure = match &report.outcome {
            CheckOutcome::Failed(why) => Some(why.join("; ")),
            CheckOutcome::Passed | CheckOutcome::Skipped(_) => None,
        };
        let step = report.step.clone().unwrap_or_default();
        self.record(|r| r.checks.push(report));
        match failure {
            Some(why) => Err((
                Step::Steps,
                RunErrorKind::ChecksFailed(vec![format!("  step `{step}` {why}")]),
            )),
            None => Ok(()),
        }
    }

    /// Applies one admin change, keeping `made` current.
    async fn apply(
        &self,
        admin: &AdminClient,
        step: &str,
        field: &str,
        change: &AdminChange,
        made: &mut Made,
        plugins: &mut Vec<ChangedPlugin>,
    ) -> StepResult<()> {
        match change {
            AdminChange::CreateSelector(spec) => {
                let sel = self
                    .create_selector(admin, spec, field, Step::Steps)
                    .await?;
                made.selectors.push(sel);
                made.selectors_moved = true;
                *self.names.locked() = made.names();
                Ok(())
            }
            AdminChange::CreateRule(r) => {
                let sel = made.selector(&r.selector)?;
                let rule = create_rule(
                    admin,
                    &r.rule,
                    &format!("{field}.rule"),
                    &sel.id,
                    Step::Steps,
                )
                .await?;
                sel.rules.push(rule);
                *self.names.locked() = made.names();
                Ok(())
            }
            AdminChange::Register(reg) => {
                let ids = self.register(admin, reg).await.map_err(at(Step::Steps))?;
                made.registered.extend(ids);
                Ok(())
            }
            AdminChange::UpdateSelector(u) => {
                let plugin_id = match &u.plugin {
                    Some(name) => Some(
                        admin
                            .plugin_id(name)
                            .await
                            .map_err(at(Step::Steps))?
                            .ok_or_else(|| {
                                (Step::Steps, RunErrorKind::PluginNotFound(name.clone()))
                            })?,
                    ),
                    None => None,
                };
                let sel = made.selector(&u.name)?;
                lower::update_selector(&mut sel.dto, &sel.id, u, &self.addrs);
                if plugin_id.is_some() {
                    sel.dto.plugin_id = plugin_id;
                }
                if let Some(ups) = &u.upstreams {
                    sel.upstreams.clone_from(ups);
                }
                admin
                    .update_selector(&sel.id, &sel.dto)
                    .await
                    .map_err(|e| (Step::Steps, refused(field, &Refused::Selector, e)))?;
                if u.conditions.is_some() || u.plugin.is_some() {
                    made.selectors_moved = true;
                    *self.names.locked() = made.names();
                }
                Ok(())
            }
            AdminChange::UpdateRule(u) => {
                let rule = made.rule(&u.selector, &u.name)?;
                lower::update_rule(&mut rule.dto, &rule.id, u);
                admin
                    .update_rule(&rule.id, &rule.dto)
                    .await
                    .map_err(|e| (Step::Steps, refused(field, &Refused::rule_update(u), e)))
            }
            AdminChange::EnablePlugin(p) => {
                let plugin = admin
                    .plugin(&p.name)
                    .await
                    .map_err(at(Step::Steps))?
                    .ok_or_else(|| (Step::Steps, RunErrorKind::PluginNotFound(p.name.clone())))?;
                if !plugins.iter().any(|c| c.id == plugin.id) {
                    plugins.push(ChangedPlugin {
                        id: plugin.id.clone(),
                        enabled: plugin.enabled,
                    });
                }
                admin
                    .enable_plugins(&[plugin.id], p.enabled)
                    .await
                    .map_err(at(Step::Steps))
            }
            AdminChange::DeleteSelector(name) => {
                let sel = made.selector(name)?;
                let deleted = admin
                    .delete_selectors(std::slice::from_ref(&sel.id))
                    .await
                    .map_err(at(Step::Steps))?;
                one_deleted(deleted)?;
                sel.deleted = true;
                for r in &mut sel.rules {
                    r.deleted = true;
                }
                Ok(())
            }
            AdminChange::DeleteRule(r) => {
                let rule = made.rule(&r.selector, &r.name)?;
                let deleted = admin
                    .delete_rules(std::slice::from_ref(&rule.id))
                    .await
                    .map_err(at(Step::Steps))?;
                one_deleted(deleted)?;
                rule.deleted = true;
                Ok(())
            }
            AdminChange::UpdatePlugin(spec) => {
                let field = format!("step `{step}`: updatePlugin `{}`", spec.name);
                let original = self.update_plugin(admin, spec, &field, Step::Steps).await?;
                // The first change of a plugin holds what teardown puts back.
                if !made.plugins.iter().any(|p| p.id == original.id) {
                    made.plugins.push(original);
                }
                Ok(())
            }
        }
    }
}

/// The admin's config digest.
async fn config_digest(admin: &AdminClient) -> StepResult<String> {
    (admin.digest().await.map(|d| d.digest)).map_err(at(Step::Steps))
}

/// The refusal at `field` broke: `detail` says how.
fn refusal_broken(field: &str, detail: String) -> (Step, RunErrorKind) {
    let field = field.to_owned();
    (Step::Steps, RunErrorKind::RefusalBroken { field, detail })
}

/// Judges a change of a step that says it must be refused (`refusal`): `applied` (the change,
/// keyed `field`) must fail with the refusal's status and text. [`nothing_written`] then
/// judges the admin's config after the step's changes.
async fn must_refuse(
    field: &str,
    refusal: &Refusal,
    applied: impl Future<Output = StepResult<()>>,
) -> StepResult<()> {
    let broken = |detail: String| refusal_broken(field, detail);
    let got = match applied.await {
        Ok(()) => {
            return Err(broken(format!(
                "must be refused with HTTP {}, but the admin took it",
                refusal.status
            )));
        }
        Err((_, kind)) => kind.to_string(),
    };
    let status = format!("HTTP {}", refusal.status);
    if !got.contains(&status) || !got.contains(&refusal.contains) {
        return Err(broken(format!(
            "must be refused with {status} containing `{}`, got: {got}",
            refusal.contains
        )));
    }
    Ok(())
}

/// After a refused step's changes the admin's config digest is still `before`, what it was
/// before them: nothing half-written (the step's digest equality then holds the gateways to
/// it).
async fn nothing_written(admin: &AdminClient, field: &str, before: String) -> StepResult<()> {
    unchanged(field, &before, &config_digest(admin).await?)
}

/// The refused step at `field` left the admin's config digest `before` as it found it
/// (`after`): anything else is a half-written change.
fn unchanged(field: &str, before: &str, after: &str) -> StepResult<()> {
    if after != before {
        return Err(refusal_broken(
            field,
            format!(
                "was refused, but the admin's config changed all the same (digest {before} \
                 before, {after} after): half-written"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wait::WaitTimeout;

    /// A refused step whose admin digest moved fails as half-written, naming the field and
    /// both digests; one that left it alone passes.
    #[test]
    fn a_refused_change_that_moved_the_digest_is_half_written() {
        assert!(unchanged("steps[1].refused", "abc", "abc").is_ok());
        let (step, kind) = unchanged("steps[1].refused", "abc", "abd").unwrap_err();
        assert_eq!(step, Step::Steps);
        let said = kind.to_string();
        assert!(said.contains("steps[1].refused"), "{said}");
        assert!(
            said.contains("changed all the same (digest abc before, abd after): half-written"),
            "{said}"
        );
    }

    /// A bound of `ms` that started 1 ms ago.
    fn bound(ms: u64) -> Bound {
        let start = Instant::now() - Duration::from_millis(1);
        Bound {
            step: "s".into(),
            text: format!("{ms}ms"),
            whose: "the step's bound".to_owned(),
            bound: Duration::from_millis(ms),
            start,
            end: start + Duration::from_millis(ms),
        }
    }

    fn timeout() -> RunErrorKind {
        RunErrorKind::Timeout {
            what: "step `s`: the wait probe".into(),
            source: WaitTimeout {
                waited: Duration::from_millis(990),
                attempts: 9,
                streak: 0,
                needed: 3,
                last: "upstream: expected beta, got alpha".into(),
            },
        }
    }

    #[test]
    fn a_timeout_at_the_bound_names_the_bound() {
        let b = bound(1000);
        let cut = b.missed(timeout(), Instant::now() + Duration::from_secs(10));
        let message = cut.to_string();
        assert!(
            message.starts_with(
                "step `s`: not converged within `converge: 1000ms` (the step's bound, from the \
                 end of its changes): the wait probe: not converged after 990 ms"
            ),
            "{message}"
        );
        assert!(message.ends_with("expected beta, got alpha"), "{message}");
    }

    #[test]
    fn a_timeout_of_the_wait_s_own_is_left_as_it_is() {
        let b = bound(10_000);
        let own = b.missed(timeout(), Instant::now() + Duration::from_secs(1));
        assert!(matches!(own, RunErrorKind::Timeout { .. }), "{own}");
    }

    #[test]
    fn done_after_the_bound_fails_naming_it() {
        assert!(bound(60_000).kept().is_ok());
        let late = bound(0).kept().unwrap_err().to_string();
        assert!(
            late.contains("not converged within `converge: 0ms`")
                && late.contains("the wait and digest equality took"),
            "{late}"
        );
    }
}
