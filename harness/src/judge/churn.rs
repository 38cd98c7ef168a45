//! The churn judge: a stable route under steady load, first without churn (the baseline),
//! then while other routes change at a given rate (ShenYu #7034: a change to one route must
//! not disturb another). Every answer in both phases must have met the expectation, and the
//! admin must have acknowledged at least `MIN_RATE_SHARE` of the asked change rate (else
//! the check did not test what it claims). The stable route's latency quantiles in both
//! phases and the achieved rate are measured, not judged.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::latency::{LatencyLimits, Limits, Quantiles, over};
use super::spec::{CheckSpec, MIN_COUNT, Measured, NoVerdict, Observe, ValidateCx};
use super::{Judge, Measurements, Verdict};
use crate::scenario::ast::request::{Expect, RequestSpec};
use crate::scenario::ast::{DurationText, duration};

fn fifty_u32() -> u32 {
    50
}

fn four() -> u32 {
    4
}

fn four_hundred() -> u32 {
    400
}

fn five_s() -> Duration {
    Duration::from_secs(5)
}

fn five_s_text() -> &'static str {
    "5s"
}

/// `churn:` send `requestRate` requests a second (over at most `connections` in flight) on a
/// stable route, first for `duration` without churn (the baseline), then for `duration` while
/// the harness makes `rate` admin changes a second (plus `burst`s) on routes of its own under
/// `/gantry-churn/`, on top of `held` routes it made before: every answer in both phases must
/// meet `expect`, and the admin must have acknowledged at least [`MIN_RATE_SHARE`] of the
/// asked change rate. The stable route's latency with and without churn is reported, and
/// judged during churn against `limits`. Everything the check made is deleted before it ends.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChurnSpec {
    /// The stable route's request.
    pub request: RequestSpec,
    /// What every answer on the stable route must meet.
    pub expect: Expect,
    /// Admin changes per second on the churned routes (default 50).
    #[serde(default = "fifty_u32")]
    #[schemars(range(min = MIN_COUNT, max = MAX_CHURN_RATE))]
    pub rate: u32,
    /// How long each phase lasts, the baseline and the churn (default 5s).
    #[serde(default = "five_s", deserialize_with = "duration")]
    #[schemars(with = "DurationText", default = "five_s_text")]
    pub duration: Duration,
    /// Extra changes made back to back every so often, on top of `rate`.
    #[serde(default)]
    pub burst: Option<ChurnBurst>,
    /// Requests in flight at most at once on the stable route (default 4).
    #[serde(default = "four")]
    #[schemars(range(min = MIN_COUNT, max = MAX_CHURN_CONNECTIONS))]
    pub connections: u32,
    /// Requests per second on the stable route, spread over the connections (default 400):
    /// steady traffic that leaves the machine room to churn, not a saturation test.
    #[serde(default = "four_hundred")]
    #[schemars(range(min = MIN_COUNT, max = MAX_CHURN_REQUEST_RATE))]
    pub request_rate: u32,
    /// Routes the check creates before its baseline and holds through both phases, each a
    /// divide selector on `/gantry-held/<i>/` with one rule, deleted at the end: churn on
    /// top of a large config (default 0).
    #[serde(default)]
    #[schemars(range(max = MAX_CHURN_HELD))]
    pub held: u32,
    /// Upper bounds on the stable route's latency quantiles during churn (each optional;
    /// without them the latency is reported, not judged).
    #[serde(default)]
    pub limits: LatencyLimits,
}

impl ChurnSpec {
    /// Admin changes per second asked for, bursts included.
    pub fn asked_rate(&self) -> f64 {
        f64::from(self.rate)
            + self
                .burst
                .map_or(0.0, |b| f64::from(b.changes) / b.every.as_secs_f64())
    }
}

