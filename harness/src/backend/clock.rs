//! A host process's wall clock, stepped by a case's `clock` changes: the process runs under
//! Debian's libfaketime (`LD_PRELOAD`), which reads the offset from a file of its own on
//! every wall-clock read (`FAKETIME_NO_CACHE=1`: a step shows on the next read; measured
//! 7 µs a read instead of 0.2 µs, wall-clock reads only) and leaves the monotonic clock
//! alone (`FAKETIME_DONT_FAKE_MONOTONIC=1`: tokio's timers and timeouts run on).
//!
//! Why not a time namespace: `unshare --time` offsets `CLOCK_MONOTONIC` and
//! `CLOCK_BOOTTIME` only; `CLOCK_REALTIME`, which `SystemTime::now` reads, is the same in
//! every namespace.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::BackendError;

/// Where Debian's `faketime` package (`libfaketime`) puts the library, per architecture.
const LIBRARIES: [&str; 3] = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
];

/// How far the time a process answers with (its `Date` header, whole seconds) may be from
/// the harness's clock plus the offset: the header's second, and a second of slack.
const TOLERANCE: Duration = Duration::from_secs(2);

/// How long a step may take to show in the process's answers.
const SHOW_TIMEOUT: Duration = Duration::from_secs(5);

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

    /// The wall-clock time the process should read now.
    pub(crate) fn expected_now(&self) -> SystemTime {
        let offset = self.offset.load(Ordering::SeqCst);
        let by = Duration::from_secs(offset.unsigned_abs());
        if offset < 0 {
            SystemTime::now() - by
        } else {
            SystemTime::now() + by
        }
    }

    /// Writes `offset` (seconds) as libfaketime reads it: `+60`, `-60`.
    fn write(&self, offset: i64) -> Result<(), BackendError> {
        std::fs::write(&self.file, format!("{offset:+}\n")).map_err(|source| BackendError::Io {
            what: format!("writing the clock offset to {}", self.file.display()),
            source,
        })
    }

    /// Waits until `service`'s answers at `url` carry a `Date` within [`TOLERANCE`] of the
    /// time it should read: the step took effect in the process.
    pub(crate) async fn shows_in(&self, service: &str, url: &str) -> Result<(), BackendError> {
        let http = crate::client::http();
        let url = format!("{url}/actuator/health");
        let deadline = tokio::time::Instant::now() + SHOW_TIMEOUT;
        let mut interval = tokio::time::interval(Duration::from_millis(50));
        loop {
            interval.tick().await;
            let last = match http.get(&url).send().await {
                Ok(answer) => match answer.headers().get(http::header::DATE) {
                    Some(date) => {
                        let text = date.to_str().unwrap_or_default();
                        match chrono::DateTime::parse_from_rfc2822(text) {
                            Ok(read) => {
                                let off = read.timestamp().abs_diff(secs(self.expected_now()));
                                if off <= TOLERANCE.as_secs() {
                                    return Ok(());
                                }
                                format!("its Date header reads {text}, {off}s from what it should")
                            }
                            Err(e) => format!("its Date header `{text}` does not parse: {e}"),
                        }
                    }
                    None => "its answer carries no Date header".to_owned(),
                },
                Err(e) => format!("no answer: {e}"),
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(BackendError::ClockNotStepped {
                    service: service.to_owned(),
                    detail: format!(
                        "after {}s, {last} (is it running under libfaketime?)",
                        SHOW_TIMEOUT.as_secs()
                    ),
                });
            }
        }
    }
}

/// `t` in whole seconds since the Unix epoch.
fn secs(t: SystemTime) -> i64 {
    i64::try_from(t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let ahead = secs(clock.expected_now()).abs_diff(secs(SystemTime::now()));
        assert!((3539..=3541).contains(&ahead), "{ahead}");
    }

    /// A program started with the clock's variables reads the stepped wall clock: `date`
    /// answers 3540 s ahead after the steps above, and the real time with none.
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
            String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
        };
        let now = || secs(SystemTime::now());
        assert!((date(&clock) - now()).abs() <= 1);
        clock.step(-60).unwrap();
        assert!((date(&clock) - now() + 60).abs() <= 1);
        clock.step(3600).unwrap();
        assert!((date(&clock) - now() - 3540).abs() <= 1);
    }
}
