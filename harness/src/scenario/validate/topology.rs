//! The topology: counts in range, late gateways, what runs where.

use super::*;

impl<'s> Validator<'s> {
    /// `topology`: counts in range, late gateways exist and leave one for setup, and any
    /// topology but one admin on SQLite and one gateway runs on the host backend only.
    pub(super) fn topology(&mut self) {
        let t = &self.s.topology;
        if !(1..=TopologySpec::MAX_ADMINS).contains(&t.admins) {
            self.report(
                "topology.admins",
                format!("must be 1 to {}", TopologySpec::MAX_ADMINS),
            );
        }
        if !(1..=TopologySpec::MAX_GATEWAYS).contains(&t.gateways) {
            self.report(
                "topology.gateways",
                format!("must be 1 to {}", TopologySpec::MAX_GATEWAYS),
            );
        }
        let mut seen = HashSet::new();
        for (i, &late) in t.late.iter().enumerate() {
            if late >= t.gateways {
                self.report(
                    format!("topology.late[{i}]"),
                    format!(
                        "gateway[{late}] does not exist: the topology runs {} gateway(s), \
                         gateway[0] to gateway[{}]",
                        t.gateways,
                        t.gateways.saturating_sub(1)
                    ),
                );
            } else if !seen.insert(late) {
                self.report(
                    format!("topology.late[{i}]"),
                    format!("gateway[{late}] twice"),
                );
            }
        }
        if t.gateways > 0 && seen.len() >= usize::from(t.gateways) {
            self.report(
                "topology.late",
                "every gateway is late, but setup and its wait need one: leave one out",
            );
        }
        if !t.is_default() && self.s.backends.contains(&crate::BackendKind::Docker) {
            self.report(
                "topology",
                "several admins or gateways, late gateways and PostgreSQL storage run on the \
                 host and swarm backends only so far: add `backends: [host]` or \
                 `backends: [host, swarm]`",
            );
        }
        let swarm = self.s.backends.contains(&crate::BackendKind::Swarm);
        if swarm && !t.late.is_empty() {
            self.report(
                "topology.late",
                "late gateways run on the host backend only so far: leave `swarm` out of \
                 `backends`",
            );
        }
        if swarm && t.admins > 1 && t.storage != crate::scenario::ast::Storage::Postgres {
            self.report(
                "topology.storage",
                "on the swarm backend several admins are one replicated service, whose tasks \
                 share no SQLite file: use `storage: postgres` or leave `swarm` out of \
                 `backends`",
            );
        }
    }

    /// The processes as they are before the first step: late gateways stopped.
    pub(super) fn initial_processes(&self) -> Processes {
        let mut processes = Processes::default();
        for &late in &self.s.topology.late {
            processes
                .0
                .insert(Target::Gateway(Some(late)), ProcessState::Stopped);
        }
        processes
    }

    /// When none of the topology's `count` admins or gateways (`kind`) runs: `the admin is
    /// stopped` (one of them), `no admin is running` (several), and the pronoun for "start or
    /// resume" it.
    pub(super) fn none_runs(
        &self,
        processes: &Processes,
        count: u8,
        kind: fn(Option<u8>) -> Target,
    ) -> Option<(String, &'static str)> {
        let mut states = (0..count).map(|i| processes.state(kind(Some(i))));
        if states.any(|state| state == ProcessState::Running) {
            return None;
        }
        let name = kind(None);
        Some(match count {
            1 => (
                format!("the {name} is {}", processes.state(kind(None))),
                "it",
            ),
            _ => (format!("no {name} is running"), "one"),
        })
    }
}