/// `churn.burst:` `changes` extra admin changes, made at once every `every`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChurnBurst {
    /// The period.
    #[serde(deserialize_with = "duration")]
    #[schemars(with = "DurationText")]
    pub every: Duration,
    /// Changes per burst.
    #[schemars(range(min = MIN_COUNT, max = MAX_CHURN_RATE))]
    pub changes: u32,
}

/// The least share of the asked change rate the admin must have acknowledged: below it, the
/// churn was too thin to back the check's claim. (A 2-core machine running debug builds
/// acknowledges 99% of 50 changes/s with other builds running; with two busy loops and two
/// builds besides, 64–81% of 50/s and 69–98% of 40/s, so `churn.yaml` asks for 25/s.)
pub(crate) const MIN_RATE_SHARE: f64 = 0.8;

/// How many misses (and failed changes) a failure names.
const NAMED: usize = 3;

/// One answer on the stable route that missed the expectation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Miss {
    /// When it was sent, ms from the start of its phase.
    pub at_ms: f64,
    /// What was wrong (a status, a wrong upstream, a transport error).
    pub what: String,
}

/// What the load on the stable route saw in one phase.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Phase {
    /// Answers (and transport errors) seen.
    pub sent: u64,
    /// Every answer's latency, µs.
    pub latencies_us: Vec<u64>,
    /// How many missed.
    pub missed: u64,
    /// The earliest misses (at most [`NAMED`]).
    pub first_misses: Vec<Miss>,
}

impl Phase {
    /// Records one answer sent `at_ms` into the phase, taking `latency_us`; `outcome` is why
    /// it missed, if it did.
    pub(crate) fn record(&mut self, at_ms: f64, latency_us: u64, outcome: Result<(), String>) {
        self.sent += 1;
        self.latencies_us.push(latency_us);
        if let Err(what) = outcome {
            self.missed += 1;
            self.first_misses.push(Miss { at_ms, what });
            self.keep_first_misses();
        }
    }

    /// Both phases' observations in one (the load's connections each record their own).
    pub(crate) fn merge(mut self, other: Phase) -> Phase {
        self.sent += other.sent;
        self.latencies_us.extend(other.latencies_us);
        self.missed += other.missed;
        self.first_misses.extend(other.first_misses);
        self.keep_first_misses();
        self
    }

    fn keep_first_misses(&mut self) {
        self.first_misses
            .sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
        self.first_misses.truncate(NAMED);
    }
}

/// What the churn check observed.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ChurnObservation {
    /// The stable route without churn.
    pub baseline: Phase,
    /// The stable route during churn.
    pub churn: Phase,
    /// Admin changes acknowledged during the churn phase.
    pub changes: u64,
    /// Admin changes that failed, and the first errors (at most [`NAMED`]).
    pub failed_changes: (u64, Vec<String>),
    /// How long the churn phase lasted, s.
    pub churn_secs: f64,
    /// Routes held through both phases.
    pub held: u32,
}

/// The asked change rate and the latency limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ChurnJudge {
    /// Admin changes per second asked for (bursts included).
    pub asked_rate: f64,
    /// Upper bounds on the stable route's latency during churn, ms.
    pub limits: Limits,
}

/// One phase's numbers, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct PhaseStats {
    /// Requests sent on the stable route.
    pub sent: u64,
    /// Answers that missed.
    pub missed: u64,
    /// The stable route's latency, ms.
    pub latency: Quantiles,
}

/// What the churn check measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Stats {
    /// The stable route without churn.
    pub baseline: PhaseStats,
    /// The stable route during churn.
    pub churn: PhaseStats,
    /// Admin changes acknowledged during churn.
    pub changes: u64,
    /// Admin changes that failed.
    pub failed_changes: u64,
    /// Changes per second asked for.
    pub asked_rate: f64,
    /// Changes per second the admin acknowledged.
    pub achieved_rate: f64,
    /// Routes held through both phases.
    #[serde(default)]
    pub held: u32,
    /// The limits on the stable route's latency during churn, ms.
    #[serde(default)]
    pub limits: Limits,
}

