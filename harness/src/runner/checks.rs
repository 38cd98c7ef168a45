//! Running checks: each kind observes and judges itself ([`crate::judge`]) through the
//! [`Observer`], the runner's side of the contexts the kinds declare; here the verdicts and
//! their measurements are reported.

use model::lock::MutexExt;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

use futures_util::StreamExt;
use model::SelectorDto;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::made::Made;
use super::{Case, now_us};
use crate::backend::BackendKind;
use crate::client::{AdminClient, GatewayClient};
use crate::error::RunErrorKind;
use crate::judge::churn::{ChurnCx, ChurnObservation, ChurnSpec};
use crate::judge::distribution::SeedCx;
use crate::judge::hash::{HashCx, HashJudge, HashSpec, Ring};
use crate::judge::latency::{ChangeLatency, LatencyCx, LatencySpec};
use crate::judge::probe::{GatewayAnswers, ProbeCheck, ProbeCx, unreadable_journals};
pub(super) use crate::judge::spec::NoVerdict;
use crate::judge::spec::{CheckSpec, ObserveCx};
use crate::judge::sync_status::SyncStatusCx;
use crate::judge::synced::{SELECTOR_DATA_PATH, SyncedCx};
use crate::judge::{Counts, Measurements, label};
use crate::probe::{Names, ProbeResponse, unjudged_reason};
use crate::report::{CheckOutcome, CheckReport, Event};
use crate::scenario::ast::request::{Expect, RequestSpec, Route};
use crate::scenario::ast::{Check, UpstreamRef};
use crate::wait::{WaitPolicy, await_convergence};

impl Case<'_> {
    /// Runs `checks` (of the step `step`, if any), reporting each; fails listing every failed
    /// check.
    pub(super) async fn checks(
        &self,
        admin: &AdminClient,
        checks: &[Check],
        step: Option<&str>,
        made: &mut Made,
    ) -> Result<(), RunErrorKind> {
        let prefix = step.map_or_else(String::new, |s| format!("step `{s}` "));
        let step_index =
            step.and_then(|name| self.scenario.steps.iter().position(|s| s.name == name));
        let mut failures = Vec::new();
        for (i, c) in checks.iter().enumerate() {
            let started = Instant::now();
            let mut cx = Observer {
                case: self,
                admin,
                made: &mut *made,
            };
            let (outcome, measurements) = match c.kind.observe(&mut cx).await {
                Ok(v) if v.passed() => (CheckOutcome::Passed, v.measurements),
                Ok(v) => (CheckOutcome::Failed(v.failures), v.measurements),
                Err(NoVerdict::Failed(why)) => {
                    (CheckOutcome::Failed(vec![why]), Measurements::None)
                }
                Err(NoVerdict::Skip(why)) => (CheckOutcome::Skipped(why), Measurements::None),
            };
            let outcome = self.with_unjudged(c, outcome);
            if let CheckOutcome::Failed(why) = &outcome {
                failures.push(format!("  {prefix}check `{}`: {}", c.name, why.join("; ")));
            }
            let report = CheckReport {
                name: c.name.clone(),
                path: match step_index {
                    Some(s) => format!("steps[{s}].checks[{i}]"),
                    None => format!("checks[{i}]"),
                },
                step: step.map(str::to_owned),
                kind: c.kind.name(),
                outcome,
                elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
                measurements,
            };
            (self.events)(Event::CheckFinished {
                id: self.id.clone(),
                check: report.clone(),
            });
            self.record(|r| r.checks.push(report));
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(RunErrorKind::ChecksFailed(failures))
        }
    }

    /// `outcome` of `check` once the keys of its expectation the target cannot show
    /// ([`Names::unjudged`]) are accounted for: a key not judged never counts as passed, so
    /// a check that passed on the rest is reported skipped, saying that the rest held and
    /// which keys were not judged and why; a failed one keeps its misses and says the same.
    fn with_unjudged(&self, check: &Check, outcome: CheckOutcome) -> CheckOutcome {
        let Some(expect) = check.kind.expect() else {
            return outcome;
        };
        let names = self.names.locked().clone();
        let keys = names.unjudged(expect);
        if keys.is_empty() {
            return outcome;
        }
        match outcome {
            CheckOutcome::Passed if names.judged_part(expect).is_empty() => CheckOutcome::Skipped(
                unjudged_reason(&keys, "nothing in the expectation could be judged"),
            ),
            CheckOutcome::Passed => CheckOutcome::Skipped(unjudged_reason(
                &keys,
                "partly judged: the rest of the expectation held",
            )),
            CheckOutcome::Failed(mut why) => {
                why.push(unjudged_reason(&keys, "the misses are of the keys judged"));
                CheckOutcome::Failed(why)
            }
            skipped @ CheckOutcome::Skipped(_) => skipped,
        }
    }

    /// How many requests each upstream named in `attempts` has received so far (none named:
    /// nothing read). Only in-process upstreams expose their journal: elsewhere the check is
    /// skipped.
    async fn journal_lengths(
        &self,
        attempts: &BTreeMap<String, u32>,
    ) -> Result<BTreeMap<String, u32>, NoVerdict> {
        let mut lengths = BTreeMap::new();
        for name in attempts.keys() {
            let up = self
                .topo
                .upstream(name)
                .ok_or_else(|| NoVerdict::Failed(format!("upstream `{name}` is not running")))?;
            let Some(journal) = up.received().await else {
                return Err(NoVerdict::Skip(unreadable_journals(self.backend)));
            };
            lengths.insert(
                name.clone(),
                u32::try_from(journal.len()).unwrap_or(u32::MAX),
            );
        }
        Ok(lengths)
    }

    /// Sends `request` through `client`; a transport error becomes its description.
    pub(super) async fn send(
        &self,
        client: &GatewayClient,
        request: &RequestSpec,
    ) -> Result<ProbeResponse, String> {
        client.send(request).await.map_err(|e| e.to_string())
    }
}

