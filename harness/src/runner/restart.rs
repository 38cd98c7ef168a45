//! `--run-mode restart`: every running gateway restarted before each step (so between setup's
//! checks and the first step, and between every two steps), and waited for until its digest
//! equals the admin's before the step's changes.

use super::faults::Faulted;
use super::{Case, StepResult, at};
use crate::client::AdminClient;
use std::time::Duration;

use crate::error::{RunErrorKind, Step};
use crate::wait::{WaitPolicy, await_convergence};

/// What a restarted gateway's health says once its sync session is up.
const CONNECTED: &str = "\"connected\":true";

/// How long a restarted gateway's sync session may take to come up after its digest equals
/// the admin's, polled every 10 ms.
const SESSION_WAIT: WaitPolicy = WaitPolicy {
    consecutive: 1,
    interval: Duration::from_millis(10),
    timeout: Duration::from_secs(10),
};
use crate::scenario::ast::{FaultAction, Target};

impl Case<'_> {
    /// Restarts every running gateway before step `step` and waits until each is up (the
    /// backend's readiness) and its digest equals the admin's. While the faults of the steps
    /// before leave no admin running, the store server down or the gateway cut off from its
    /// config, no restart
    /// happens: a gateway started then has nothing to sync from, and would serve nothing
    /// until the step's own changes bring the admin, the store or the link back.
    pub(super) async fn restart_before(
        &self,
        step: &str,
        admin: &AdminClient,
        faulted: &Faulted,
    ) -> StepResult<()> {
        if faulted.admin_down || faulted.store_down || faulted.partitioned {
            tracing::info!(case = %self.id, step, "run mode restart: no restart while the gateway cannot sync");
            return Ok(());
        }
        for i in self.running_gateways() {
            tracing::info!(case = %self.id, step, "run mode restart: {}", self.gateway_name(i));
            let target = Target::Gateway(u8::try_from(i).ok());
            (self.topo.fault(FaultAction::Restart, target).await).map_err(at(Step::Steps))?;
        }
        let what = format!("digest equality after the run mode's restart before step `{step}`");
        self.digests_converge(admin, &what)
            .await
            .map_err(at(Step::Steps))?;
        for i in self.running_gateways() {
            self.sync_connected(i, step)
                .await
                .map_err(at(Step::Steps))?;
        }
        Ok(())
    }

    /// Waits until gateway `i`'s health says its sync session is up (`"connected":true`):
    /// a gateway can hold the admin's digest from its first full read before its session
    /// (the etcd watch, say) is set up, and a step judging the session must not see that.
    async fn sync_connected(&self, i: usize, step: &str) -> Result<(), RunErrorKind> {
        let gateway = &self.gateways[i];
        let check = || async {
            match gateway.health().await {
                Ok((200, body)) if body.contains(CONNECTED) => Ok(()),
                Ok((status, body)) => Err(format!("HTTP {status}: {body}")),
                Err(e) => Err(e.to_string()),
            }
        };
        await_convergence(SESSION_WAIT, check)
            .await
            .map(drop)
            .map_err(|source| RunErrorKind::Timeout {
                what: format!(
                    "{}'s sync session after the run mode's restart before step `{step}`",
                    self.gateway_name(i)
                ),
                source,
            })
    }
}
