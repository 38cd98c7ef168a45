//! `expectLogs`: each declaration names a service the topology runs, a text to look for, and
//! is not written twice.

use super::Validator;
use crate::scenario::ast::LogRole;

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