/// The runner as a check sees it while it observes: the case, the admin, and what the case
/// made so far.
struct Observer<'o, 'c> {
    case: &'o Case<'c>,
    admin: &'o AdminClient,
    made: &'o mut Made,
}

impl Observer<'_, '_> {
    /// The setup selector `name` as made, or why there is none.
    fn selector(&mut self, name: &str) -> Result<&mut super::made::MadeSelector, NoVerdict> {
        self.made
            .selector(name)
            .map_err(|(_, e)| NoVerdict::Failed(e.to_string()))
    }
}

impl ObserveCx for Observer<'_, '_> {
    async fn send(&self, request: &RequestSpec) -> Result<ProbeResponse, String> {
        self.case.send(self.case.gateway(), request).await
    }

    async fn count(&self, request: &RequestSpec, n: u32, concurrency: u32) -> Counts {
        let mut counts = Counts::default();
        let mut answers = futures_util::stream::iter(0..n)
            .map(|_| self.send(request))
            .buffer_unordered(concurrency.max(1) as usize);
        while let Some(a) = answers.next().await {
            counts.add(&a);
        }
        counts
    }

    fn upstreams(&mut self, name: &str) -> Result<Vec<UpstreamRef>, NoVerdict> {
        Ok(self.selector(name)?.upstreams.clone())
    }
}

impl SeedCx for Observer<'_, '_> {
    /// `PUT /actuator/seed` on every running gateway (the reference gateway's gantry-only
    /// endpoint); any other answer than 200 means that gateway cannot be seeded.
    async fn seed_picks(&mut self, seed: Option<u64>) -> Result<(), String> {
        let case = self.case;
        let request = RequestSpec {
            method: "PUT".to_owned(),
            path: "/actuator/seed".to_owned(),
            headers: BTreeMap::from([("content-type".to_owned(), "application/json".to_owned())]),
            query: BTreeMap::new(),
            body: Some(serde_json::json!({ "seed": seed }).to_string()),
        };
        for i in case.running_gateways() {
            let answer = case.send(&case.gateways[i], &request).await?;
            if answer.status != 200 {
                return Err(format!(
                    "{} has no seed endpoint: PUT /actuator/seed answered {}",
                    case.gateway_name(i),
                    answer.status
                ));
            }
        }
        Ok(())
    }
}

impl ProbeCx for Observer<'_, '_> {
    fn names(&self) -> Names {
        self.case.names.locked().clone()
    }

