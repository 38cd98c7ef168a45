//! Injecting and healing a history's faults on the live topology.

use super::super::history::Fault;
use super::live::Live;
use super::modes::{protocol_fault, store_target};
use crate::client::AdminClient;
use crate::fault::Mode as ProxyMode;
use crate::scenario::ast::{FaultAction, SyncFault, Target};

const ADMIN: Target = Target::Admin(None);

impl Live {
    /// Starts `fault`; for a compaction, returns etcd's revision before it.
    pub(super) async fn inject(&self, fault: Fault) -> Result<Option<i64>, String> {
        let done = match fault {
            Fault::RestartGateway => self.on_gateways(FaultAction::Stop).await,
            Fault::PauseGateway => self.on_gateways(FaultAction::Pause).await,
            Fault::RestartOneGateway { index } => self.on_gateway(index, FaultAction::Stop).await,
            Fault::PauseOneGateway { index } => self.on_gateway(index, FaultAction::Pause).await,
            Fault::Partition => self.topo.partition(ProxyMode::Blackhole).await,
            Fault::KillAdmin => self.topo.fault(FaultAction::Kill, ADMIN).await,
            Fault::PauseAdmin => self.topo.fault(FaultAction::Pause, ADMIN).await,
            Fault::KillStore => self.topo.fault(FaultAction::Kill, self.store()?).await,
            Fault::Protocol => {
                let kind = protocol_fault(self.mode).ok_or(format!(
                    "no protocol fault heals by itself in the {} mode",
                    self.mode
                ))?;
                let armed = SyncFault {
                    kind,
                    count: 1,
                    delay: None,
                };
                return self
                    .admin
                    .arm_sync_fault(&armed)
                    .await
                    .map(|()| None)
                    .map_err(|e| format!("arming {}: {e}", kind.name()));
            }
            Fault::Compact { partitioned } => {
                let before = self
                    .topo
                    .etcd_revision()
                    .await
                    .map_err(|e| format!("injecting {fault:?}: {e}"))?;
                if partitioned {
                    self.topo
                        .partition(ProxyMode::Cut)
                        .await
                        .map_err(|e| format!("injecting {fault:?}: {e}"))?;
                }
                return Ok(Some(before));
            }
        };
        done.map(|()| None)
            .map_err(|e| format!("injecting {fault:?}: {e}"))
    }

    /// Ends `fault`; after an admin restart logs in again (its tokens do not survive it). A
    /// compaction compacts etcd once its revision is at least `etcd_least`, then heals the
    /// partition, if any (also when the compaction failed).
    pub(super) async fn heal(
        &mut self,
        fault: Fault,
        etcd_least: Option<i64>,
    ) -> Result<(), String> {
        let done = match fault {
            Fault::RestartGateway => self.on_gateways(FaultAction::Start).await,
            Fault::PauseGateway => self.on_gateways(FaultAction::Resume).await,
            Fault::RestartOneGateway { index } => self.on_gateway(index, FaultAction::Start).await,
            Fault::PauseOneGateway { index } => self.on_gateway(index, FaultAction::Resume).await,
            Fault::Compact { partitioned } => {
                let compacted = self.compact(etcd_least.unwrap_or_default()).await;
                let healed = if partitioned {
                    self.topo.heal().await
                } else {
                    Ok(())
                };
                compacted.and(healed).map(drop)
            }
            Fault::Partition => self.topo.heal().await,
            Fault::KillAdmin => self.topo.fault(FaultAction::Start, ADMIN).await,
            Fault::PauseAdmin => self.topo.fault(FaultAction::Resume, ADMIN).await,
            Fault::KillStore => self.topo.fault(FaultAction::Start, self.store()?).await,
            // It heals by itself (or hits the next push, if none came).
            Fault::Protocol => Ok(()),
        };
        done.map_err(|e| format!("healing {fault:?}: {e}\n{}", self.topo.log_tails(20)))?;
        if fault == Fault::KillAdmin {
            self.admin = AdminClient::login(self.topo.admin().url(), "admin", "123456")
                .await
                .map_err(|e| format!("logging in to the restarted admin: {e}"))?;
        }
        Ok(())
    }

    /// The store [`Fault::KillStore`] kills in this mode.
    fn store(&self) -> Result<Target, String> {
        store_target(self.mode).ok_or(format!("the {} mode has no store to kill", self.mode))
    }

    /// Compacts etcd once its revision is at least `least`, unless nothing was written since
    /// the last compaction (etcd refuses to compact a revision twice).
    async fn compact(&mut self, least: i64) -> Result<(), crate::BackendError> {
        let now = self.topo.etcd_revision().await?;
        if self.compacted.is_some_and(|c| now <= c && least <= c) {
            return Ok(());
        }
        self.compacted = Some(self.topo.compact_etcd(least).await?);
        Ok(())
    }

    /// `Ok` when every gateway but `down` answers (its `/actuator/digest`) while `down`
    /// alone is stopped or paused.
    pub(super) async fn others_answer(&self, down: u8) -> Result<(), String> {
        for (g, client) in self.gateways.iter().enumerate() {
            if g == usize::from(down) {
                continue;
            }
            client.digest().await.map_err(|e| {
                format!("gateway[{g}] did not answer while only gateway[{down}] was down: {e}")
            })?;
        }
        Ok(())
    }

    /// `action` on gateway `index` only.
    async fn on_gateway(&self, index: u8, action: FaultAction) -> Result<(), crate::BackendError> {
        self.topo.fault(action, Target::Gateway(Some(index))).await
    }

    pub(super) async fn on_gateways(&self, action: FaultAction) -> Result<(), crate::BackendError> {
        for i in 0..self.gateways.len() {
            let i = u8::try_from(i).unwrap_or(u8::MAX);
            self.topo.fault(action, Target::Gateway(Some(i))).await?;
        }
        Ok(())
    }
}
