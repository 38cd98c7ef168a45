//! CPU time and memory of a process from `/proc/<pid>/stat` and `/proc/<pid>/status`, the
//! CPU time and context switches of a process tree ([`usage`]), and finding this process's
//! child by name (the admin the fanout bench started).

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
    status_number(text, key)
}

/// The number a `Key:   123` line of `/proc/<pid>/status` starts its value with.
fn status_number(text: &str, key: &str) -> Option<u64> {
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

/// How many file descriptors process `pid` holds open (the entries of `/proc/<pid>/fd`);
/// `None` when it is gone or not ours to read.
pub(crate) fn open_fds(pid: u32) -> Option<u64> {
    let entries = std::fs::read_dir(Path::new("/proc").join(pid.to_string()).join("fd")).ok()?;
    Some(entries.count() as u64)
}

/// This process's own reading.
pub(crate) fn sample_self() -> Option<Sample> {
    sample(std::process::id())
}

/// What a process tree has used so far, every thread of every process counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Usage {
    /// User + system CPU time, µs (clock-tick resolution).
    pub cpu_us: u64,
    /// Context switches, voluntary (the thread blocked: `epoll_wait`, a futex) and not (it
    /// was preempted).
    pub switches: u64,
}

impl Usage {
    /// What was used between `before` and this reading (a process gone meanwhile counts
    /// nothing).
    pub(crate) fn since(self, before: Usage) -> Usage {
        Usage {
            cpu_us: self.cpu_us.saturating_sub(before.cpu_us),
            switches: self.switches.saturating_sub(before.switches),
        }
    }
}

/// What `root` and its descendants (nginx's master and workers under its watchdog) have
/// used; `None` when `root` is gone.
pub(crate) fn usage(root: u32) -> Option<Usage> {
    let table = process_table();
    let mut tree = vec![root];
    let mut i = 0;
    while let Some(&pid) = tree.get(i) {
        tree.extend(
            table
                .iter()
                .filter(|(_, stat)| stat.ppid == pid)
                .map(|(child, _)| *child),
        );
        i += 1;
    }
    let mut total = Usage::default();
    for pid in tree {
        let stat = match table.iter().find(|(p, _)| *p == pid) {
            Some((_, stat)) => stat,
            None if pid == root => return None,
            None => continue,
        };
        total.cpu_us += (stat.utime + stat.stime) * 1_000_000 / ticks_per_second();
        total.switches += switches(pid);
    }
    Some(total)
}

/// Every process's stat.
fn process_table() -> Vec<(u32, Stat)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            Some((pid, parse_stat(&text)?))
        })
        .collect()
}

/// The context switches of every thread of `pid` (each thread's `status` counts its own).
fn switches(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("status")).ok())
        .map(|status| {
            status_number(&status, "voluntary_ctxt_switches").unwrap_or(0)
                + status_number(&status, "nonvoluntary_ctxt_switches").unwrap_or(0)
        })
        .sum()
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
    use std::os::unix::process::CommandExt;

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
    fn a_tree_counts_its_descendants() {
        let me = usage(std::process::id()).expect("this process is readable");
        assert!(me.switches > 0, "{me:?}");
        // A shell that only waits for its busy child: the CPU time is all the child's.
        let mut wrapper = std::process::Command::new("sh")
            .arg("-c")
            .arg("sh -c 'i=0; while [ $i -lt 5000000 ]; do i=$((i+1)); done' & wait")
            .process_group(0)
            .spawn()
            .expect("sh runs");
        let root = wrapper.id();
        let start = usage(root).expect("the wrapper runs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut used = Usage::default();
        while std::time::Instant::now() < deadline && used.cpu_us < 50_000 {
            match usage(root) {
                Some(now) => used = now.since(start),
                None => break,
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // The whole group, the busy child with it.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{root}")])
            .status();
        let _ = wrapper.wait();
        assert!(
            used.cpu_us >= 50_000,
            "the busy child's CPU time was not counted in its parent's tree: {used:?}"
        );
        assert_eq!(usage(u32::MAX), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let s = sample_self().expect("/proc/self is readable");
        assert!(s.rss_kib > 0 && s.rss_peak_kib >= s.rss_kib, "{s:?}");
    }
}