    async fn answers(&mut self, spec: &ProbeCheck) -> Result<Vec<GatewayAnswers>, NoVerdict> {
        let case = self.case;
        let several = case.running_gateways().len() > 1;
        let mut out = Vec::new();
        for i in case.running_gateways() {
            let mut answers = Vec::new();
            let mut attempts = Vec::new();
            for _ in 0..spec.repeat {
                let before = case.journal_lengths(&spec.attempts).await?;
                answers.push(case.send(&case.gateways[i], &spec.request).await);
                let after = case.journal_lengths(&spec.attempts).await?;
                attempts.push(
                    after
                        .into_iter()
                        .map(|(name, n)| {
                            let was = before.get(&name).copied().unwrap_or(0);
                            (name, n.saturating_sub(was))
                        })
                        .collect(),
                );
            }
            out.push(GatewayAnswers {
                gateway: several.then(|| case.gateway_name(i)),
                answers,
                attempts,
            });
        }
        Ok(out)
    }
}

impl HashCx for Observer<'_, '_> {
    /// Each client address sends `repeat` requests; where each went first is remembered for
    /// the next hash check of the selector.
    async fn clients(
        &mut self,
        spec: &HashSpec,
    ) -> Result<(HashJudge, BTreeMap<IpAddr, Vec<String>>), NoVerdict> {
        let case = self.case;
        if let Some(why) = spec.skip_on(case.backend) {
            return Err(NoVerdict::Skip(why));
        }
        let sel = self.selector(&spec.selector)?;
        let ring =
            Ring::new(sel.upstreams.iter().filter(|u| u.status).filter_map(|u| {
                Some((u.upstream.as_str(), case.addrs.get(&u.upstream)?.as_str()))
            }));
        let mut observed: BTreeMap<IpAddr, Vec<String>> = BTreeMap::new();
        for ip in client_addresses(case.seed, &spec.selector, spec.clients) {
            let client = case.gateway().from_source(ip);
            let mut answers = Vec::new();
            for _ in 0..spec.repeat {
                answers.push(label(&case.send(&client, &spec.request).await));
            }
            observed.insert(ip, answers);
        }
        let previous = sel.hash_seen.replace(
            observed
                .iter()
                .filter_map(|(ip, a)| Some((*ip, a.first()?.clone())))
                .collect(),
        );
        Ok((HashJudge { ring, previous }, observed))
    }
}

impl SyncStatusCx for Observer<'_, '_> {
    fn gateway_address(&self, i: usize) -> Result<(String, String), NoVerdict> {
        let gateway = self.case.topo.gateways().get(i).ok_or_else(|| {
            NoVerdict::Failed(format!("there is no gateway[{i}] in the topology"))
        })?;
        let url = gateway.url();
        let address = url.split_once("://").map_or(url, |(_, rest)| rest);
        Ok((
            self.case.gateway_name(i),
            address.trim_end_matches('/').to_owned(),
        ))
    }

    async fn sync_status(&self) -> Result<model::SyncStatusReport, NoVerdict> {
        self.admin
            .sync_status()
            .await
            .map_err(|e| NoVerdict::Failed(e.to_string()))
    }
}

impl SyncedCx for Observer<'_, '_> {
    fn selector_id(&mut self, name: &str) -> Result<String, NoVerdict> {
        Ok(self.selector(name)?.id.clone())
    }

    fn upstreams_by_address(&self) -> BTreeMap<String, String> {
        (self.case.addrs.iter())
            .map(|(name, addr)| (addr.clone(), name.clone()))
            .collect()
    }

    /// The first running gateway's dump; a gateway that answers it with anything but JSON
    /// (a 404: it serves none) skips the check.
    async fn selector_data(&self) -> Result<serde_json::Value, NoVerdict> {
        let (status, body) = (self.case.gateway().selector_data().await)
            .map_err(|e| NoVerdict::Failed(e.to_string()))?;
        match serde_json::from_str(&body) {
            Ok(dump) if status == 200 => Ok(dump),
            _ => Err(NoVerdict::Skip(format!(
                "the gateway serves no {SELECTOR_DATA_PATH} (it answered HTTP {status}: {})",
                crate::probe::cut(&body, 120)
            ))),
        }
    }
}

impl LatencyCx for Observer<'_, '_> {
    /// Toggles the selector's `enabled` flag `changes` times, timing each change; leaves it as
    /// it was (the count is even).
    async fn changes(&mut self, spec: &LatencySpec) -> Result<Vec<ChangeLatency>, NoVerdict> {
        let case = self.case;
        if !case.caps.digest {
            return Err(NoVerdict::Skip(
                "the latency check times when the gateway applied each change, which only \
                 its config digest says; the target has none"
                    .into(),
            ));
        }
        let admin = self.admin;
        let sel = self.selector(&spec.selector)?;
        let probe_policy = WaitPolicy {
            consecutive: spec.consecutive,
            interval: spec.interval,
            timeout: spec.timeout,
        };
        let digest_policy = WaitPolicy {
            consecutive: 1,
            interval: spec.interval,
            timeout: spec.timeout,
        };
        let mut out = Vec::new();
        for i in 0..spec.changes {
            let change = timed_toggle(
                admin,
                case.gateway(),
                (&sel.id, &mut sel.dto),
                i + 1,
                (probe_policy, digest_policy),
                |expect| async move { case.probe_once(&spec.request, &expect).await },
            )
            .await
            .map_err(NoVerdict::Failed)?;
            out.push(change);
        }
        Ok(out)
    }
}

