//! What the convergence property generates: histories of admin operations on a few routes,
//! interleaved with faults, each fault healed before the next step (so every history ends
//! healed: everything running, no partition).

use std::fmt;
use std::time::Duration;

use proptest::prelude::*;

/// Routes per history: few, so that operations collide on them.
pub(crate) const KEYS: u8 = 3;

/// Registered applications per history (keys of their own: a registration makes its own
/// selector, matching its context path, not a route's path).
pub(crate) const REGISTERED: u8 = 2;

/// The echo upstream a route sends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Upstream {
    /// The upstream named `alpha`.
    Alpha,
    /// The upstream named `beta`.
    Beta,
}

impl Upstream {
    /// Its name (the `x-gantry-upstream` header it answers with).
    pub fn name(self) -> &'static str {
        match self {
            Upstream::Alpha => "alpha",
            Upstream::Beta => "beta",
        }
    }
}

/// One admin operation on route `key` (`/conv/<case>/<key>`: a divide selector and its rule,
/// both matching that path).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Creates the route to `upstream`, or moves it there (and recreates its rule if deleted).
    Put {
        /// The route.
        key: u8,
        /// Where it sends.
        upstream: Upstream,
    },
    /// Enables or disables the route's selector.
    Enable {
        /// The route.
        key: u8,
        /// Enabled after it.
        on: bool,
    },
    /// Deletes the route's selector (and with it its rule).
    Delete {
        /// The route.
        key: u8,
    },
    /// Deletes the route's rule only (the selector stays; nothing is served).
    DeleteRule {
        /// The route.
        key: u8,
    },
    /// Enables or disables the divide plugin (every route at once: while it is disabled the
    /// gateway answers every route 404 with code -106; the routes stay as they are).
    Plugin {
        /// Enabled after it.
        on: bool,
    },
    /// Registers `upstream`'s address as a ShenYu http client of application `key`
    /// (context path `/reg/<case>/<key>`, one API path `/reg/<case>/<key>/get`): the admin
    /// creates the divide selector for the context path with a rule for the API path (and
    /// the contextPath plugin's selector and rule) on the first registration, and adds the
    /// address to the selector's upstreams on every one (a second upstream is added, not
    /// moved to; the same one again changes nothing).
    Register {
        /// The registered application.
        key: u8,
        /// Whose address registers.
        upstream: Upstream,
    },
}

impl Op {
    /// The route it acts on (none for a plugin operation or a registration).
    pub fn key(self) -> Option<u8> {
        match self {
            Op::Put { key, .. }
            | Op::Enable { key, .. }
            | Op::Delete { key }
            | Op::DeleteRule { key } => Some(key),
            Op::Plugin { .. } | Op::Register { .. } => None,
        }
    }

    /// The application it registers, if it is a registration.
    pub fn registers(self) -> Option<u8> {
        match self {
            Op::Register { key, .. } => Some(key),
            _ => None,
        }
    }

    /// Whether it deletes something (a selector or a rule).
    pub fn deletes(self) -> bool {
        matches!(self, Op::Delete { .. } | Op::DeleteRule { .. })
    }
}

/// A fault, injected before its step's operations and healed after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Every gateway stopped, then started again.
    RestartGateway,
    /// Every gateway paused (SIGSTOP), then resumed.
    PauseGateway,
    /// Gateway `index` only stopped, then started again (the others keep serving);
    /// generated with several gateways only.
    RestartOneGateway {
        /// The gateway's index.
        index: u8,
    },
    /// Gateway `index` only paused, then resumed (the others keep serving); generated with
    /// several gateways only.
    PauseOneGateway {
        /// The gateway's index.
        index: u8,
    },
    /// The gateways' sync connection blackholed (the fault proxy), then healed.
    Partition,
    /// The admin killed, then started again.
    KillAdmin,
    /// The admin paused, then resumed.
    PauseAdmin,
    /// The store the gateways sync from (ZooKeeper or etcd) killed, then started again;
    /// generated in those two modes only.
    KillStore,
    /// The admin's next push hit by a protocol fault its mode heals by itself (websocket:
    /// `closeMidPush`, the gateway resyncs on a new session; http: `emptyAnswer`, the
    /// gateway polls again); generated in those two modes only.
    Protocol,
    /// etcd compacted (physically, to its current revision) once the operations during it
    /// are in etcd, as a case file's `compact: etcd`; `partitioned`: the gateways' sync
    /// connections are cut (the fault proxy's `cut`: closed, new ones closed at once) from
    /// before those operations until after the compaction, so every gateway's next session
    /// starts behind the compacted revision and must read everything again; else the
    /// compaction comes right after the operations, the gateways' watches open. Generated
    /// in the etcd mode (host backend) only.
    Compact {
        /// Whether the gateways are cut off from etcd while it is compacted.
        partitioned: bool,
    },
}

