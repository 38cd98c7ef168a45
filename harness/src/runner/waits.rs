//! Waits: a `wait:` block's probes on every running gateway until they pass, and digest
//! equality between the admin and every running gateway.

use model::lock::MutexExt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use model::AppliedDigest;

use super::Case;
use crate::client::{AdminClient, GatewayClient};
use crate::error::RunErrorKind;
use crate::probe::judge;
use crate::report::FinalDigests;
use crate::scenario::ast::{DistributionWait, Expect, Probe, RequestSpec, Wait};
use crate::upstream::UPSTREAM_HEADER;
use crate::wait::{Converged, WaitPolicy, await_convergence};

/// The most one gateway's pass of a wait may take in a precheck: a gateway that is paused or
/// cut off answers nothing, and a pass that does not finish in time counts as a miss, so a
/// precheck never hangs.
const PRECHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The wait policy of a `wait:` block.
fn policy(w: &Wait) -> WaitPolicy {
    WaitPolicy {
        consecutive: w.consecutive,
        interval: w.interval,
        timeout: w.timeout,
    }
}

impl Case<'_> {
    pub(super) async fn probe_once(
        &self,
        request: &RequestSpec,
        expect: &Expect,
    ) -> Result<(), String> {
        self.probe_on(self.gateway(), request, expect).await
    }

    pub(super) async fn probe_on(
        &self,
        gateway: &GatewayClient,
        request: &RequestSpec,
        expect: &Expect,
    ) -> Result<(), String> {
        self.answer_on(gateway, request, expect).await.map(drop)
    }

    /// [`Case::probe_on`], answering the summary of the answer that passed.
    async fn answer_on(
        &self,
        gateway: &GatewayClient,
        request: &RequestSpec,
        expect: &Expect,
    ) -> Result<String, String> {
        let resp = gateway.send(request).await.map_err(|e| e.to_string())?;
        let names = self.names.locked().clone();
        judge(expect, &resp, &names).map(|()| resp.summary())
    }

    /// One pass of `wait` (at field path `at`) on every running gateway, each bounded by
    /// [`PRECHECK_TIMEOUT`]: what each probe got when it passed everywhere (`at.probe: got
    /// HTTP 200 …`), `None` when it missed (or erred, or did not finish in time) anywhere. A
    /// wait that passes before the change it should prove cannot prove it (the setup and step
    /// prechecks). With no gateway running it cannot pass.
    pub(super) async fn passes_already(&self, wait: &Wait, at: &str) -> Option<String> {
        let gateways = self.running_gateways();
        if gateways.is_empty() {
            return None;
        }
        let mut got = Vec::new();
        for &i in &gateways {
            let pass = tokio::time::timeout(PRECHECK_TIMEOUT, self.pass_on(i, wait)).await;
            let Ok(Ok(answers)) = pass else {
                return None;
            };
            let on = match gateways.len() {
                1 => String::new(),
                _ => format!(" on {}", self.gateway_name(i)),
            };
            got.extend(
                answers
                    .iter()
                    .enumerate()
                    .map(|(k, answer)| format!("{at}.{}{on}: got {answer}", wait.probe_path(k))),
            );
        }
        Some(got.join("; "))
    }

    /// Waits until `wait`'s probes all pass on every running gateway (at once), and answers
    /// the latest convergence of them.
    pub(super) async fn wait_for(
        &self,
        wait: &Wait,
        what: &str,
    ) -> Result<Converged, RunErrorKind> {
        let waits = self.running_gateways().into_iter().map(|i| async move {
            let pass = || async move { self.pass_on(i, wait).await.map(drop) };
            await_convergence(policy(wait), pass)
                .await
                .map_err(|source| RunErrorKind::Timeout {
                    what: if self.gateways.len() == 1 {
                        what.to_owned()
                    } else {
                        format!("{what} on gateway[{i}]")
                    },
                    source,
                })
        });
        let converged = futures_util::future::join_all(waits).await;
        let mut latest: Option<Converged> = None;
        for c in converged {
            let c = c?;
            if latest.is_none_or(|l| c.first_seen > l.first_seen) {
                latest = Some(c);
            }
        }
        Ok(latest.expect("a gateway runs at every wait (checked at parse time)"))
    }

    /// One pass of `wait` on gateway `i`: every probe must pass (a miss names the probe when
    /// there are several), or its distribution be seen; answers what each probe got.
    async fn pass_on(&self, i: usize, wait: &Wait) -> Result<Vec<String>, String> {
        if let (Some(split), [probe]) = (&wait.distribution, wait.probes.as_slice()) {
            return Ok(vec![self.split_on(i, split, probe).await?]);
        }
        let mut got = Vec::new();
        for (k, probe) in wait.probes.iter().enumerate() {
            let answer = self
                .answer_on(&self.gateways[i], &probe.request, &probe.expect)
                .await
                .map_err(|miss| match wait.listed {
                    true => format!("{}: {miss}", wait.probe_path(k)),
                    false => miss,
                })?;
            got.push(answer);
        }
        Ok(got)
    }

    /// One pass of a `distribution` wait on gateway `i`: `probe` (its request, expecting one
    /// of its upstreams) sent until every upstream of `split` has answered, at most
    /// `split.within` times; a miss fails at once, and so does the end of the requests with an
    /// upstream unseen. Either way the message tells which upstreams answered how often.
    async fn split_on(
        &self,
        i: usize,
        split: &DistributionWait,
        probe: &Probe,
    ) -> Result<String, String> {
        let mut seen = Answered::new(&split.upstreams);
        let within = split.within;
        for n in 1..=within {
            let resp = (self.gateways[i].send(&probe.request).await)
                .map_err(|e| format!("request {n} of {within}: {e}; {seen}"))?;
            let names = self.names.locked().clone();
            judge(&probe.expect, &resp, &names)
                .map_err(|miss| format!("request {n} of {within}: {miss}; {seen}"))?;
            seen.add(resp.header(UPSTREAM_HEADER).unwrap_or_default());
            if seen.unseen().is_empty() {
                return Ok(format!("every upstream within {n} requests: {seen}"));
            }
        }
        Err(format!(
            "not every upstream answered within {within} requests: {seen}; never {}",
            seen.unseen().join(", ")
        ))
    }

    /// Waits (within the scenario's wait timeout) until every running gateway's config digest
    /// equals the admin's, and returns the report of the gateway that applied it last (with
    /// the time that config went live); `None` at once when the target has no digest (the
    /// case's record says so once, as a skipped check). Sync is eventually consistent: after the wait probe
    /// passes, other parts of the same change may still be on their way (ZooKeeper and etcd
    /// deliver per node), so this is a bounded wait, not a single comparison; a timeout names
    /// the gateway and reports both digests last seen.
    pub(super) async fn digests_converge(
        &self,
        admin: &AdminClient,
        what: &str,
    ) -> Result<Option<AppliedDigest>, RunErrorKind> {
        self.digests_converge_by(admin, what, None).await
    }

    /// [`Case::digests_converge`], each gateway's wait also ending at `deadline` when one is
    /// given (a step's `converge` bound).
    pub(super) async fn digests_converge_by(
        &self,
        admin: &AdminClient,
        what: &str,
        deadline: Option<Instant>,
    ) -> Result<Option<AppliedDigest>, RunErrorKind> {
        if !self.caps.digest {
            return Ok(None);
        }
        let mut last: Option<AppliedDigest> = None;
        for i in self.running_gateways() {
            let applied = self.digest_converges(admin, i, what, deadline).await?;
            if last
                .as_ref()
                .is_none_or(|l| applied.applied_at_us > l.applied_at_us)
            {
                last = Some(applied);
            }
        }
        let last = last.expect("a gateway runs at every digest equality (checked at parse time)");
        Ok(Some(last))
    }

    /// [`Case::digests_converge`] for gateway `i`.
    async fn digest_converges(
        &self,
        admin: &AdminClient,
        i: usize,
        what: &str,
        deadline: Option<Instant>,
    ) -> Result<AppliedDigest, RunErrorKind> {
        let mut policy = WaitPolicy {
            consecutive: 1,
            ..policy(&self.scenario.wait)
        };
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            policy.timeout = policy.timeout.min(left);
        }
        let gateway = &self.gateways[i];
        let name = self.gateway_name(i);
        let seen: Mutex<Option<(String, AppliedDigest)>> = Mutex::new(None);
        await_convergence(policy, || async {
            let (a, g) = (
                admin.digest().await.map_err(|e| e.to_string())?,
                gateway.digest().await.map_err(|e| e.to_string())?,
            );
            if a.digest == g.report.digest {
                *seen.locked() = Some((a.digest, g));
                Ok(())
            } else {
                Err(format!("admin {a:?}, {name} {g:?}"))
            }
        })
        .await
        .map_err(|source| RunErrorKind::Timeout {
            what: if self.gateways.len() == 1 {
                what.to_owned()
            } else {
                format!("{what} ({name})")
            },
            source,
        })?;
        let (admin_digest, gateway) = seen
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .expect("a converged wait saw equal digests");
        self.record(|r| {
            r.digests = Some(FinalDigests {
                admin: admin_digest,
                gateway: gateway.report.digest.clone(),
            });
        });
        Ok(gateway)
    }
}