impl ChurnCx for Observer<'_, '_> {
    async fn churn(&mut self, spec: &ChurnSpec) -> Result<ChurnObservation, NoVerdict> {
        if self.case.backend == BackendKind::External {
            return Err(NoVerdict::Skip(
                "churn makes dozens of admin changes a second on routes of its own; it is \
                 not run against an external target"
                    .into(),
            ));
        }
        self.case.churn(self.admin, spec).await
    }
}

/// One change of the sync-latency measurement (the `latency` judge's, and `gantry bench
/// sync`'s): flips the `enabled` flag of the selector `id` (its last sent body `dto` is
/// updated), then times, from the admin's 2xx, (a) the first pass of the probe streak that
/// shows it (`probe` judges one answer against the route expectation) and (b) the gateway
/// applying it (`appliedAtUs` of the gateway digest that equals the admin's). `n` (1-based)
/// names the change in errors; `policies` are (probe, digest).
pub(crate) async fn timed_toggle<F, Fut>(
    admin: &AdminClient,
    gateway: &GatewayClient,
    (id, dto): (&str, &mut SelectorDto),
    n: u32,
    (probe_policy, digest_policy): (WaitPolicy, WaitPolicy),
    mut probe: F,
) -> Result<ChangeLatency, String>
where
    F: FnMut(Expect) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let enabled = !dto.enabled.unwrap_or(true);
    dto.enabled = Some(enabled);
    dto.id = Some(id.to_owned());
    admin
        .update_selector(id, dto)
        .await
        .map_err(|e| format!("change {n}: {e}"))?;
    let committed = now_us();
    let expect = Expect {
        route: Some(if enabled {
            Route::Present
        } else {
            Route::Absent
        }),
        ..Default::default()
    };
    let probe = await_convergence(probe_policy, || probe(expect.clone()))
        .await
        .map_err(|t| format!("change {n} (enabled: {enabled}) never became visible: {t}"))?;
    let want = admin.digest().await.map_err(|e| e.to_string())?.digest;
    let applied_at = Mutex::new(0);
    await_convergence(digest_policy, || async {
        let g = gateway.digest().await.map_err(|e| e.to_string())?;
        if g.report.digest == want {
            *applied_at.locked() = g.applied_at_us;
            Ok(())
        } else {
            Err(format!("gateway digest {} ≠ admin {want}", g.report.digest))
        }
    })
    .await
    .map_err(|t| format!("change {n}: digests never agreed: {t}"))?;
    let applied_at = applied_at.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(ChangeLatency {
        applied_us: applied_at.saturating_sub(committed),
        probe_us: u64::try_from(probe.first_seen.as_micros()).unwrap_or(u64::MAX),
    })
}

/// `n` distinct client addresses in 127.0.0.0/8 (never 127.0.0.1), the same for the same
/// seed and selector, so a hash check in a later step asks with the same clients.
fn client_addresses(seed: u64, selector: &str, n: u32) -> Vec<IpAddr> {
    // FNV-1a: stable across builds, unlike std's hasher.
    let name = selector.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut rng = StdRng::seed_from_u64(seed ^ name);
    let mut out = BTreeSet::new();
    while out.len() < n as usize {
        let ip = IpAddr::from([
            127,
            rng.random_range(0..=255),
            rng.random_range(0..=255),
            rng.random_range(2..=254),
        ]);
        out.insert(ip);
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_addresses_are_distinct_loopback_and_reproducible() {
        let a = client_addresses(7, "lb", 32);
        assert_eq!(a.len(), 32);
        assert!(
            a.iter()
                .all(|ip| ip.is_loopback() && *ip != IpAddr::from([127, 0, 0, 1]))
        );
        assert_eq!(a, client_addresses(7, "lb", 32));
        assert_ne!(a, client_addresses(8, "lb", 32));
    }
}
