//! What one seed runs: a history of admin operations (the convergence property's, see
//! [`crate::converge::history`]) and a fault schedule, each step at a simulated time. The
//! same seed always makes the same plan; a shrunk plan is the seed's plan with some steps
//! left out ([`Plan::keep`]).

use std::fmt;
use std::time::Duration;

use model::{SyncFaultKind, SyncMode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::converge::history::{KEYS, Op, REGISTERED, Upstream};

/// How large a plan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Size {
    /// The sync mode (which protocol faults the admin's hook can arm).
    pub(crate) mode: SyncMode,
    /// Gateways in the simulation.
    pub(crate) gateways: u8,
    /// Operations in the history.
    pub(crate) ops: usize,
}

/// A fault, injected at its step's time and healed `lasts` later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// No message passes between the admin and gateway `gateway` (every gateway when
    /// `None`) in the direction `way` until the heal, when TCP's retransmissions deliver
    /// them: nothing is lost inside a connection, but a session may be given up meanwhile.
    Partition {
        /// The gateway cut off, or all of them.
        gateway: Option<u8>,
        /// Which way messages stop.
        way: Way,
    },
    /// The link between the admin and gateway `gateway` gets slow: each message takes up to
    /// `latency_ms` (in order, as TCP delivers them).
    Slow {
        /// The gateway whose link slows down.
        gateway: u8,
        /// The most a message takes, in milliseconds.
        latency_ms: u16,
    },
    /// Gateway `gateway` crashes (its process state is lost) and starts again at the heal.
    CrashGateway {
        /// The gateway.
        gateway: u8,
    },
    /// The admin crashes and starts again at the heal, on the same database; no operation is
    /// sent meanwhile.
    CrashAdmin,
    /// The wall clock every host reads (ids, record dates, `appliedAtUs`, time conditions)
    /// jumps by `seconds`, forward or back, and jumps back at the heal (a bad time source,
    /// then corrected). Monotonic time is not affected, as on a real host.
    ClockJump {
        /// How far, in seconds (negative: back).
        seconds: i32,
    },
    /// The admin's next `count` pushes go wrong as `kind` says (its test-only protocol
    /// fault hook). Websocket: sent twice (`duplicate`), or the session ends where the push
    /// would go (`closeMidPush`). HTTP long polling: a listener answer naming changed groups
    /// names none (`emptyAnswer`), or waits `delay_ms` first (`lateAnswer`).
    Frames {
        /// The fault's kind, one of the mode's.
        kind: SyncFaultKind,
        /// How many pushes.
        count: u8,
        /// `lateAnswer`'s wait, in milliseconds (zero for the others).
        delay_ms: u16,
    },
}

/// The direction a partition stops messages in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    /// Both.
    Both,
    /// From the admin to the gateway only (the gateway's pings arrive, nothing comes back).
    ToGateway,
    /// From the gateway to the admin only.
    ToAdmin,
}

/// What a step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Sends an operation to the admin (when it applies to what the admin acknowledged).
    Op(Op),
    /// Injects a fault, healed `lasts` later.
    Fault {
        /// The fault.
        fault: Fault,
        /// How long it lasts.
        lasts: Duration,
    },
}

/// One step of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Step {
    /// Its index in the seed's whole plan (kept through shrinking, so a replay names it).
    pub(crate) index: usize,
    /// When it happens, from the start of the run.
    pub(crate) at: Duration,
    /// What it does.
    pub(crate) action: Action,
}

/// A seed's steps, in time order; faults never overlap, and no operation falls inside an
/// admin crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The steps.
    pub(crate) steps: Vec<Step>,
}

/// The first operation's time: the gateways have had their first full sync.
const FIRST_OP: Duration = Duration::from_millis(1_500);

