//! A step's faults: processes stopped, killed, started, restarted, paused or resumed, the sync
//! connection partitioned and healed, protocol faults armed, etcd compacted, a ZooKeeper
//! session expired, a gateway starved of CPU and fed, a clock stepped, the admin's database
//! disk filled and freed; and which admins and gateways run afterwards.

use super::{Case, StepResult, at};
use crate::client::AdminClient;
use crate::error::Step;
use crate::fault::{Direction, Mode as ProxyMode, Starvation, Toxic, Toxics};
use crate::scenario::ast::{
    Fault, FaultAction, NetworkDirection, NetworkFault, PartitionHow, StepSpec, Target,
};

/// What the faults of the steps so far left broken: a step's digest equality is skipped while
/// either holds.
#[derive(Debug, Default)]
pub(super) struct Faulted {
    /// No admin runs.
    pub(super) admin_down: bool,
    /// The gateway is cut off from its config (a partition other than a delay).
    pub(super) partitioned: bool,
    /// The step's starved gateway, if any: dropping it (a `feed`, the step's end) feeds it.
    pub(super) starved: Option<Starvation>,
    /// The mode's store server (ZooKeeper, etcd) is stopped or killed: the gateway keeps
    /// what it has, but a gateway started now has nothing to read (`--run-mode restart`
    /// restarts none meanwhile).
    pub(super) store_down: bool,
}

/// The admins a step talks to: the case's client (logged in again after an admin fault) and
/// the step's `via` admin, logged in to at its first use (after the faults before it).
pub(super) struct StepAdmins<'a> {
    /// The case's client, to the first running admin.
    pub(super) case: &'a mut AdminClient,
    /// The index of the step's `via` admin, if it names one.
    pub(super) via: Option<usize>,
    /// The client to the `via` admin, once logged in.
    pub(super) via_client: Option<AdminClient>,
}

impl StepAdmins<'_> {
    /// The client the step's admin changes and protocol faults go to.
    pub(super) async fn client(&mut self, case: &Case<'_>) -> StepResult<&AdminClient> {
        let Some(i) = self.via else {
            return Ok(self.case);
        };
        let client = match self.via_client.take() {
            Some(client) => client,
            None => case.login_to(i).await.map_err(at(Step::Steps))?,
        };
        Ok(self.via_client.insert(client))
    }
}