/// One line for the terminal and HTML reports.
impl Measured for Stats {
    fn summary(&self) -> String {
        let phase = |p: &PhaseStats| {
            format!(
                "{}/{} missed, p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
                p.missed, p.sent, p.latency.p50, p.latency.p95, p.latency.p99, p.latency.max
            )
        };
        let held = if self.held > 0 {
            format!("; {} routes held", self.held)
        } else {
            String::new()
        };
        format!(
            "stable route without churn: {}; during churn: {}; {:.1} changes/s acknowledged \
             ({} changes, {:.1}/s asked){held}",
            phase(&self.baseline),
            phase(&self.churn),
            self.achieved_rate,
            self.changes,
            self.asked_rate
        )
    }

    fn terminal(&self) -> Option<String> {
        Some(self.summary())
    }
}

fn phase_stats(p: &Phase) -> PhaseStats {
    PhaseStats {
        sent: p.sent,
        missed: p.missed,
        latency: Quantiles::of(p.latencies_us.iter().copied()),
    }
}

impl Judge for ChurnJudge {
    type Observation = ChurnObservation;

    fn judge(&self, o: &ChurnObservation) -> Verdict {
        let mut failures = Vec::new();
        for (name, phase) in [("without churn", &o.baseline), ("during churn", &o.churn)] {
            if phase.sent == 0 {
                failures.push(format!("no answer on the stable route {name}"));
            }
            if phase.missed > 0 {
                let first: Vec<String> = phase
                    .first_misses
                    .iter()
                    .map(|m| format!("at {:.0} ms: {}", m.at_ms, m.what))
                    .collect();
                failures.push(format!(
                    "{} of {} answers on the stable route {name} missed; first: {}",
                    phase.missed,
                    phase.sent,
                    first.join("; ")
                ));
            }
        }
        let (failed, errors) = &o.failed_changes;
        if *failed > 0 {
            failures.push(format!(
                "{failed} admin changes failed; first: {}",
                errors.join("; ")
            ));
        }
        let achieved_rate = if o.churn_secs > 0.0 {
            o.changes as f64 / o.churn_secs
        } else {
            0.0
        };
        if achieved_rate < MIN_RATE_SHARE * self.asked_rate {
            failures.push(format!(
                "the admin acknowledged {achieved_rate:.1} changes/s ({} in {:.2} s), under {:.0}% \
                 of the {:.1}/s asked: the stable route was not tested under that churn",
                o.changes,
                o.churn_secs,
                MIN_RATE_SHARE * 100.0,
                self.asked_rate
            ));
        }
        let (baseline, churn) = (phase_stats(&o.baseline), phase_stats(&o.churn));
        let of = format!(
            "{} answers; without churn: p99 {:.3} ms, max {:.3} ms",
            churn.sent, baseline.latency.p99, baseline.latency.max
        );
        failures.extend(over(
            "during churn, the stable route's",
            &churn.latency,
            &self.limits,
            &of,
        ));
        Verdict {
            failures,
            measurements: Measurements::Churn(Stats {
                baseline,
                churn,
                changes: o.changes,
                failed_changes: *failed,
                asked_rate: self.asked_rate,
                achieved_rate,
                held: o.held,
                limits: self.limits,
            }),
        }
    }
}

/// The most admin changes a second (and per burst) a churn check may ask for.
const MAX_CHURN_RATE: u32 = 1000;

/// The most requests a churn check keeps in flight on its stable route.
const MAX_CHURN_CONNECTIONS: u32 = 64;

/// The most requests a second a churn check sends on its stable route.
const MAX_CHURN_REQUEST_RATE: u32 = 100_000;

/// The shortest phase of a churn check.
const MIN_CHURN_DURATION: Duration = Duration::from_millis(500);

/// The most routes a churn check may hold.
const MAX_CHURN_HELD: u32 = 20_000;