impl Fault {
    /// Whether the gateways lose their sync server for a while and find it again through
    /// their reconnect back-off (capped at [`model::Backoff::CAP`]).
    pub fn backs_off(self) -> bool {
        matches!(
            self,
            Fault::KillStore | Fault::KillAdmin | Fault::Compact { partitioned: true }
        )
    }

    /// Its kind, as the run's summary counts it (`compact` with or without a partition, one
    /// gateway whichever its index).
    pub fn kind(self) -> &'static str {
        match self {
            Fault::RestartGateway => "restart every gateway",
            Fault::PauseGateway => "pause every gateway",
            Fault::RestartOneGateway { .. } => "restart one gateway",
            Fault::PauseOneGateway { .. } => "pause one gateway",
            Fault::Partition => "partition",
            Fault::KillAdmin => "kill the admin",
            Fault::PauseAdmin => "pause the admin",
            Fault::KillStore => "kill the store",
            Fault::Protocol => "protocol",
            Fault::Compact { partitioned: true } => "compact while cut off",
            Fault::Compact { partitioned: false } => "compact after the writes",
        }
    }

    /// The gateway it hits alone, if it hits one gateway of several.
    pub fn one_gateway(self) -> Option<u8> {
        match self {
            Fault::RestartOneGateway { index } | Fault::PauseOneGateway { index } => Some(index),
            _ => None,
        }
    }

    /// Whether the admin cannot acknowledge anything during the fault (so no operation is
    /// generated inside it).
    pub fn admin_down(self) -> bool {
        matches!(self, Fault::KillAdmin | Fault::PauseAdmin)
    }
}

/// One step of a history.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Step {
    /// An operation with everything running.
    Op(Op),
    /// A fault, the operations `during` it (none when it takes the admin down), its heal.
    Fault {
        /// What is broken.
        fault: Fault,
        /// Operations sent while it lasts.
        during: Vec<Op>,
    },
}

/// A generated history.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct History(pub Vec<Step>);

/// Time a gateway gets, beyond its reconnect back-off's cap, to resync after a fault it
/// recovers from by reconnecting.
pub(crate) const RESYNC_MARGIN: Duration = Duration::from_secs(3);

impl History {
    /// The bound the checker allows this history: `bound`, but at least the gateways'
    /// reconnect back-off cap plus [`RESYNC_MARGIN`] when a fault makes them reconnect (a
    /// gateway may wait a whole back-off step after its server is back before it tries).
    pub fn bound(&self, bound: Duration) -> Duration {
        let reconnects = self.0.iter().any(|s| match s {
            Step::Fault { fault, .. } => fault.backs_off(),
            Step::Op(_) => false,
        });
        if reconnects {
            bound.max(model::Backoff::CAP + RESYNC_MARGIN)
        } else {
            bound
        }
    }