impl Plan {
    /// The plan of `seed` for `size`.
    pub(crate) fn generate(seed: u64, size: Size) -> Plan {
        // Apart from the world's generator (seeded with `seed` itself), so a change in how
        // plans are drawn does not move the draws of the admin and the gateways.
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed_91a2_c0de_0001);
        let mut steps = Vec::new();
        let mut at = FIRST_OP;
        // When the fault in progress heals, and whether it is an admin crash.
        let mut fault_until = Duration::ZERO;
        let mut admin_down = false;
        for _ in 0..size.ops {
            at += Duration::from_millis(rng.random_range(20..400));
            if at >= fault_until && rng.random_bool(0.12) {
                let (fault, lasts) = fault(&mut rng, size);
                admin_down = fault == Fault::CrashAdmin;
                fault_until = at + lasts;
                steps.push(Step {
                    index: steps.len(),
                    at,
                    action: Action::Fault { fault, lasts },
                });
            }
            if admin_down && at < fault_until {
                // Operations wait for the admin to be back.
                at = fault_until + Duration::from_millis(rng.random_range(1..200));
            }
            steps.push(Step {
                index: steps.len(),
                at,
                action: Action::Op(op(&mut rng)),
            });
        }
        Plan { steps }
    }

    /// The steps whose indices are in `kept` (a shrunk plan); an error naming the indices
    /// that are not in the plan, and the plan's range.
    pub(crate) fn keep(&self, kept: &[usize]) -> Result<Plan, String> {
        let missing: Vec<String> = kept
            .iter()
            .filter(|&&i| !self.steps.iter().any(|s| s.index == i))
            .map(usize::to_string)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "--keep names step(s) {} that this plan does not have (its steps are 0..={})",
                missing.join(","),
                self.steps.len().saturating_sub(1)
            ));
        }
        Ok(Plan {
            steps: self
                .steps
                .iter()
                .filter(|s| kept.contains(&s.index))
                .copied()
                .collect(),
        })
    }

    /// When the last fault heals (zero without faults).
    pub(crate) fn healed_at(&self) -> Duration {
        self.steps
            .iter()
            .filter_map(|s| match s.action {
                Action::Fault { lasts, .. } => Some(s.at + lasts),
                Action::Op(_) => None,
            })
            .max()
            .unwrap_or_default()
    }

    /// When the last step happens, its heal included.
    pub(crate) fn ends_at(&self) -> Duration {
        let last_op = self.steps.iter().map(|s| s.at).max().unwrap_or_default();
        last_op.max(self.healed_at())
    }
}

/// One random operation on the history's few routes and applications.
fn op(rng: &mut StdRng) -> Op {
    let key = rng.random_range(0..KEYS);
    let upstream = if rng.random_bool(0.5) {
        Upstream::Alpha
    } else {
        Upstream::Beta
    };
    match rng.random_range(0..100) {
        0..35 => Op::Put { key, upstream },
        35..55 => Op::Enable {
            key,
            on: rng.random_bool(0.5),
        },
        55..70 => Op::Delete { key },
        70..80 => Op::DeleteRule { key },
        80..88 => Op::Plugin {
            on: rng.random_bool(0.5),
        },
        _ => Op::Register {
            key: rng.random_range(0..REGISTERED),
            upstream,
        },
    }
}

/// One random fault and how long it lasts: from well under the gateways' silence bound
/// (nothing noticed) to well over it (sessions given up and opened again).
fn fault(rng: &mut StdRng, size: Size) -> (Fault, Duration) {
    let gateway = rng.random_range(0..size.gateways);
    let way = match rng.random_range(0..3) {
        0 => Way::Both,
        1 => Way::ToGateway,
        _ => Way::ToAdmin,
    };
    let fault = match rng.random_range(0..100) {
        0..20 => Fault::Partition {
            gateway: Some(gateway),
            way,
        },
        20..30 => Fault::Partition { gateway: None, way },
        30..45 => Fault::Slow {
            gateway,
            latency_ms: rng.random_range(100..1_500),
        },
        45..65 => Fault::CrashGateway { gateway },
        65..78 => Fault::CrashAdmin,
        78..86 => Fault::ClockJump {
            seconds: if rng.random_bool(0.5) {
                rng.random_range(-3_600..-1)
            } else {
                rng.random_range(1..3_600)
            },
        },
        _ => frames(rng, size.mode),
    };
    (fault, Duration::from_millis(rng.random_range(100..6_000)))
}