impl CheckSpec for ChurnSpec {
    fn request(&self) -> &RequestSpec {
        &self.request
    }

    fn expect(&self) -> Option<&Expect> {
        Some(&self.expect)
    }

    fn validate(&self, cx: &mut dyn ValidateCx, at: &str) {
        cx.expectation(&self.expect, at);
        let mut between = |value: u32, max: u32, field: &str, unit: &str| {
            if !(MIN_COUNT..=max).contains(&value) {
                cx.problem(
                    format!("{at}.{field}"),
                    format!("must be between {MIN_COUNT} and {max}{unit}, got {value}"),
                );
            }
        };
        between(self.rate, MAX_CHURN_RATE, "rate", " changes/s");
        between(self.connections, MAX_CHURN_CONNECTIONS, "connections", "");
        between(
            self.request_rate,
            MAX_CHURN_REQUEST_RATE,
            "requestRate",
            " requests/s",
        );
        if self.held > MAX_CHURN_HELD {
            cx.problem(
                format!("{at}.held"),
                format!("must be at most {MAX_CHURN_HELD}, got {}", self.held),
            );
        }
        if self.duration < MIN_CHURN_DURATION {
            cx.problem(
                format!("{at}.duration"),
                format!(
                    "must be at least {} (an achieved rate needs a few changes), got {}",
                    humantime::format_duration(MIN_CHURN_DURATION),
                    humantime::format_duration(self.duration)
                ),
            );
        }
        if let Some(b) = &self.burst {
            if b.every.is_zero() || b.every > self.duration {
                cx.problem(
                    format!("{at}.burst.every"),
                    format!(
                        "must be positive and at most the duration ({}), got {}",
                        humantime::format_duration(self.duration),
                        humantime::format_duration(b.every)
                    ),
                );
            }
            if !(MIN_COUNT..=MAX_CHURN_RATE).contains(&b.changes) {
                cx.problem(
                    format!("{at}.burst.changes"),
                    format!(
                        "must be between {MIN_COUNT} and {MAX_CHURN_RATE}, got {}",
                        b.changes
                    ),
                );
            }
        }
    }
}

/// What the churn check asks of the runner.
pub(crate) trait ChurnCx {
    /// Both phases on the stable route and the churn on routes of the check's own (skipped
    /// against an external target).
    async fn churn(&mut self, spec: &ChurnSpec) -> Result<ChurnObservation, NoVerdict>;
}

