//! Child processes the backends run, and what they share: the watchdog that ties a server
//! to the harness ([`Watched`]), free loopback ports and the race for them
//! ([`free_port`], [`lost_port_race`]), signals ([`signal`]), liveness ([`process_alive`]),
//! finding a program ([`find_on_path`]) and reading a log's end ([`tail`]).
//!
//! Servers that do not watch their stdin (ZooKeeper, etcd, Redis, PostgreSQL) each run under
//! a small `sh` watchdog whose stdin is a pipe the harness holds: when the harness drops the
//! [`Watched`] or dies, the pipe closes and the watchdog kills the server with SIGKILL and
//! reaps it.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::BackendError;

/// How long the watchdog may take to kill and reap the server.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `"$@"` (output to stderr), prints its pid, waits for stdin to end, then kills it.
const WATCHDOG: &str = r#""$@" >&2 </dev/null &
pid=$!
echo "$pid"
cat >/dev/null
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
exit 0"#;

/// How many times a server is started on fresh ports when another process took its port
/// between [`free_port`] and the server's bind.
pub(crate) const PORT_ATTEMPTS: u32 = 3;

/// A free loopback port (bound, then released for the server: another process may take it
/// before the server binds it; see [`lost_port_race`]).
pub(crate) fn free_port() -> Result<u16, BackendError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|source| BackendError::Io {
            what: "picking a free port".into(),
            source,
        })
}

/// Whether a server's log (or docker's answer to a container start) says its port was taken
/// before it could bind it (ZooKeeper's `BindException`, etcd's, Redis's, PostgreSQL's and
/// docker's userland proxy's `bind: address already in use`, or docker's own `port is already
/// allocated`: a port another container publishes through the firewall alone, which no host
/// socket holds, so [`free_port`] can pick it): the harness's port pick lost a race, so
/// starting again on a fresh port is no hidden failure.
pub(crate) fn lost_port_race(log: &str) -> bool {
    let log = log.to_ascii_lowercase();
    log.contains("address already in use") || log.contains("port is already allocated")
}

/// Moves a failed start's log aside (`<log>.<attempt>`, kept for a post-mortem) so that the
/// next attempt's log starts empty.
pub(crate) fn retire_log(log: &Path, attempt: u32) {
    let mut aside = log.as_os_str().to_owned();
    aside.push(format!(".{attempt}"));
    if let Err(e) = std::fs::rename(log, &aside) {
        tracing::warn!(log = %log.display(), "moving a failed start's log aside: {e}");
    }
}

/// The watchdog shell, its stdin and the server's pid (see the module docs): ending it, or
/// dropping the harness's end of its stdin, kills the server.
#[derive(Debug)]
pub(crate) struct Watched {
    watchdog: Child,
    stdin: Option<ChildStdin>,
    /// The server's process id.
    pub(crate) pid: u32,
}

impl Watched {
    /// Runs `program args` under the watchdog in `dir`, its output appended to `log`; `name`
    /// names the server in errors.
    pub(crate) fn spawn(
        name: &str,
        program: &Path,
        args: &[String],
        dir: &Path,
        log: &Path,
    ) -> Result<Watched, BackendError> {
        let io = |what: String| move |source| BackendError::Io { what, source };
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(io(format!("opening {}", log.display())))?;
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("gantry-watchdog")
            .arg(program)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .map_err(io(format!("starting {} under sh", program.display())))?;
        let stdin = watchdog.stdin.take();
        let mut pid_line = String::new();
        let read = watchdog
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut pid_line));
        match (read, pid_line.trim().parse::<u32>()) {
            (Some(Ok(_)), Ok(pid)) => Ok(Watched {
                watchdog,
                stdin,
                pid,
            }),
            _ => {
                let _ = watchdog.kill();
                let _ = watchdog.wait();
                Err(BackendError::NoListenLine {
                    service: name.to_owned(),
                    detail: format!("the watchdog printed {pid_line:?} instead of a pid"),
                })
            }
        }
    }

    /// Ends the server: EOF on the watchdog's stdin makes it kill and reap the server, then
    /// exit. Waits for that up to [`STOP_TIMEOUT`], then kills both. Blocks the thread (async
    /// code ends it on a blocking thread).
    pub(crate) fn end(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            match self.watchdog.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        // The watchdog is stuck: kill both.
        let _ = Command::new("kill")
            .args(["-9", &self.pid.to_string()])
            .status();
        let _ = self.watchdog.kill();
        let _ = self.watchdog.wait();
    }
}

/// Sends `signal` to the process `pid` of `service` (SIGSTOP pauses it, SIGCONT resumes it).
pub(crate) fn signal(
    service: &str,
    pid: u32,
    signal: rustix::process::Signal,
) -> Result<(), BackendError> {
    let what = format!("sending {signal:?} to {service} (pid {pid})");
    let target = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| BackendError::Io {
            what: what.clone(),
            source: std::io::Error::other("not a process id"),
        })?;
    rustix::process::kill_process(target, signal).map_err(|e| BackendError::Io {
        what,
        source: e.into(),
    })
}

/// Whether process `pid` exists and is not a zombie (Linux `/proc`).
pub fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// The last `n` lines of `text`.
pub(crate) fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `program` in the first directory on `PATH` that holds it, if any.
pub(crate) fn find_on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_races_are_told_from_other_start_failures() {
        for lost in [
            "java.net.BindException: Address already in use",
            "2026-12-02 19:33:29.446898 C | etcdmain: listen tcp 127.0.0.1:36415: bind: address already in use",
            "# Warning: Could not create server TCP listening socket 127.0.0.1:36415: bind: Address already in use",
            "Error response from daemon: driver failed programming external connectivity on endpoint porttest (640edea7): Error starting userland proxy: listen tcp4 127.0.0.1:49181: bind: address already in use",
            "failed to start a container: Docker responded with status code 500: driver failed programming external connectivity on endpoint gantry-1caf698844-upstream-gamma (0e75b91c): Bind for 127.0.0.1:32817 failed: port is already allocated",
        ] {
            assert!(lost_port_race(lost), "{lost}");
        }
        for other in [
            "java.io.IOException: No snapshot found",
            "connection refused",
            "",
        ] {
            assert!(!lost_port_race(other), "{other}");
        }
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }
}
