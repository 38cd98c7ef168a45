//! Run modes (`gantry run --run-mode`): one more way to run every case of a run, on top of its
//! sync mode and backend. `slice[:MS]` puts every link of the topology through a slicer that
//! writes one byte at a time, 1 ms (or `MS`) apart;
//! `restart` restarts the gateways between every two steps; `leak:N` runs each case N times
//! on one topology and judges the growth of the admin's and gateways' RSS and open fds
//! ([`judge_growth`]); `repeat:N` runs each case N times and fails when any run fails.

use std::fmt;
use std::str::FromStr;

/// How many runs `leak` makes when the value names none.
pub(crate) const DEFAULT_LEAK_RUNS: u32 = 5;

/// The fewest runs `leak:N` accepts: a warm-up run and three to fit a slope to.
pub(crate) const MIN_LEAK_RUNS: u32 = 4;

/// The most a process's RSS may grow per run of a case under `leak`, KiB (least-squares slope
/// over the runs after the warm-up run).
pub(crate) const RSS_SLOPE_KIB: f64 = 1024.0;

/// The most a process's open file descriptors may grow per run under `leak` (least-squares
/// slope over the runs after the warm-up run): one descriptor per run. The gateway's idle
/// pooled upstream connections come and go between runs (balance cases over 4 runs: 52, 57,
/// 54, 55, a slope of 0.6); a descriptor left behind by every request is far steeper.
pub(crate) const FD_SLOPE: f64 = 1.0;

/// The pause after each byte under `slice`, ms: APISIX's etcproxy, which writes every TCP
/// packet as single bytes 1 ms apart.
pub(crate) const SLICE_EVERY_MS: u32 = 1;

/// A run mode: `slice[:MS]`, `restart`, `leak[:N]` or `repeat:N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunMode {
    /// Every link of the topology through a slicer that writes every byte as its own TCP
    /// segment, `every_ms` apart (`slice`: 1 ms, APISIX's etcproxy pace; `slice:0`: unpaced);
    /// every case must pass, its time bounds stretched as [`RunMode::stretch`] says.
    Slice {
        /// The pause after each byte, ms.
        every_ms: u32,
    },
    /// Every running gateway restarted between every two steps (and between setup's checks
    /// and the first step), then waited for until its digest equals the admin's.
    Restart,
    /// Each case run `runs` times on one topology; the RSS and open fds of the admins and
    /// gateways must not grow faster than [`RSS_SLOPE_KIB`] and [`FD_SLOPE`] per run.
    Leak {
        /// How many runs (at least [`MIN_LEAK_RUNS`]).
        runs: u32,
    },
    /// Each case run `runs` times, each on a fresh topology; any failed run fails the case.
    Repeat {
        /// How many runs (at least 1).
        runs: u32,
    },
}

impl RunMode {
    /// The mode's name without its count: what a scenario's `runModes` opt-out names.
    pub fn name(self) -> &'static str {
        match self {
            RunMode::Slice { .. } => "slice",
            RunMode::Restart => "restart",
            RunMode::Leak { .. } => "leak",
            RunMode::Repeat { .. } => "repeat",
        }
    }

    /// How many times as long a case's time bounds are under this mode (its waits' timeouts
    /// and its steps' `converge` bounds): 1, but `1 + 3 × every_ms` under a paced `slice`.
    /// Measured at 1 ms a byte in the four sync modes, the slowest step took 3.3 times its
    /// bound (`starve` in http: 6.7 s of 2 s, of which the wait's three probes to a gateway
    /// that runs 20 ms of every 400 ms take over 3 s; a full resync of the default plugins
    /// crosses the sync link in about 5 s).
    pub fn stretch(self) -> u32 {
        match self {
            RunMode::Slice { every_ms } => every_ms.saturating_mul(3).saturating_add(1),
            _ => 1,
        }
    }

    /// How many times each case runs.
    pub fn runs(self) -> u32 {
        match self {
            RunMode::Slice { .. } | RunMode::Restart => 1,
            RunMode::Leak { runs } | RunMode::Repeat { runs } => runs,
        }
    }
}