impl<C: ChurnCx> Observe<C> for ChurnSpec {
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict> {
        let observed = cx.churn(self).await?;
        Ok(ChurnJudge {
            asked_rate: self.asked_rate(),
            limits: self.limits.into(),
        }
        .judge(&observed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` passing answers of 1 ms each, one every 10 ms.
    fn clean(n: u64) -> Phase {
        let mut p = Phase::default();
        for i in 0..n {
            p.record(i as f64 * 10.0, 1000, Ok(()));
        }
        p
    }

    fn observed() -> ChurnObservation {
        ChurnObservation {
            baseline: clean(100),
            churn: clean(100),
            changes: 150,
            failed_changes: (0, Vec::new()),
            churn_secs: 3.0,
            held: 0,
        }
    }

    const NO_LIMITS: Limits = Limits {
        p50: None,
        p95: None,
        p99: None,
        max: None,
    };

    const JUDGE: ChurnJudge = ChurnJudge {
        asked_rate: 50.0,
        limits: NO_LIMITS,
    };

    #[test]
    fn clean_phases_at_the_asked_rate_pass_and_are_measured() {
        let v = JUDGE.judge(&observed());
        assert!(v.passed(), "{:?}", v.failures);
        let Measurements::Churn(s) = &v.measurements else {
            panic!("{:?}", v.measurements)
        };
        assert!((s.achieved_rate - 50.0).abs() < 1e-9, "{s:?}");
        assert_eq!((s.baseline.sent, s.churn.missed), (100, 0));
        assert!((s.churn.latency.p50 - 1.0).abs() < 0.01, "{s:?}");
    }

    #[test]
    fn a_miss_during_churn_fails_naming_the_earliest() {
        let mut o = observed();
        let mut late = Phase::default();
        late.record(
            900.0,
            2000,
            Err("expected upstream alpha, got beta".to_owned()),
        );
        for at in [40.0, 30.0, 20.0] {
            late.record(at, 2000, Err(format!("HTTP 404 at {at}")));
        }
        o.churn = o.churn.merge(late);
        let v = JUDGE.judge(&o);
        assert_eq!(v.failures.len(), 1, "{:?}", v.failures);
        assert_eq!(
            v.failures[0],
            "4 of 104 answers on the stable route during churn missed; first: \
             at 20 ms: HTTP 404 at 20; at 30 ms: HTTP 404 at 30; at 40 ms: HTTP 404 at 40"
        );
    }

    #[test]
    fn a_wrong_upstream_in_the_baseline_fails() {
        let mut o = observed();
        o.baseline.record(
            5.0,
            900,
            Err("expected upstream alpha, got beta".to_owned()),
        );
        let v = JUDGE.judge(&o);
        assert_eq!(
            v.failures,
            [
                "1 of 101 answers on the stable route without churn missed; first: at 5 ms: \
              expected upstream alpha, got beta"
            ]
        );
    }

    #[test]
    fn a_low_achieved_rate_or_a_failed_change_fails() {
        let mut o = observed();
        o.changes = 119; // 39.7/s < 80% of 50/s
        o.failed_changes = (1, vec!["PUT /selector/7: HTTP 500".to_owned()]);
        let v = JUDGE.judge(&o);
        assert_eq!(v.failures.len(), 2, "{:?}", v.failures);
        assert!(
            v.failures[0].starts_with("1 admin changes failed; first: PUT /selector/7"),
            "{:?}",
            v.failures
        );
        assert!(
            v.failures[1].starts_with("the admin acknowledged 39.7 changes/s (119 in 3.00 s)"),
            "{:?}",
            v.failures
        );
        o.changes = 120;
        o.failed_changes = (0, Vec::new());
        assert!(JUDGE.judge(&o).passed());
    }

    #[test]
    fn a_silent_phase_fails() {
        let mut o = observed();
        o.baseline = Phase::default();
        let v = JUDGE.judge(&o);
        assert_eq!(v.failures, ["no answer on the stable route without churn"]);
    }

    /// APISIX #13069's shape: a router rebuilt on the request path after every change makes
    /// the stable route wait; a p99 limit during churn catches it, the baseline does not count.
    #[test]
    fn a_slow_stable_route_during_churn_fails_its_limit_only_there() {
        let judge = ChurnJudge {
            limits: Limits {
                p99: Some(50.0),
                ..NO_LIMITS
            },
            ..JUDGE
        };
        let mut o = observed();
        o.held = 5000;
        assert!(judge.judge(&o).passed(), "1 ms answers are within 50 ms");
        let mut slow = Phase::default();
        for i in 0..5 {
            slow.record(f64::from(i) * 200.0, 180_000, Ok(()));
        }
        o.baseline = o.baseline.clone().merge(slow.clone());
        assert!(judge.judge(&o).passed(), "the baseline is not judged");
        o.churn = o.churn.merge(slow);
        let v = judge.judge(&o);
        assert_eq!(v.failures.len(), 1, "{:?}", v.failures);
        assert!(
            v.failures[0].starts_with(
                "during churn, the stable route's latency p99 180.0"
            ) && v.failures[0].contains("over the limit 50 ms (105 answers; without churn: p99 180."),
            "{:?}",
            v.failures
        );
        let Measurements::Churn(s) = &v.measurements else {
            panic!("{:?}", v.measurements)
        };
        assert!(s.terminal().is_some_and(|t| t.ends_with("; 5000 routes held")));
    }
}
