//! CPU time and memory of a process from `/proc/<pid>/stat` and `/proc/<pid>/status`, and
//! finding this process's child by name (the admin the fanout bench started).

use std::path::Path;

/// One reading of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub(crate) struct Sample {
    /// User + system CPU time so far, ms.
    pub cpu_ms: u64,
    /// Resident set size, KiB (`VmRSS`).
    pub rss_kib: u64,
    /// Peak resident set size, KiB (`VmHWM`).
    pub rss_peak_kib: u64,
}

/// The fields of `/proc/<pid>/stat` the benches use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stat {
    /// `comm`, the executable name (at most 15 bytes).
    pub comm: String,
    /// Parent pid.
    pub ppid: u32,
    /// User time, clock ticks.
    pub utime: u64,
    /// System time, clock ticks.
    pub stime: u64,
}

/// Parses a `/proc/<pid>/stat` line. `comm` is in parentheses and may hold spaces and
/// parentheses itself, so the fields are counted from the last `)`.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    // After `)`: state(3) ppid(4) pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    // utime(14) stime(15).
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(Stat {
        comm,
        ppid: u32::try_from(field(4)?).ok()?,
        utime: field(14)?,
        stime: field(15)?,
    })
}

/// A `Key:   123 kB` value of `/proc/<pid>/status` (or /proc/meminfo), in KiB.
pub(crate) fn status_kib(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k.trim() != key {
            return None;
        }
        v.split_whitespace().next()?.parse().ok()
    })
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`).
fn ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second().max(1)
}

/// Reads process `pid`; `None` when it is gone.
pub(crate) fn sample(pid: u32) -> Option<Sample> {
    let dir = Path::new("/proc").join(pid.to_string());
    let stat = parse_stat(&std::fs::read_to_string(dir.join("stat")).ok()?)?;
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    Some(Sample {
        cpu_ms: (stat.utime + stat.stime) * 1000 / ticks_per_second(),
        rss_kib: status_kib(&status, "VmRSS").unwrap_or(0),
        rss_peak_kib: status_kib(&status, "VmHWM").unwrap_or(0),
    })
}

/// This process's own reading.
pub(crate) fn sample_self() -> Option<Sample> {
    sample(std::process::id())
}

/// The pids of this process's children whose `comm` is `name` (e.g. `gantry-admin`).
pub(crate) fn children_named(name: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|t| parse_stat(&t))
                .is_some_and(|s| s.ppid == me && s.comm == name)
        })
        .collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let line = "4242 (gantry (x) admin) S 77 4242 4242 0 -1 4194560 2893 0 0 0 \
                    150 37 0 0 20 0 9 0 123456 1234567 890 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                comm: "gantry (x) admin".into(),
                ppid: 77,
                utime: 150,
                stime: 37,
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn status_values_in_kib() {
        let status = "Name:\tgantry-admin\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n";
        assert_eq!(status_kib(status, "VmRSS"), Some(10240));
        assert_eq!(status_kib(status, "VmHWM"), Some(20480));
        assert_eq!(status_kib(status, "VmSwap"), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let s = sample_self().expect("/proc/self is readable");
        assert!(s.rss_kib > 0 && s.rss_peak_kib >= s.rss_kib, "{s:?}");
    }
}
