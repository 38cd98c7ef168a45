//! Known admin bugs the reference admin can reproduce on request (`--emulate-bug`), so that
//! the harness's named regressions (cases/regressions/) can show that their case fails when
//! the bug is back. Tests only, never real traffic.

/// A known admin-side config-sync bug (`admin --emulate-bug NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EmulatedBug {
    /// The admin never notices commits other admins make to the database they share: only
    /// the gateways synced with the admin a change was made on hear of it (ShenYu #3900,
    /// #3748). Forces `--peer-watch-ms 0`, leaving the once-a-minute comparison.
    NoPeerWatch,
    /// The long-polling listener judges a gateway's group by `lastModifyTime` alone, as
    /// ShenYu's admin does first: stale only when the admin's stamp is newer than the
    /// gateway's; and it stamps groups with its clock as it is. When the clock steps back
    /// between two changes, the second is stamped older than what the gateway holds and
    /// the gateway is never told of it (no tracker issue: the `clock-skew` regression).
    CompareLastModifyTime,
    /// A selector update is published to the gateways before it is written, so a write the
    /// database then refuses (a full disk) reaches the gateways all the same: half-written,
    /// the gateways hold what the database does not. Forces `--peer-watch-ms 0`, as an admin
    /// that compares nothing with its database (ShenYu's): the watch would take the update
    /// back within tens of milliseconds, and the once-a-minute comparison remains (no tracker
    /// issue: the `publish-before-commit` regression).
    PublishBeforeCommit,
}

impl EmulatedBug {
    /// The name `--emulate-bug` takes (kebab-case).
    pub fn name(self) -> &'static str {
        match self {
            EmulatedBug::NoPeerWatch => "no-peer-watch",
            EmulatedBug::CompareLastModifyTime => "compare-last-modify-time",
            EmulatedBug::PublishBeforeCommit => "publish-before-commit",
        }
    }
}

impl std::fmt::Display for EmulatedBug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    /// `name` is the switch's spelling of every bug.
    #[test]
    fn every_name_is_the_flags() {
        for bug in EmulatedBug::value_variants() {
            let value = bug.to_possible_value().unwrap();
            assert_eq!(value.get_name(), bug.name());
            assert_eq!(EmulatedBug::from_str(bug.name(), false), Ok(*bug));
        }
    }
}