/// The answers a `distribution` wait's pass counted per upstream of its split, in the order
/// the file names them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answered(Vec<(String, u32)>);

impl Answered {
    /// None counted yet.
    fn new(upstreams: &[String]) -> Answered {
        Answered(upstreams.iter().map(|u| (u.clone(), 0)).collect())
    }

    /// Counts an answer of `upstream` (the judge already refused any other).
    fn add(&mut self, upstream: &str) {
        if let Some((_, n)) = self.0.iter_mut().find(|(u, _)| u == upstream) {
            *n += 1;
        }
    }

    /// The upstreams that have not answered.
    fn unseen(&self) -> Vec<&str> {
        (self.0.iter())
            .filter(|(_, n)| *n == 0)
            .map(|(u, _)| u.as_str())
            .collect()
    }
}

impl std::fmt::Display for Answered {
    /// `answered: alpha 12, beta 0`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counts: Vec<String> = self.0.iter().map(|(u, n)| format!("{u} {n}")).collect();
        write!(f, "answered: {}", counts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_is_seen_once_every_upstream_answered() {
        let mut seen = Answered::new(&["alpha".into(), "beta".into()]);
        seen.add("alpha");
        seen.add("alpha");
        assert_eq!(seen.unseen(), ["beta"]);
        assert_eq!(seen.to_string(), "answered: alpha 2, beta 0");
        seen.add("gamma");
        assert_eq!(
            seen.unseen(),
            ["beta"],
            "an upstream outside the split counts for none"
        );
        seen.add("beta");
        assert!(seen.unseen().is_empty());
        assert_eq!(seen.to_string(), "answered: alpha 2, beta 1");
    }
}
