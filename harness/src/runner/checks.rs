//! Observing and judging checks: for each check kind, send what it needs, hand the
//! observation to its judge ([`crate::judge`]), and report the verdict and its measurements.

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
use super::skips;
use super::{Case, now_us};
use crate::backend::BackendKind;
use crate::client::{AdminClient, GatewayClient};
use crate::error::RunErrorKind;
use crate::judge::CheckKind;
use crate::judge::burst::BurstJudge;
use crate::judge::churn::ChurnJudge;
use crate::judge::distribution::{DistributionJudge, shares_from_weights};
use crate::judge::hash::HashSpec;
use crate::judge::hash::{HashJudge, Ring};
use crate::judge::latency::LatencySpec;
use crate::judge::latency::{ChangeLatency, LatencyJudge};
use crate::judge::probe::{ProbeJudge, attempt_misses};
use crate::judge::round_robin::{CycleJudge, cycle};
use crate::judge::steer::SteerJudge;
use crate::judge::steer::SteerSpec;
use crate::judge::{Counts, Judge, Measurements, Verdict};
use crate::probe::ProbeResponse;
use crate::report::{CheckOutcome, CheckReport, Event};
use crate::scenario::ast::Check;
use crate::scenario::ast::request::{Expect, RequestSpec, Route};
use crate::upstream::{DELAY_HEADER, UPSTREAM_HEADER};
use crate::wait::{WaitPolicy, await_convergence};

