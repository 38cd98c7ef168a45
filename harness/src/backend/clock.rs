//! A host process's wall clock, stepped by a case's `clock` changes: the process runs under
//! Debian's libfaketime (`LD_PRELOAD`), which reads the offset from a file of its own on
//! every wall-clock read (`FAKETIME_NO_CACHE=1`: a step shows on the next read; measured
//! 7 µs a read instead of 0.2 µs, wall-clock reads only) and leaves the monotonic clock
//! alone (`FAKETIME_DONT_FAKE_MONOTONIC=1`: tokio's timers and timeouts run on).
//!
//! Why not a time namespace: `unshare --time` offsets `CLOCK_MONOTONIC` and
//! `CLOCK_BOOTTIME` only; `CLOCK_REALTIME`, which `SystemTime::now` reads, is the same in
//! every namespace.

use crate::error::BackendError;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};

/// Where Debian's `faketime` package (`libfaketime`) puts the library, per architecture.
const LIBRARIES: [&str; 3] = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
];

/// One process's faked wall clock: the offset file libfaketime reads, and the offset in it.
#[derive(Debug)]
pub(crate) struct FakeClock {
    library: PathBuf,
    file: PathBuf,
    /// Seconds ahead of the real clock (negative: behind).
    offset: AtomicI64,
}

impl FakeClock {
    /// A clock at offset 0 kept in `file`; fails when libfaketime is not installed.
    pub(crate) fn create(file: PathBuf) -> Result<FakeClock, BackendError> {
        let library = LIBRARIES
            .iter()
            .map(Path::new)
            .find(|p| p.is_file())
            .ok_or_else(|| BackendError::FakeClockUnavailable {
                detail: format!(
                    "libfaketime is not installed (looked for {}): `apt-get install faketime`",
                    LIBRARIES.join(", ")
                ),
            })?
            .to_owned();
        let clock = FakeClock {
            library,
            file,
            offset: AtomicI64::new(0),
        };
        clock.write(0)?;
        Ok(clock)
    }

    /// The variables that start a process on this clock.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        [
            ("LD_PRELOAD", self.library.display().to_string()),
            ("FAKETIME_TIMESTAMP_FILE", self.file.display().to_string()),
            ("FAKETIME_NO_CACHE", "1".to_owned()),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// Steps the clock by `seconds` (negative: back) from where it is; answers the new
    /// offset.
    pub(crate) fn step(&self, seconds: i64) -> Result<i64, BackendError> {
        let offset = self.offset.load(Ordering::SeqCst) + seconds;
        self.write(offset)?;
        self.offset.store(offset, Ordering::SeqCst);
        Ok(offset)
    }

    /// Writes `offset` (seconds) as libfaketime reads it: `+60`, `-60`.
    fn write(&self, offset: i64) -> Result<(), BackendError> {
        std::fs::write(&self.file, format!("{offset:+}\n")).map_err(|source| BackendError::Io {
            what: format!("writing the clock offset to {}", self.file.display()),
            source,
        })
    }

    /// Whether process `pid` (`service`) runs under libfaketime: the library is mapped in
    /// its memory (`/proc/<pid>/maps`), so it reads this clock's file on every wall-clock
    /// read. (Its `Date` header cannot tell: hyper refreshes its cached date only once the
    /// clock passes the next second it expected, so after a step back the header stays on
    /// the time before the step for as long as the step.)
    pub(crate) fn runs_in(&self, service: &str, pid: u32) -> Result<(), BackendError> {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|source| {
            BackendError::Io {
                what: format!("reading the memory map of {service} (pid {pid})"),
                source,
            }
        })?;
        let name = self
            .library
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        if maps.contains(name.as_ref()) {
            return Ok(());
        }
        Err(BackendError::ClockNotStepped {
            service: service.to_owned(),
            detail: format!(
                "{} is not loaded in its process (pid {pid})",
                self.library.display()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use super::*;

    /// `t` in whole seconds since the Unix epoch.
    fn secs(t: SystemTime) -> i64 {
        i64::try_from(t.duration_since(UNIX_EPOCH).unwrap().as_secs()).unwrap()
    }

    /// Skips (with a note) where libfaketime is not installed.
    fn clock(dir: &Path) -> Option<FakeClock> {
        match FakeClock::create(dir.join("clock")) {
            Ok(clock) => Some(clock),
            Err(e) => {
                eprintln!("skipped: {e}");
                None
            }
        }
    }

    #[test]
    fn steps_add_up_in_the_file_libfaketime_reads() {
        let dir = tempfile::tempdir().unwrap();
        let Some(clock) = clock(dir.path()) else {
            return;
        };
        let read = || std::fs::read_to_string(dir.path().join("clock")).unwrap();
        assert_eq!(read(), "+0\n");
        assert_eq!(clock.step(-60).unwrap(), -60);
        assert_eq!(read(), "-60\n");
        assert_eq!(clock.step(3600).unwrap(), 3540);
        assert_eq!(read(), "+3540\n");
    }

    /// A program started with the clock's variables reads the stepped wall clock: `date`
    /// answers 3540 s ahead after the steps above, and the real time with none; the process
    /// is seen running under the library.
    #[test]
    fn a_process_on_the_clock_reads_it_stepped() {
        let dir = tempfile::tempdir().unwrap();
        let Some(clock) = clock(dir.path()) else {
            return;
        };
        let date = |clock: &FakeClock| -> i64 {
            let out = std::process::Command::new("date")
                .arg("+%s")
                .envs(clock.env())
                .output()
                .unwrap();
            String::from_utf8(out.stdout)
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let now = || secs(SystemTime::now());
        assert!((date(&clock) - now()).abs() <= 1);
        clock.step(-60).unwrap();
        assert!((date(&clock) - now() + 60).abs() <= 1);
        clock.step(3600).unwrap();
        assert!((date(&clock) - now() - 3540).abs() <= 1);
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .envs(clock.env())
            .spawn()
            .unwrap();
        let mut plain = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        // The loader maps the library before `sleep` runs; wait for the exec to be done.
        while clock.runs_in("sleep", sleeper.id()).is_err() {
            assert!(std::time::Instant::now() < deadline, "never mapped");
            std::thread::yield_now();
        }
        let e = clock.runs_in("plain", plain.id()).unwrap_err().to_string();
        assert!(
            e.contains("plain's clock did not step: ") && e.contains("is not loaded"),
            "{e}"
        );
        for child in [&mut sleeper, &mut plain] {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}