    /// Every operation, in order.
    pub fn ops(&self) -> impl Iterator<Item = Op> + '_ {
        self.0.iter().flat_map(|s| match s {
            Step::Op(op) => std::slice::from_ref(op).iter().copied(),
            Step::Fault { during, .. } => during.iter().copied(),
        })
    }

    /// Steps plus operations inside faults: its length as a shrunk history is judged.
    pub fn len(&self) -> usize {
        self.0
            .iter()
            .map(|s| match s {
                Step::Op(_) => 1,
                Step::Fault { during, .. } => 1 + during.len(),
            })
            .sum()
    }

    /// Whether it has no step.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether it enables or disables the divide plugin.
    pub fn touches_plugin(&self) -> bool {
        self.ops().any(|op| matches!(op, Op::Plugin { .. }))
    }

    /// The routes it touches, in order.
    pub fn keys(&self) -> Vec<u8> {
        let mut keys: Vec<u8> = self.ops().filter_map(Op::key).collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The applications it registers, in order.
    pub fn registered(&self) -> Vec<u8> {
        let mut keys: Vec<u8> = self.ops().filter_map(Op::registers).collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Op::Put { key, upstream } => write!(f, "put route {key} -> {}", upstream.name()),
            Op::Enable { key, on: true } => write!(f, "enable route {key}"),
            Op::Enable { key, on: false } => write!(f, "disable route {key}"),
            Op::Delete { key } => write!(f, "delete route {key}"),
            Op::DeleteRule { key } => write!(f, "delete the rule of route {key}"),
            Op::Plugin { on: true } => f.write_str("enable the divide plugin"),
            Op::Plugin { on: false } => f.write_str("disable the divide plugin"),
            Op::Register { key, upstream } => {
                write!(f, "register {} for application {key}", upstream.name())
            }
        }
    }
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Op(op) => writeln!(f, "  [{i}] {op}")?,
                Step::Fault { fault, during } => {
                    writeln!(f, "  [{i}] fault {fault:?}")?;
                    for op in during {
                        writeln!(f, "        during: {op}")?;
                    }
                    writeln!(f, "        heal")?;
                }
            }
        }
        Ok(())
    }
}

/// The histories one edit smaller than `h`: without one of its steps, without one
/// operation inside a fault, or with a fault replaced by its operations.
pub(crate) fn smaller(h: &History) -> Vec<History> {
    let mut out = Vec::new();
    for (i, step) in h.0.iter().enumerate() {
        let with = |replacement: Vec<Step>| {
            let mut steps = h.0[..i].to_vec();
            steps.extend(replacement);
            steps.extend_from_slice(&h.0[i + 1..]);
            History(steps)
        };
        out.push(with(Vec::new()));
        if let Step::Fault { fault, during } = step {
            out.push(with(during.iter().copied().map(Step::Op).collect()));
            for j in 0..during.len() {
                let mut fewer = during.clone();
                fewer.remove(j);
                out.push(with(vec![Step::Fault {
                    fault: *fault,
                    during: fewer,
                }]));
            }
        }
    }
    out.retain(|c| !c.is_empty());
    out
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS;
    let upstream = || prop_oneof![Just(Upstream::Alpha), Just(Upstream::Beta)];
    // Put first: proptest shrinks a `prop_oneof` towards its first arm.
    prop_oneof![
        4 => (key.clone(), upstream()).prop_map(|(key, upstream)| Op::Put { key, upstream }),
        2 => (key.clone(), any::<bool>()).prop_map(|(key, on)| Op::Enable { key, on }),
        2 => key.clone().prop_map(|key| Op::Delete { key }),
        1 => key.prop_map(|key| Op::DeleteRule { key }),
        1 => any::<bool>().prop_map(|on| Op::Plugin { on }),
        1 => (0..REGISTERED, upstream()).prop_map(|(key, upstream)| Op::Register { key, upstream }),
    ]
}

/// Which mode- and topology-specific faults a mode's histories may contain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ModeFaults {
    /// [`Fault::Protocol`] (websocket and http).
    pub protocol: bool,
    /// [`Fault::KillStore`] (zookeeper and etcd).
    pub store: bool,
    /// [`Fault::Compact`] (etcd, host backend).
    pub compact: bool,
    /// Gateways in the topology: with more than one, [`Fault::RestartOneGateway`] and
    /// [`Fault::PauseOneGateway`] on each of them.
    pub gateways: u8,
}