/// Why a check produced no verdict.
pub(super) enum NoVerdict {
    /// It cannot run here (e.g. on this backend); reported as skipped, never as passed.
    Skip(String),
    /// Observing failed (a change that never became visible, an admin error).
    Failed(String),
}

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
            let (outcome, measurements) = match self.check(admin, &c.kind, made).await {
                Ok(v) if v.passed() => (CheckOutcome::Passed, v.measurements),
                Ok(v) => (CheckOutcome::Failed(v.failures), v.measurements),
                Err(NoVerdict::Failed(why)) => {
                    (CheckOutcome::Failed(vec![why]), Measurements::None)
                }
                Err(NoVerdict::Skip(why)) => (CheckOutcome::Skipped(why), Measurements::None),
            };
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

    /// Observes what `kind` needs and judges it.
    async fn check(
        &self,
        admin: &AdminClient,
        kind: &CheckKind,
        made: &mut Made,
    ) -> Result<Verdict, NoVerdict> {
        let selector = |made: &mut Made, name: &str| {
            made.selector(name)
                .map(|s| s.upstreams.clone())
                .map_err(|(_, e)| NoVerdict::Failed(e.to_string()))
        };
        Ok(match kind {
            CheckKind::Probe(p) => {
                // Every running gateway must answer as expected (a stale one is named).
                let names = self.names.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let several = self.running_gateways().len() > 1;
                let (mut failures, mut sent, mut passed) = (Vec::new(), 0, 0);
                for i in self.running_gateways() {
                    let mut answers = Vec::new();
                    let mut attempts = Vec::new();
                    for _ in 0..p.repeat {
                        let before = self.journal_lengths(&p.attempts).await?;
                        answers.push(self.send(&self.gateways[i], &p.request).await);
                        let after = self.journal_lengths(&p.attempts).await?;
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
                    let mut verdict = ProbeJudge {
                        expect: &p.expect,
                        names: &names,
                    }
                    .judge(&answers);
                    verdict
                        .failures
                        .extend(attempt_misses(&p.attempts, &attempts));
                    let on = |f: String| match several {
                        true => format!("{}: {f}", self.gateway_name(i)),
                        false => f,
                    };

                    failures.extend(verdict.failures.into_iter().map(on));
                    if let Measurements::Probe { sent: s, passed: p } = verdict.measurements {
                        (sent, passed) = (sent + s, passed + p);
                    }
                }
                Verdict {
                    failures,
                    measurements: Measurements::Probe { sent, passed },
                }
            }
            CheckKind::Distribution(d) => {
                let shares = match &d.shares {
                    Some(s) => s.clone(),
                    None => shares_from_weights(&selector(made, &d.selector)?),
                };
                let counts = self.count(&d.request, d.requests, d.concurrency).await;
                DistributionJudge::new(shares, d.alpha).judge(&counts)
            }
            CheckKind::RoundRobin(c) => {
                let cycle = cycle(&selector(made, &c.selector)?);
                let mut observed = Vec::new();
                for _ in 0..c.rounds as usize * cycle.len() {
                    observed.push(label(&self.send(self.gateway(), &c.request).await));
                }
                CycleJudge { cycle }.judge(&observed)
            }
            CheckKind::Hash(h) => self.hash(h, made).await?,
            CheckKind::Steer(s) => self.steer(s, &selector(made, &s.selector)?).await,
            CheckKind::Latency(_) if !self.caps.digest => {
                return Err(NoVerdict::Skip(
                    "the latency check times when the gateway applied each change, which only \
                     its config digest says; the target has none"
                        .into(),
                ));
            }
            CheckKind::Churn(_) if self.backend == BackendKind::External => {
                return Err(NoVerdict::Skip(
                    "churn makes dozens of admin changes a second on routes of its own; it is \
                     not run against an external target"
                        .into(),
                ));
            }
            CheckKind::Latency(l) => {
                let changes = self.latency(admin, l, made).await?;
                LatencyJudge {
                    limits: l.limits,
                    probe_limits: l.probe_limits,
                }
                .judge(&changes)
            }
            CheckKind::Burst(b) => {
                let answers = futures_util::future::join_all(
                    (0..b.requests).map(|_| self.send(self.gateway(), &b.request)),
                )
                .await;
                let statuses: Vec<Result<u16, String>> =
                    answers.into_iter().map(|a| a.map(|r| r.status)).collect();
                BurstJudge {
                    statuses: &b.statuses,
                }
                .judge(&statuses)
            }
            CheckKind::Churn(c) => {
                let observed = self.churn(admin, c).await?;
                ChurnJudge {
                    asked_rate: c.asked_rate(),
                }
                .judge(&observed)
            }
        })
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
                return Err(NoVerdict::Skip(skips::unreadable_journals(self.backend)));
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

    /// Sends `request` `n` times, `concurrency` at a time, counting answers by upstream.
    async fn count(&self, request: &RequestSpec, n: u32, concurrency: u32) -> Counts {
        let mut counts = Counts::default();
        let mut answers = futures_util::stream::iter(0..n)
            .map(|_| self.send(self.gateway(), request))
            .buffer_unordered(concurrency.max(1) as usize);
        while let Some(a) = answers.next().await {
            counts.add(&a);
        }
        counts
    }

    /// Each client address sends `repeat` requests; they must reach the ring's upstream.
    async fn hash(&self, spec: &HashSpec, made: &mut Made) -> Result<Verdict, NoVerdict> {
        if let Some(why) = skips::no_client_addresses(self.backend) {
            return Err(NoVerdict::Skip(why));
        }
        let sel = made
            .selector(&spec.selector)
            .map_err(|(_, e)| NoVerdict::Failed(e.to_string()))?;
        let ring =
            Ring::new(sel.upstreams.iter().filter(|u| u.status).filter_map(|u| {
                Some((u.upstream.as_str(), self.addrs.get(&u.upstream)?.as_str()))
            }));
        let mut observed: BTreeMap<IpAddr, Vec<String>> = BTreeMap::new();
        for ip in client_addresses(self.seed, &spec.selector, spec.clients) {
            let client = self.gateway().from_source(ip);
            let mut answers = Vec::new();
            for _ in 0..spec.repeat {
                answers.push(label(&self.send(&client, &spec.request).await));
            }
            observed.insert(ip, answers);
        }
        let verdict = HashJudge {
            ring,
            previous: sel.hash_seen.take(),
        }
        .judge(&observed);
        sel.hash_seen = Some(
            observed
                .into_iter()
                .filter_map(|(ip, a)| Some((ip, a.into_iter().next()?)))
                .collect(),
        );
        Ok(verdict)
    }

    /// Concurrent requests with the slow upstream delayed by the echo upstreams' delay header.
    async fn steer(
        &self,
        spec: &SteerSpec,
        upstreams: &[crate::scenario::ast::UpstreamRef],
    ) -> Verdict {
        let mut request = spec.request.clone();
        request.headers.insert(
            DELAY_HEADER.to_owned(),
            format!("{}={}ms", spec.slow, spec.delay.as_millis()),
        );
        let counts = self.count(&request, spec.requests, spec.concurrency).await;
        SteerJudge {
            slow: spec.slow.clone(),
            max_share: spec.max_share,
            others: upstreams
                .iter()
                .filter(|u| u.status && u.upstream != spec.slow)
                .map(|u| u.upstream.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            min_share: spec.min_share,
        }
        .judge(&counts)
    }

    /// Toggles the selector's `enabled` flag `changes` times, timing each change; leaves it as
    /// it was (the count is even).
    async fn latency(
        &self,
        admin: &AdminClient,
        spec: &LatencySpec,
        made: &mut Made,
    ) -> Result<Vec<ChangeLatency>, NoVerdict> {
        let failed = |e: String| NoVerdict::Failed(e);
        let sel = made
            .selector(&spec.selector)
            .map_err(|(_, e)| failed(e.to_string()))?;
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
                self.gateway(),
                (&sel.id, &mut sel.dto),
                i + 1,
                (probe_policy, digest_policy),
                |expect| async move { self.probe_once(&spec.request, &expect).await },
            )
            .await
            .map_err(failed)?;
            out.push(change);
        }
        Ok(out)
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
            *applied_at.lock().unwrap_or_else(|e| e.into_inner()) = g.applied_at_us;
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

/// The upstream that answered, or a short description of the answer.
fn label(answer: &Result<ProbeResponse, String>) -> String {
    match answer {
        Ok(r) => r
            .header(UPSTREAM_HEADER)
            .map_or_else(|| format!("HTTP {}", r.status), str::to_owned),
        Err(e) => format!("error ({e})"),
    }
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
