//! `expectLogs`: each declaration names a service the topology runs, a text to look for and
//! modes the case runs in, and is not written twice. `resources`: limits a container can
//! take.

use super::Validator;
use crate::BackendKind;
use crate::scenario::ast::{LogRole, MIN_MEMORY, RoleLimits};

impl Validator<'_> {
    pub(super) fn expect_logs(&mut self) {
        let s = self.s;
        for (i, e) in s.expect_logs.iter().enumerate() {
            let at = format!("expectLogs[{i}]");
            if e.contains.trim().is_empty() {
                self.report(
                    format!("{at}.contains"),
                    "must not be empty (it would declare every line of its level)",
                );
            }
            let count = match e.service.role {
                LogRole::Admin => s.topology.admins,
                LogRole::Gateway => s.topology.gateways,
            };
            if let Some(index) = e.service.index
                && index >= count
            {
                self.report(
                    format!("{at}.service"),
                    format!(
                        "`{}`: the topology runs {count} {}(s), indexed from 0",
                        e.service,
                        e.service.role.name()
                    ),
                );
            }
            for (m, mode) in e.modes.iter().enumerate() {
                if !s.modes.contains(mode) {
                    self.report(
                        format!("{at}.modes[{m}]"),
                        format!("`{mode}`: the case does not run in it"),
                    );
                }
            }
            if s.expect_logs[..i].contains(e) {
                self.report(at, "declared twice");
            }
        }
    }
}

impl Validator<'_> {
    /// `resources` limits the containers of the docker and swarm backends only, by at least
    /// docker's minimum.
    pub(super) fn resources(&mut self) {
        let s = self.s;
        if s.resources.is_empty() {
            return;
        }
        if s.backends.contains(&BackendKind::Host) {
            self.report(
                "resources",
                "a memory limit is a container's: give `backends: [docker]` or `[docker, \
                 swarm]` (the host backend's processes take no limit here)",
            );
        }
        let roles = [
            ("gateway", s.resources.gateway),
            ("admin", s.resources.admin),
        ];
        for (role, limits) in roles {
            if let Some(RoleLimits { memory }) = limits
                && memory.0 < MIN_MEMORY
            {
                self.report(
                    format!("resources.{role}.memory"),
                    format!("{memory} is below docker's minimum of 6MiB"),
                );
            }
        }
    }
}