fn fault_step(extra: ModeFaults) -> impl Strategy<Value = Step> {
    let mut faults = vec![
        Fault::RestartGateway,
        Fault::PauseGateway,
        Fault::Partition,
        Fault::KillAdmin,
        Fault::PauseAdmin,
    ];
    // One entry each for the one-gateway faults (their index is drawn below), so that they
    // are as frequent as any other kind, whatever the number of gateways.
    if extra.gateways > 1 {
        faults.push(Fault::RestartOneGateway { index: 0 });
        faults.push(Fault::PauseOneGateway { index: 0 });
    }
    if extra.protocol {
        faults.push(Fault::Protocol);
    }
    if extra.store {
        faults.push(Fault::KillStore);
    }
    if extra.compact {
        faults.push(Fault::Compact { partitioned: true });
        faults.push(Fault::Compact { partitioned: false });
    }
    let gateways = extra.gateways.max(1);
    prop::sample::select(faults).prop_flat_map(move |fault| {
        // A protocol fault hits a push and a compaction compacts writes, so an operation
        // follows them.
        let (least, most) = match fault {
            f if f.admin_down() => (0, 0),
            Fault::Protocol | Fault::Compact { .. } => (1, 2),
            _ => (0, 2),
        };
        let fault = (0..gateways).prop_map(move |index| match fault {
            Fault::RestartOneGateway { .. } => Fault::RestartOneGateway { index },
            Fault::PauseOneGateway { .. } => Fault::PauseOneGateway { index },
            other => other,
        });
        (fault, prop::collection::vec(op(), least..=most))
            .prop_map(|(fault, during)| Step::Fault { fault, during })
    })
}