/// One of the admin's protocol faults for `mode`'s channel.
fn frames(rng: &mut StdRng, mode: SyncMode) -> Fault {
    let (kind, other) = match mode {
        SyncMode::Http => (SyncFaultKind::EmptyAnswer, SyncFaultKind::LateAnswer),
        _ => (SyncFaultKind::Duplicate, SyncFaultKind::CloseMidPush),
    };
    let kind = if rng.random_bool(0.5) { kind } else { other };
    let count = rng.random_range(1..4);
    let delay_ms = if kind == SyncFaultKind::LateAnswer {
        rng.random_range(10..3_000)
    } else {
        0
    };
    Fault::Frames {
        kind,
        count,
        delay_ms,
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gw = |g: &Option<u8>| g.map_or("every gateway".to_owned(), |g| format!("gw{g}"));
        match self {
            Fault::Partition { gateway, way } => {
                let way = match way {
                    Way::Both => "both ways",
                    Way::ToGateway => "admin to gateway only",
                    Way::ToAdmin => "gateway to admin only",
                };
                write!(f, "partition admin | {} ({way})", gw(gateway))
            }
            Fault::Slow {
                gateway,
                latency_ms,
            } => write!(f, "slow the admin-gw{gateway} link (up to {latency_ms} ms)"),
            Fault::CrashGateway { gateway } => write!(f, "crash gw{gateway}"),
            Fault::CrashAdmin => f.write_str("crash the admin"),
            Fault::ClockJump { seconds } => write!(f, "the wall clock jumps {seconds:+} s"),
            Fault::Frames {
                kind,
                count,
                delay_ms,
            } => {
                write!(f, "{} the admin's next {count} push(es)", kind.name())?;
                if *kind == SyncFaultKind::LateAnswer {
                    write!(f, " by {delay_ms} ms")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.at.as_millis();
        match self.action {
            Action::Op(op) => write!(f, "[{}] {ms} ms: {op}", self.index),
            Action::Fault { fault, lasts } => write!(
                f,
                "[{}] {ms} ms: {fault}, healed at {} ms",
                self.index,
                (self.at + lasts).as_millis()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: Size = Size {
        mode: SyncMode::Websocket,
        gateways: 3,
        ops: 50,
    };

    #[test]
    fn a_seed_makes_one_plan() {
        assert_eq!(Plan::generate(9, SIZE), Plan::generate(9, SIZE));
        assert_ne!(Plan::generate(9, SIZE), Plan::generate(10, SIZE));
    }

    #[test]
    fn faults_do_not_overlap_and_no_operation_falls_in_an_admin_crash() {
        for seed in 0..200 {
            let plan = Plan::generate(seed, SIZE);
            let mut until = Duration::ZERO;
            let mut admin_down = false;
            for step in &plan.steps {
                match step.action {
                    Action::Fault { fault, lasts } => {
                        assert!(step.at >= until, "seed {seed}: {step} overlaps");
                        until = step.at + lasts;
                        admin_down = fault == Fault::CrashAdmin;
                    }
                    Action::Op(_) => assert!(
                        !(admin_down && step.at < until),
                        "seed {seed}: {step} while the admin is down"
                    ),
                }
            }
            assert!(plan.steps.windows(2).all(|w| w[0].at <= w[1].at));
        }
    }

    #[test]
    fn protocol_faults_are_the_modes_own() {
        for mode in [SyncMode::Websocket, SyncMode::Http] {
            let size = Size { mode, ..SIZE };
            let kinds: Vec<SyncFaultKind> = (0..300)
                .flat_map(|seed| Plan::generate(seed, size).steps)
                .filter_map(|s| match s.action {
                    Action::Fault {
                        fault: Fault::Frames { kind, .. },
                        ..
                    } => Some(kind),
                    _ => None,
                })
                .collect();
            assert!(kinds.len() > 10, "{mode}: {kinds:?}");
            assert!(kinds.iter().all(|k| k.mode() == mode), "{mode}: {kinds:?}");
        }
    }

    #[test]
    fn keeping_steps_keeps_their_indices() {
        let plan = Plan::generate(3, SIZE);
        let kept = plan.keep(&[1, 4]).unwrap();
        assert_eq!(
            kept.steps.iter().map(|s| s.index).collect::<Vec<_>>(),
            [1, 4]
        );
    }

    #[test]
    fn keeping_a_step_the_plan_does_not_have_is_an_error_naming_it() {
        let plan = Plan::generate(3, SIZE);
        let last = plan.steps.len() - 1;
        let error = plan.keep(&[1, last + 1, 9_999]).unwrap_err();
        assert!(
            error.contains(&format!("{},9999", last + 1)) && error.contains(&format!("0..={last}")),
            "{error}"
        );
    }
}