impl Case<'_> {
    /// Applies one fault of step `st`, keeping track of what runs (`faulted`, the running
    /// admins and gateways). A compaction covers at least revision `compact_from`.
    pub(super) async fn fault(
        &self,
        st: &StepSpec,
        fault: &Fault,
        admins: &mut StepAdmins<'_>,
        compact_from: i64,
        faulted: &mut Faulted,
    ) -> StepResult<()> {
        match fault {
            Fault::Process(action, target) => {
                self.process_fault(st, *action, *target, admins.case, faulted)
                    .await
            }
            // A delayed link still syncs: digest equality holds after the wait.
            Fault::Partition(how) => {
                faulted.partitioned = how.cuts_off();
                let mode = match how {
                    PartitionHow::Blackhole => ProxyMode::Blackhole,
                    PartitionHow::Cut => ProxyMode::Cut,
                    PartitionHow::Reset => ProxyMode::Reset,
                    PartitionHow::Sever => ProxyMode::Sever,
                    PartitionHow::Delay(d) => ProxyMode::Delay(*d),
                };
                self.topo.partition(mode).await.map_err(at(Step::Steps))
            }
            Fault::Network(network) => {
                faulted.partitioned |= network.cuts_off();
                tracing::info!(case = %self.id, step = %st.name, ?network, "network fault");
                self.topo
                    .network(network.link, |toxics| arm(network, toxics))
                    .await
                    .map_err(at(Step::Steps))
            }
            Fault::Heal => {
                faulted.partitioned = false;
                self.topo.heal().await.map_err(at(Step::Steps))
            }
            Fault::SyncFault(fault) => {
                let step = &st.name;
                tracing::info!(case = %self.id, step, "syncFault: {}", fault.kind.name());
                let client = admins.client(self).await?;
                client.arm_sync_fault(fault).await.map_err(at(Step::Steps))
            }
            Fault::Compact(_) => {
                let revision =
                    (self.topo.compact_etcd(compact_from).await).map_err(at(Step::Steps))?;
                tracing::info!(case = %self.id, step = %st.name, revision, "etcd compacted");
                Ok(())
            }
            Fault::Wipe(target) => {
                (self.topo.wipe_store(*target).await).map_err(at(Step::Steps))?;
                tracing::info!(case = %self.id, step = %st.name, "{target} wiped");
                Ok(())
            }
            Fault::Starve(how) => {
                let (target, duty, period) = (how.target, how.duty, how.period);
                tracing::info!(case = %self.id, step = %st.name, "starve: {target}, stopped {duty} of every {period:?}");
                faulted.starved = Some(self.topo.starve(how).map_err(at(Step::Steps))?);
                Ok(())
            }
            Fault::DiskFull(_) => {
                let bytes = self.topo.disk_full().map_err(at(Step::Steps))?;
                tracing::info!(case = %self.id, step = %st.name, bytes, "diskFull: the admin's database disk filled");
                Ok(())
            }
            Fault::DiskFree(_) => {
                tracing::info!(case = %self.id, step = %st.name, "diskFree: the admin's database disk freed");
                self.topo.disk_free().map_err(at(Step::Steps))
            }
            Fault::Feed(target) => {
                tracing::info!(case = %self.id, step = %st.name, "feed: {target}");
                faulted.starved = None;
                Ok(())
            }
            Fault::Clock(clock) => {
                let seconds = (clock.step.whole_seconds())
                    .expect("a clock step is whole seconds (checked at parse time)");
                let offset =
                    (self.topo.step_clock(clock.target, seconds)).map_err(at(Step::Steps))?;
                tracing::info!(case = %self.id, step = %st.name, offset, "{}'s clock stepped {}", clock.target, clock.step);
                Ok(())
            }
            Fault::ExpireSession(target) => {
                // `during` probes leave the gateway while it is paused.
                if let Some(i) = target.index() {
                    self.gateway_goes_down(i).await;
                }
                let took =
                    (self.topo.expire_zookeeper_session(*target).await).map_err(at(Step::Steps))?;
                tracing::info!(case = %self.id, step = %st.name, ?took, "{target} paused until ZooKeeper expired its session");
                Ok(())
            }
        }
    }

    /// Stops, kills, starts, restarts, pauses or resumes `target`, and marks it running or
    /// not; after an admin's, `admin` logs in again to the first running admin.
    async fn process_fault(
        &self,
        st: &StepSpec,
        action: FaultAction,
        target: Target,
        admin: &mut AdminClient,
        faulted: &mut Faulted,
    ) -> StepResult<()> {
        tracing::info!(case = %self.id, step = %st.name, "{}: {target}", action.name());
        let runs = !matches!(
            action,
            FaultAction::Stop | FaultAction::Kill | FaultAction::Pause
        );
        // `during` probes leave a gateway before it goes down, and come back once it is
        // up again.
        if let (Target::Gateway(_), Some(i), false) = (target, target.index(), runs) {
            self.gateway_goes_down(i).await;
        }
        self.topo
            .fault(action, target)
            .await
            .map_err(at(Step::Steps))?;
        match (target, target.index()) {
            (Target::Admin(_), Some(i)) => {
                self.running().admins[i] = runs;
                faulted.admin_down = self.first_admin().is_none();
                // A started admin forgets its sessions; a stopped one takes them along:
                // log in again to the first running one.
                if !faulted.admin_down {
                    *admin = self.login().await.map_err(at(Step::Steps))?;
                }
            }
            (Target::Gateway(_), Some(i)) => self.running().gateways[i] = runs,
            (Target::Zookeeper | Target::Etcd, _) => faulted.store_down = !runs,
            _ => {}
        }
        Ok(())
    }

    /// Marks gateway `i` down for `during` probes and waits until none is in flight to it.
    async fn gateway_goes_down(&self, i: usize) {
        self.running().gateways[i] = false;
        drop(self.in_flight.write().await);
    }
}

/// Adds the toxic of a `network` entry to `toxics`, on its directions.
fn arm(network: &NetworkFault, toxics: &mut Toxics) {
    let toxic = match *network {
        NetworkFault {
            latency: Some(l), ..
        } => Toxic::Latency {
            delay: l.delay,
            jitter: l.jitter,
        },
        NetworkFault {
            bandwidth: Some(b), ..
        } => Toxic::Bandwidth {
            bytes_per_second: b.bytes_per_second,
        },
        NetworkFault { slice: Some(s), .. } => Toxic::Slice {
            bytes: s.bytes,
            every: s.every,
        },
        NetworkFault {
            slow_close: Some(c),
            ..
        } => Toxic::SlowClose { delay: c.delay },
        NetworkFault {
            limit_data: Some(l),
            ..
        } => Toxic::LimitData { bytes: l.bytes },
        NetworkFault {
            blackhole: Some(_), ..
        } => Toxic::Blackhole,
        NetworkFault { loss: Some(l), .. } => return toxics.add_loss(l.rate),
        // Validation asks for exactly one kind.
        _ => return,
    };
    let directions: &[Direction] = match network.direction {
        NetworkDirection::Both => &[Direction::Request, Direction::Answer],
        NetworkDirection::Request => &[Direction::Request],
        NetworkDirection::Answer => &[Direction::Answer],
    };
    for direction in directions {
        toxics.add(*direction, toxic);
    }
}
