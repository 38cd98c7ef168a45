//! After the steps: plugins put back, what the case made deleted, and the proof that it is
//! gone from every running gateway.

use super::made::Made;
use super::steps::ChangedPlugin;
use super::{Case, now_us};
use crate::client::AdminClient;
use crate::error::RunErrorKind;
use crate::scenario::ast::{Expect, Probe, Route, Wait};

impl Case<'_> {
    /// Deletes what setup and the steps made, checks the admin no longer has it, waits until
    /// the wait probes' routes are gone and digests are equal, then runs the teardown probes
    /// on every running gateway.
    pub(super) async fn teardown(
        &self,
        admin: &AdminClient,
        made: &Made,
    ) -> Result<(), RunErrorKind> {
        let selector_ids: Vec<String> = made
            .selectors
            .iter()
            .filter(|s| !s.deleted)
            .map(|s| s.id.clone())
            .chain(made.registered.iter().cloned())
            .collect();
        let all_selector_ids = made.selectors.iter().map(|s| &s.id).chain(&made.registered);
        let rule_ids: Vec<&String> = made
            .selectors
            .iter()
            .flat_map(|s| s.rules.iter().map(|r| &r.id))
            .collect();
        if !selector_ids.is_empty() {
            let deleted = admin.delete_selectors(&selector_ids).await?;
            if usize::try_from(deleted).ok() != Some(selector_ids.len()) {
                return Err(RunErrorKind::DeleteCount {
                    deleted,
                    expected: selector_ids.len(),
                });
            }
        }
        let committed = now_us();
        for id in all_selector_ids {
            if admin.get_selector(id).await?.is_some() {
                return Err(RunErrorKind::StillPresent {
                    kind: "selector",
                    id: id.clone(),
                });
            }
        }
        for id in rule_ids {
            if admin.get_rule(id).await?.is_some() {
                return Err(RunErrorKind::StillPresent {
                    kind: "rule",
                    id: id.clone(),
                });
            }
        }
        let gone = Wait {
            probes: (self.scenario.wait.probes.iter())
                .map(|p| Probe {
                    request: p.request.clone(),
                    expect: Expect {
                        route: Some(Route::Absent),
                        ..Default::default()
                    },
                })
                .collect(),
            distribution: None,
            ..self.scenario.wait.clone()
        };
        let converge = self
            .wait_for(
                &gone,
                match gone.listed {
                    true => "the wait probes' routes to disappear",
                    false => "the wait probe's route to disappear",
                },
            )
            .await?;
        // A step may already have removed the wait probe's route, so that wait proves little
        // on its own: the teardown probes run once the gateway holds the admin's config.
        let applied = self
            .digests_converge(admin, "digest equality after teardown")
            .await?;
        self.timing("teardown", committed, applied.as_ref(), converge);
        let mut failures = Vec::new();
        let several = self.running_gateways().len() > 1;
        for (i, p) in self.scenario.teardown.probes.iter().enumerate() {
            for g in self.running_gateways() {
                if let Err(miss) = self
                    .probe_on(&self.gateways[g], &p.request, &p.expect)
                    .await
                {
                    let on = match several {
                        true => format!(" on {}", self.gateway_name(g)),
                        false => String::new(),
                    };
                    failures.push(format!("  teardown probe {i}{on}: {miss}"));
                }
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(RunErrorKind::ChecksFailed(failures))
        }
    }

    /// Puts every plugin a step changed back to its original enabled flag.
    pub(super) async fn restore_plugins(
        &self,
        admin: &AdminClient,
        plugins: &[ChangedPlugin],
    ) -> Result<(), RunErrorKind> {
        for p in plugins {
            admin
                .enable_plugins(std::slice::from_ref(&p.id), p.enabled)
                .await?;
        }
        Ok(())
    }
}
