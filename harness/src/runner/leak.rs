//! `--run-mode leak`: the RSS and open fds of every admin and gateway read after each run of
//! a case on one topology, and judged by [`crate::run_mode::judge_growth`].

use crate::bench::procstat;
use crate::run_mode::{ProcessReading, judge_growth};
use crate::topology::Topology;

/// Every admin's and gateway's readings, one per run, by process name (`admin[0]`,
/// `gateway[1]`).
#[derive(Debug, Default)]
pub(super) struct Readings {
    processes: Vec<(String, Vec<ProcessReading>)>,
}

impl Readings {
    /// Reads every admin and gateway of `topo` that has a pid here (host backend); one that
    /// has none (containers) or is gone is not read.
    pub(super) fn read(&mut self, topo: &Topology) {
        let services = (topo.admins().iter().enumerate())
            .map(|(i, s)| (format!("admin[{i}]"), s))
            .chain((topo.gateways().iter().enumerate()).map(|(i, s)| (format!("gateway[{i}]"), s)));
        for (name, service) in services {
            let Some(pid) = service.pid() else { continue };
            let (Some(sample), Some(fds)) = (procstat::sample(pid), procstat::open_fds(pid)) else {
                continue;
            };
            let reading = ProcessReading {
                rss_kib: sample.rss_kib,
                fds,
            };
            tracing::info!(process = %name, pid, rss_kib = reading.rss_kib, fds, "leak reading");
            match self.processes.iter_mut().find(|(n, _)| *n == name) {
                Some((_, series)) => series.push(reading),
                None => self.processes.push((name, vec![reading])),
            }
        }
    }

    /// Every process's verdict: `Err` with one line per process that grew beyond the bound,
    /// or saying that nothing could be read (a backend without pids here).
    pub(super) fn judge(&self) -> Result<(), String> {
        if self.processes.is_empty() {
            return Err(
                "no admin or gateway process could be read (`--run-mode leak` reads \
                        /proc: host backend only)"
                    .to_owned(),
            );
        }
        let grew: Vec<String> = (self.processes.iter())
            .filter_map(|(name, series)| judge_growth(name, series).err())
            .collect();
        match grew.is_empty() {
            true => Ok(()),
            false => Err(grew.join("\n")),
        }
    }
}
