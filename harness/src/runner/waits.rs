//! Waits: a `wait:` block's probes on every running gateway until they pass, and digest
//! equality between the admin and every running gateway.

use model::lock::MutexExt;
use std::sync::Mutex;

use model::AppliedDigest;

use super::Case;
use crate::client::{AdminClient, GatewayClient};
use crate::error::RunErrorKind;
use crate::probe::judge;
use crate::report::FinalDigests;
use crate::scenario::ast::{Expect, RequestSpec, Wait};
use crate::wait::{Converged, WaitPolicy, await_convergence};

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
        let resp = gateway.send(request).await.map_err(|e| e.to_string())?;
        let names = self.names.locked().clone();
        judge(expect, &resp, &names)
    }

    /// Waits until `wait`'s probes all pass on every running gateway (at once), and answers
    /// the latest convergence of them.
    pub(super) async fn wait_for(
        &self,
        wait: &Wait,
        what: &str,
    ) -> Result<Converged, RunErrorKind> {
        let waits = self.running_gateways().into_iter().map(|i| async move {
            await_convergence(policy(wait), || self.probes_on(i, wait))
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

    /// One pass of `wait`'s probes on gateway `i`: every probe must pass; a miss names the
    /// probe when there are several.
    async fn probes_on(&self, i: usize, wait: &Wait) -> Result<(), String> {
        for (k, probe) in wait.probes.iter().enumerate() {
            self.probe_on(&self.gateways[i], &probe.request, &probe.expect)
                .await
                .map_err(|miss| match wait.listed {
                    true => format!("{}: {miss}", wait.probe_path(k)),
                    false => miss,
                })?;
        }
        Ok(())
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
        if !self.caps.digest {
            return Ok(None);
        }
        let mut last: Option<AppliedDigest> = None;
        for i in self.running_gateways() {
            let applied = self.digest_converges(admin, i, what).await?;
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
    ) -> Result<AppliedDigest, RunErrorKind> {
        let policy = WaitPolicy {
            consecutive: 1,
            ..policy(&self.scenario.wait)
        };
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