impl fmt::Display for RunMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunMode::Slice {
                every_ms: SLICE_EVERY_MS,
            }
            | RunMode::Restart => f.write_str(self.name()),
            RunMode::Slice { every_ms } => write!(f, "slice:{every_ms}"),
            RunMode::Leak { runs } | RunMode::Repeat { runs } => {
                write!(f, "{}:{runs}", self.name())
            }
        }
    }
}

impl FromStr for RunMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (name, count) = match s.split_once(':') {
            Some((name, count)) => (name, Some(count)),
            None => (s, None),
        };
        let after = count;
        let count = |min: u32| -> Result<Option<u32>, String> {
            let Some(count) = count else { return Ok(None) };
            match count.parse::<u32>() {
                Ok(n) if n >= min => Ok(Some(n)),
                _ => Err(format!(
                    "`{s}`: the count after `{name}:` must be a whole number of at least {min}"
                )),
            }
        };
        match name {
            "restart" if count(0)?.is_some() => Err(format!("`{s}`: `{name}` takes no count")),
            "slice" => match after.map(str::parse::<u32>) {
                None => Ok(RunMode::Slice {
                    every_ms: SLICE_EVERY_MS,
                }),
                Some(Ok(every_ms)) => Ok(RunMode::Slice { every_ms }),
                Some(Err(_)) => Err(format!(
                    "`{s}`: the number after `slice:` is the pause after each byte, whole ms"
                )),
            },
            "restart" => Ok(RunMode::Restart),
            "leak" => Ok(RunMode::Leak {
                runs: count(MIN_LEAK_RUNS)?.unwrap_or(DEFAULT_LEAK_RUNS),
            }),
            "repeat" => match count(1)? {
                Some(runs) => Ok(RunMode::Repeat { runs }),
                None => Err(format!("`{s}`: say how many runs: `repeat:N`")),
            },
            _ => Err(format!(
                "unknown run mode `{s}` (expected slice[:MS], restart, leak[:N] or repeat:N)"
            )),
        }
    }
}

/// One reading of a process after a run of a case under `leak`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcessReading {
    /// Resident set size, KiB (`VmRSS`).
    pub(crate) rss_kib: u64,
    /// Open file descriptors.
    pub(crate) fds: u64,
}

/// The least-squares slope of `ys` over their indexes, per index; 0 with fewer than two.
pub(crate) fn slope(ys: &[f64]) -> f64 {
    let n = ys.len() as f64;
    if ys.len() < 2 {
        return 0.0;
    }
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = ys.iter().sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let dx = i as f64 - mean_x;
        num += dx * (y - mean_y);
        den += dx * dx;
    }
    num / den
}

/// Whether `ys` (the readings after the warm-up run) grow like a leak: faster than `bound`
/// per run (least-squares slope), **and** as fast over the later half of the runs, **and**
/// still growing at the end, the last run above every earlier one by more than the bound. A
/// pool or cache that fills over the first runs and then stays (the gateway's fds 51, 57, 56,
/// 57 or 61, 72, 73; the admin's RSS 49.9, 52.0, 52.0 MiB) has a steep slope but makes no new
/// high beyond it, and one that levels off and then takes one more connection (balance_random's
/// fds 64, 69, 74, 73, 73, 74, 74, 73, 77) is flat over its later half; a leak grows all along.
/// With few runs the later half is short, so a pool that fills late can still look like a
/// leak: more runs tell them apart (`leak:10`).
fn leaks(ys: &[f64], bound: f64) -> Option<f64> {
    let (last, earlier) = ys.split_last()?;
    let high = earlier.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let rate = slope(ys);
    let later = slope(&ys[ys.len() / 2..]);
    (rate > bound && later > bound && *last > high + bound).then_some(rate)
}