/// Histories of 1–`steps` steps; with `faults`, about one step in four is a fault (the
/// mode-specific ones among them only as `extra` says).
pub(crate) fn history(steps: usize, faults: bool, extra: ModeFaults) -> BoxedStrategy<History> {
    let step = if faults {
        prop_oneof![3 => op().prop_map(Step::Op), 1 => fault_step(extra)].boxed()
    } else {
        op().prop_map(Step::Op).boxed()
    };
    prop::collection::vec(step, 1..=steps.max(1))
        .prop_map(History)
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaller_histories_drop_one_thing_each() {
        let put = Op::Put {
            key: 0,
            upstream: Upstream::Alpha,
        };
        let delete = Op::Delete { key: 0 };
        let h = History(vec![
            Step::Fault {
                fault: Fault::Partition,
                during: vec![put],
            },
            Step::Op(delete),
        ]);
        let lens: Vec<usize> = smaller(&h).iter().map(History::len).collect();
        assert_eq!(lens, [1, 2, 2, 2]);
        assert!(smaller(&History(vec![Step::Op(put)])).is_empty());
        assert_eq!(h.len(), 3);
        assert_eq!(h.keys(), [0]);
    }

    /// 200 histories of at most 8 steps, with faults.
    fn generated(extra: ModeFaults) -> Vec<History> {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = history(8, true, extra);
        (0..200)
            .map(|_| strategy.new_tree(&mut runner).unwrap().current())
            .collect()
    }

    fn faults_of(extra: ModeFaults) -> (Vec<Fault>, bool) {
        let (mut faults, mut plugin) = (Vec::new(), false);
        for h in generated(extra) {
            plugin |= h.touches_plugin();
            for step in &h.0 {
                if let Step::Fault { fault, .. } = step {
                    faults.push(*fault);
                }
            }
        }
        (faults, plugin)
    }

    #[test]
    fn registrations_are_generated_in_every_mode_on_keys_of_their_own() {
        for extra in [
            ModeFaults::default(),
            ModeFaults {
                protocol: true,
                gateways: 2,
                ..ModeFaults::default()
            },
            ModeFaults {
                store: true,
                compact: true,
                ..ModeFaults::default()
            },
        ] {
            let histories = generated(extra);
            let registrations: Vec<Op> = histories
                .iter()
                .flat_map(|h| {
                    h.ops()
                        .filter(|op| op.registers().is_some())
                        .collect::<Vec<_>>()
                })
                .collect();
            for upstream in [Upstream::Alpha, Upstream::Beta] {
                for key in 0..REGISTERED {
                    assert!(
                        registrations.contains(&Op::Register { key, upstream }),
                        "{extra:?}: no registration of {upstream:?} for application {key}"
                    );
                }
            }
            assert!(
                histories.iter().any(|h| h.0.iter().any(|s| matches!(
                    s,
                    Step::Fault { during, .. } if during.iter().any(|op| op.registers().is_some())
                ))),
                "{extra:?}: no registration during a fault"
            );
        }
        let h = History(vec![
            Step::Op(Op::Register {
                key: 1,
                upstream: Upstream::Beta,
            }),
            Step::Op(Op::Put {
                key: 1,
                upstream: Upstream::Alpha,
            }),
        ]);
        assert_eq!((h.keys(), h.registered()), (vec![1], vec![1]));
        assert_eq!(
            h.ops().next().map(|op| op.to_string()).as_deref(),
            Some("register beta for application 1")
        );
    }

    #[test]
    fn mode_specific_faults_and_plugin_operations_are_generated_where_they_belong() {
        let store = ModeFaults {
            store: true,
            ..ModeFaults::default()
        };
        let (faults, plugin) = faults_of(store);
        assert!(plugin, "no history toggles the divide plugin");
        assert!(faults.contains(&Fault::KillStore));
        assert!(!faults.contains(&Fault::Protocol));
        let (faults, _) = faults_of(ModeFaults {
            protocol: true,
            ..ModeFaults::default()
        });
        assert!(faults.contains(&Fault::Protocol));
        assert!(!faults.contains(&Fault::KillStore));
    }

    fn compacts(fault: &Fault) -> bool {
        matches!(fault, Fault::Compact { .. })
    }

    #[test]
    fn faults_on_one_gateway_come_with_several_gateways_only_and_name_each() {
        let (faults, _) = faults_of(ModeFaults {
            gateways: 1,
            ..ModeFaults::default()
        });
        assert!(faults.iter().all(|f| f.one_gateway().is_none()));
        assert!(faults.contains(&Fault::RestartGateway));
        let (faults, _) = faults_of(ModeFaults {
            gateways: 3,
            ..ModeFaults::default()
        });
        for index in 0..3 {
            assert!(faults.contains(&Fault::RestartOneGateway { index }));
            assert!(faults.contains(&Fault::PauseOneGateway { index }));
        }
        assert!(faults.iter().filter_map(|f| f.one_gateway()).all(|i| i < 3));
        assert_eq!(Fault::PauseOneGateway { index: 2 }.one_gateway(), Some(2));
        assert_eq!(Fault::PauseGateway.one_gateway(), None);
        assert!(faults.contains(&Fault::PauseGateway), "every gateway still");
        assert!(!Fault::RestartOneGateway { index: 0 }.backs_off());
        assert!(!Fault::PauseOneGateway { index: 0 }.admin_down());
        assert_eq!(
            Fault::PauseOneGateway { index: 0 }.kind(),
            Fault::PauseOneGateway { index: 2 }.kind()
        );
    }

    #[test]
    fn compactions_come_in_the_etcd_mode_only_both_ways_each_after_an_operation() {
        let (faults, _) = faults_of(ModeFaults {
            store: true,
            gateways: 2,
            ..ModeFaults::default()
        });
        assert!(!faults.iter().any(compacts), "zookeeper has no compaction");
        let histories = generated(ModeFaults {
            store: true,
            compact: true,
            gateways: 2,
            ..ModeFaults::default()
        });
        let compactions: Vec<(Fault, usize)> = histories
            .iter()
            .flat_map(|h| &h.0)
            .filter_map(|s| match s {
                Step::Fault { fault, during } if compacts(fault) => Some((*fault, during.len())),
                _ => None,
            })
            .collect();
        for partitioned in [true, false] {
            assert!(
                compactions
                    .iter()
                    .any(|(f, _)| *f == Fault::Compact { partitioned }),
                "no compaction with partitioned: {partitioned}"
            );
        }
        assert!(compactions.iter().all(|&(_, ops)| (1..=2).contains(&ops)));
        // A cut makes the gateways reconnect through their back-off.
        assert!(Fault::Compact { partitioned: true }.backs_off());
        assert!(!Fault::Compact { partitioned: false }.backs_off());
        assert_ne!(
            Fault::Compact { partitioned: true }.kind(),
            Fault::Compact { partitioned: false }.kind()
        );
    }

    #[test]
    fn a_reconnecting_fault_gets_the_back_off_cap_plus_the_margin() {
        let bound = Duration::from_secs(5);
        let op = History(vec![Step::Fault {
            fault: Fault::Partition,
            during: Vec::new(),
        }]);
        assert_eq!(op.bound(bound), bound);
        let kill = History(vec![Step::Fault {
            fault: Fault::KillStore,
            during: Vec::new(),
        }]);
        assert_eq!(kill.bound(bound), model::Backoff::CAP + RESYNC_MARGIN);
        assert_eq!(kill.bound(Duration::from_secs(30)), Duration::from_secs(30));
    }
}