/// The verdict of `leak` on one process's readings, one per run: `Err` naming what grew
/// faster than its bound ([`RSS_SLOPE_KIB`], [`FD_SLOPE`] per run) and was still growing in
/// the last run ([`leaks`]) over the runs after the first (a warm-up run: caches and pools
/// fill), with the readings.
pub(crate) fn judge_growth(process: &str, readings: &[ProcessReading]) -> Result<(), String> {
    let after_warm_up = readings.get(1..).unwrap_or_default();
    let rss: Vec<f64> = after_warm_up.iter().map(|r| r.rss_kib as f64).collect();
    let fds: Vec<f64> = after_warm_up.iter().map(|r| r.fds as f64).collect();
    let mut grew = Vec::new();
    if let Some(rss_slope) = leaks(&rss, RSS_SLOPE_KIB) {
        grew.push(format!(
            "RSS grows {rss_slope:.0} KiB/run (bound {RSS_SLOPE_KIB:.0} KiB/run)"
        ));
    }
    if let Some(fd_slope) = leaks(&fds, FD_SLOPE) {
        grew.push(format!(
            "open fds grow {fd_slope:.2}/run (bound {FD_SLOPE}/run)"
        ));
    }
    if grew.is_empty() {
        return Ok(());
    }
    let list = |f: fn(&ProcessReading) -> u64| {
        (readings.iter().map(|r| f(r).to_string()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(format!(
        "{process} leaks over {} runs after a warm-up run: {}; RSS KiB by run: [{}], open fds by run: [{}]",
        after_warm_up.len(),
        grew.join(", "),
        list(|r| r.rss_kib),
        list(|r| r.fds),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_and_print_back() {
        for (text, mode) in [
            ("slice", RunMode::Slice { every_ms: 1 }),
            ("slice:0", RunMode::Slice { every_ms: 0 }),
            ("slice:5", RunMode::Slice { every_ms: 5 }),
            ("restart", RunMode::Restart),
            (
                "leak",
                RunMode::Leak {
                    runs: DEFAULT_LEAK_RUNS,
                },
            ),
            ("leak:8", RunMode::Leak { runs: 8 }),
            ("repeat:3", RunMode::Repeat { runs: 3 }),
        ] {
            assert_eq!(text.parse::<RunMode>(), Ok(mode), "{text}");
        }
        assert_eq!(RunMode::Leak { runs: 5 }.to_string(), "leak:5");
        assert_eq!(RunMode::Repeat { runs: 2 }.to_string(), "repeat:2");
        assert_eq!(RunMode::Restart.to_string(), "restart");
        assert_eq!(RunMode::Slice { every_ms: 1 }.to_string(), "slice");
        assert_eq!(RunMode::Slice { every_ms: 0 }.to_string(), "slice:0");
    }

    #[test]
    fn only_a_paced_slice_stretches_and_never_overflows() {
        let slice = |every_ms| RunMode::Slice { every_ms }.stretch();
        assert_eq!(slice(1), 4);
        assert_eq!(slice(5), 16);
        assert_eq!(slice(0), 1);
        assert_eq!(slice(u32::MAX), u32::MAX);
        assert_eq!(RunMode::Restart.stretch(), 1);
        assert_eq!(RunMode::Leak { runs: 5 }.stretch(), 1);
        assert_eq!(RunMode::Repeat { runs: 2 }.stretch(), 1);
    }

    #[test]
    fn bad_values_say_what_is_expected() {
        let err = |s: &str| s.parse::<RunMode>().unwrap_err();
        assert_eq!(
            err("soak"),
            "unknown run mode `soak` (expected slice[:MS], restart, leak[:N] or repeat:N)"
        );
        assert_eq!(
            err("slice:1ms"),
            "`slice:1ms`: the number after `slice:` is the pause after each byte, whole ms"
        );
        assert_eq!(err("repeat"), "`repeat`: say how many runs: `repeat:N`");
        assert_eq!(
            err("repeat:0"),
            "`repeat:0`: the count after `repeat:` must be a whole number of at least 1"
        );
        assert_eq!(
            err("leak:2"),
            "`leak:2`: the count after `leak:` must be a whole number of at least 4"
        );
        assert_eq!(err("restart:2"), "`restart:2`: `restart` takes no count");
    }

    #[test]
    fn slope_is_least_squares_per_index() {
        assert_eq!(slope(&[]), 0.0);
        assert_eq!(slope(&[7.0]), 0.0);
        assert!((slope(&[1.0, 2.0, 3.0, 4.0]) - 1.0).abs() < 1e-9);
        assert!((slope(&[10.0, 10.0, 10.0]) - 0.0).abs() < 1e-9);
        // Noise around a flat line stays near 0.
        assert!(slope(&[100.0, 104.0, 98.0, 101.0, 99.0]).abs() < 1.0);
    }

    fn readings(rss: &[u64], fds: &[u64]) -> Vec<ProcessReading> {
        rss.iter()
            .zip(fds)
            .map(|(&rss_kib, &fds)| ProcessReading { rss_kib, fds })
            .collect()
    }

    /// The failing proof of the judge: a process that keeps one fd and 2 MiB per run fails,
    /// naming both and the readings; a flat one after a big warm-up run passes.
    #[test]
    fn growth_beyond_the_slope_fails_and_names_it() {
        let flat = readings(
            &[20_000, 30_000, 30_100, 29_900, 30_050],
            &[9, 14, 14, 15, 14],
        );
        assert_eq!(judge_growth("gateway[0]", &flat), Ok(()));
        // An upstream pool that fills over the first runs, then stays (balance_p2c, measured).
        let pool = readings(
            &[30_000, 30_100, 30_000, 30_050, 30_000],
            &[47, 51, 57, 56, 57],
        );
        assert_eq!(judge_growth("gateway[0]", &pool), Ok(()));
        // The admin's allocator settling after the warm-up run (method_put, measured).
        let settling = readings(&[47_696, 49_904, 51_980, 52_008], &[24, 24, 25, 25]);
        assert_eq!(judge_growth("admin[0]", &settling), Ok(()));
        // The pool still filling in the last run (balance_random, release binaries).
        let filling = readings(&[21_192, 22_144, 22_568, 22_516], &[56, 61, 72, 73]);
        assert_eq!(judge_growth("gateway[0]", &filling), Ok(()));
        // Filled, level, then one more connection in the last run (balance_random, leak:10,
        // release binaries): a new high and a slope of 1.08 overall, flat over the later half.
        let levelled = readings(&[23_144; 10], &[57, 64, 69, 74, 73, 73, 74, 74, 73, 77]);
        assert_eq!(judge_growth("gateway[0]", &levelled), Ok(()));
        // The same start with a leak of 1.5 fds a run after it: fails.
        let slow_leak = readings(&[23_144; 10], &[57, 64, 69, 71, 72, 74, 75, 77, 78, 80]);
        assert!(
            judge_growth("gateway[0]", &slow_leak).is_err_and(|e| e.contains("open fds grow")),
            "{:?}",
            judge_growth("gateway[0]", &slow_leak)
        );
        let leaking = readings(
            &[20_000, 30_000, 32_048, 34_096, 36_144],
            &[9, 14, 16, 18, 20],
        );
        assert_eq!(
            judge_growth("gateway[0]", &leaking).unwrap_err(),
            "gateway[0] leaks over 4 runs after a warm-up run: RSS grows 2048 KiB/run (bound \
             1024 KiB/run), open fds grow 2.00/run (bound 1/run); RSS KiB by run: [20000, \
             30000, 32048, 34096, 36144], open fds by run: [9, 14, 16, 18, 20]"
        );
    }

    /// Resident memory grows in steps of 2 MiB here: the planted leak at 64 KiB a request
    /// (1.7 MiB a run) read flat in its last run in CI and passed, which is why it leaks 256 KiB
    /// now; at that rate every run crosses several steps, and the steps it reads fail.
    #[test]
    fn a_leak_smaller_than_the_rss_step_can_read_flat_a_larger_one_cannot() {
        let fds = [49, 49, 49, 49, 49];
        let small = readings(&[24_096, 26_144, 28_192, 30_240, 30_240], &fds);
        assert_eq!(judge_growth("gateway[0]", &small), Ok(()));
        let planted = readings(&[28_020, 36_212, 44_404, 50_548, 58_764], &fds);
        assert!(
            judge_growth("gateway[0]", &planted).is_err_and(|e| e.contains("RSS grows")),
            "{:?}",
            judge_growth("gateway[0]", &planted)
        );
    }
}
