//! The set-full-style checker (after Jepsen's): every element (route × gateway) is probed
//! repeatedly from the last heal until it is stable or the bound passes, and classified from
//! its samples against what the model says, in this order:
//!
//! - **stale**: the last answer (at the bound) serves the route the old way: served though
//!   deleted, disabled, its rule deleted or the divide plugin disabled, or served by its old
//!   upstream;
//! - **flapping**: while its gateway holds the admin's config (digests equal from some probe
//!   round to the end), answered right, then wrong again (ending right, or wrong but not
//!   stale);
//! - **lost**: not answering right at the end (acknowledged, not served as acknowledged);
//! - **ok**: answering right from some sample to the end; its time-to-stable is when that
//!   run of right answers began (from the last heal). Earlier right answers do not count:
//!   a gateway still catching up may answer with a state the history passed through.

use std::fmt;
use std::time::Duration;

use model::GatewayError;

use super::history::Upstream;
use super::model::Expect;

/// A gateway's answer to a route's probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// HTTP 200 from the upstream of this name.
    Served(String),
    /// HTTP 404 with gateway code -107 or -102: no route.
    Absent,
    /// HTTP 404 with gateway code -106: no plugin forwarded (the divide plugin is disabled).
    Unrouted,
    /// Anything else (status and the start of the body, or the transport error).
    Other(String),
}

impl Answer {
    /// Reads a gateway's answer: its status, its upstream header (`x-gantry-upstream`) and
    /// its body.
    pub(crate) fn from_response(status: u16, upstream: Option<&str>, body: &str) -> Answer {
        let code = serde_json::from_str::<GatewayError>(body).ok();
        match (status, upstream, code) {
            (200, Some(u), _) => Answer::Served(u.to_owned()),
            (404, None, Some(e)) if e.is_route_missing() => Answer::Absent,
            (404, None, Some(e)) if e.code == GatewayError::CANNOT_FIND_URL => Answer::Unrouted,
            _ => Answer::Other(format!(
                "HTTP {status}: {}",
                body.chars().take(200).collect::<String>()
            )),
        }
    }

    /// Whether it is what `expect` asks for (a -106 only while the plugin is disabled, a
    /// -107 or -102 only while it is enabled).
    pub(crate) fn agrees(&self, expect: Expect) -> bool {
        match (self, expect) {
            (Answer::Served(got), Expect::Served(want)) => got == want.name(),
            (Answer::Served(got), Expect::Either) => [Upstream::Alpha, Upstream::Beta]
                .iter()
                .any(|u| got == u.name()),
            (Answer::Absent, Expect::Absent) | (Answer::Unrouted, Expect::Unrouted) => true,
            _ => false,
        }
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Served(u) => write!(f, "served by {u}"),
            Answer::Absent => f.write_str("absent (404)"),
            Answer::Unrouted => f.write_str("unrouted (404 -106)"),
            Answer::Other(what) => write!(f, "unexpected: {what}"),
        }
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Served(u) => write!(f, "served by {}", u.name()),
            Expect::Either => f.write_str("served by alpha or beta"),
            Expect::Absent => f.write_str("absent"),
            Expect::Unrouted => f.write_str("unrouted (the divide plugin is disabled)"),
        }
    }
}

/// One probe's answer, `at` after the last heal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sample {
    /// When it was sent, from the last heal.
    pub at: Duration,
    /// What came back.
    pub answer: Answer,
}

/// An element's class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Right from `stable_after` (after the last heal) on.
    Ok {
        /// Time-to-stable.
        stable_after: Duration,
    },
    /// Never answered as acknowledged (and not stale).
    Lost,
    /// Deleted, disabled or moved, still answered the old way at the bound.
    Stale,
    /// Right, then wrong again.
    Flapping,
}

/// Classifies one element's samples (in time order) against what the model says;
/// `caught_up` is since when its gateway has held the admin's config (its digest equal to
/// the admin's in every probe round to the end; `Duration::MAX` if not at the end). Before
/// that the gateway may still be replaying the history (passing through earlier
/// acknowledged states, which may equal the final one); only a wrong answer after a right
/// one from then on is flapping.
pub(crate) fn classify(expect: Expect, samples: &[Sample], caught_up: Duration) -> Class {
    let Some(last) = samples.last() else {
        return Class::Lost;
    };
    if !last.answer.agrees(expect) && matches!(last.answer, Answer::Served(_)) {
        return Class::Stale;
    }
    let after = &samples[samples
        .iter()
        .position(|s| s.at >= caught_up)
        .unwrap_or(samples.len())..];
    if let Some(first_right) = after.iter().position(|s| s.answer.agrees(expect))
        && after[first_right..]
            .iter()
            .any(|s| !s.answer.agrees(expect))
    {
        return Class::Flapping;
    }
    let run_start = samples
        .iter()
        .rposition(|s| !s.answer.agrees(expect))
        .map_or(0, |i| i + 1);
    match samples.get(run_start) {
        Some(first) => Class::Ok {
            stable_after: first.at,
        },
        None => Class::Lost,
    }
}

/// The samples where the answer changed, e.g. `from 0.00 s absent (404), from 0.31 s served
/// by alpha` (what a failure report shows of an element).
pub(crate) fn changes(samples: &[Sample]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut previous: Option<&Answer> = None;
    for s in samples {
        if previous != Some(&s.answer) {
            out.push(format!("from {:.2} s {}", s.at.as_secs_f64(), s.answer));
            previous = Some(&s.answer);
        }
    }
    if out.is_empty() {
        "no sample".to_owned()
    } else {
        out.join(", ")
    }
}

/// Counts per class and the times-to-stable of the ok elements, over any number of histories.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Ok elements.
    pub ok: usize,
    /// Lost elements.
    pub lost: usize,
    /// Stale elements.
    pub stale: usize,
    /// Flapping elements.
    pub flapping: usize,
    /// The ok elements' times-to-stable.
    pub stable_after: Vec<Duration>,
}

impl Tally {
    /// Counts `class`.
    pub fn add(&mut self, class: Class) {
        match class {
            Class::Ok { stable_after } => {
                self.ok += 1;
                self.stable_after.push(stable_after);
            }
            Class::Lost => self.lost += 1,
            Class::Stale => self.stale += 1,
            Class::Flapping => self.flapping += 1,
        }
    }

    /// The `q` quantile (0–1, nearest rank) of the times-to-stable, if any.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let mut sorted = self.stable_after.clone();
        sorted.sort_unstable();
        let last = sorted.len().checked_sub(1)?;
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
        sorted.get(rank.min(last)).copied()
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ok, {} lost, {} stale, {} flapping",
            self.ok, self.lost, self.stale, self.flapping
        )?;
        let ms = |q| self.quantile(q).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
        if !self.stable_after.is_empty() {
            write!(
                f,
                "; time-to-stable after the last heal p50 {:.0} ms, p90 {:.0} ms, max {:.0} ms",
                ms(0.5),
                ms(0.9),
                ms(1.0)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(answers: &[Answer]) -> Vec<Sample> {
        answers
            .iter()
            .enumerate()
            .map(|(i, answer)| Sample {
                at: Duration::from_millis(100 * i as u64),
                answer: answer.clone(),
            })
            .collect()
    }

    fn alpha() -> Answer {
        Answer::Served("alpha".into())
    }

    fn beta() -> Answer {
        Answer::Served("beta".into())
    }

    const ALPHA: Expect = Expect::Served(Upstream::Alpha);

    #[test]
    fn right_from_some_point_on_is_ok_with_its_time_to_stable() {
        let s = samples(&[Answer::Absent, Answer::Absent, alpha(), alpha()]);
        assert_eq!(
            classify(ALPHA, &s, Duration::ZERO),
            Class::Ok {
                stable_after: Duration::from_millis(200)
            }
        );
        let s = samples(&[alpha(), Answer::Absent]);
        assert_eq!(
            classify(Expect::Absent, &s, Duration::ZERO),
            Class::Ok {
                stable_after: Duration::from_millis(100)
            }
        );
    }

    #[test]
    fn acknowledged_but_never_served_is_lost() {
        let s = samples(&[Answer::Absent, Answer::Absent]);
        assert_eq!(classify(ALPHA, &s, Duration::ZERO), Class::Lost);
        let s = samples(&[Answer::Other("HTTP 502".into())]);
        assert_eq!(classify(ALPHA, &s, Duration::ZERO), Class::Lost);
        let s = samples(&[alpha(), Answer::Other("HTTP 502".into())]);
        assert_eq!(classify(Expect::Absent, &s, Duration::ZERO), Class::Lost);
        assert_eq!(classify(ALPHA, &[], Duration::ZERO), Class::Lost);
    }

    #[test]
    fn deleted_or_moved_but_still_served_the_old_way_is_stale() {
        assert_eq!(
            classify(
                Expect::Absent,
                &samples(&[alpha(), alpha()]),
                Duration::ZERO
            ),
            Class::Stale
        );
        assert_eq!(
            classify(ALPHA, &samples(&[beta(), beta()]), Duration::ZERO),
            Class::Stale
        );
        // Absent before the create arrived, then the create, never the delete.
        let s = samples(&[Answer::Absent, alpha(), alpha()]);
        assert_eq!(classify(Expect::Absent, &s, Duration::ZERO), Class::Stale);
    }

    #[test]
    fn right_then_wrong_is_flapping() {
        let s = samples(&[alpha(), Answer::Absent, alpha()]);
        assert_eq!(classify(ALPHA, &s, Duration::ZERO), Class::Flapping);
        let s = samples(&[alpha(), Answer::Absent]);
        assert_eq!(classify(ALPHA, &s, Duration::ZERO), Class::Flapping);
        let s = samples(&[Answer::Absent, Answer::Other("HTTP 502".into())]);
        assert_eq!(
            classify(Expect::Absent, &s, Duration::ZERO),
            Class::Flapping
        );
    }

    #[test]
    fn two_registered_upstreams_take_turns_without_flapping() {
        let s = samples(&[Answer::Absent, alpha(), beta(), alpha(), beta()]);
        assert_eq!(
            classify(Expect::Either, &s, Duration::ZERO),
            Class::Ok {
                stable_after: Duration::from_millis(100)
            }
        );
        let other = Answer::Served("gamma".into());
        assert!(!other.agrees(Expect::Either));
        assert_eq!(
            classify(Expect::Either, &samples(&[alpha(), other]), Duration::ZERO),
            Class::Stale
        );
        assert_eq!(
            classify(Expect::Either, &samples(&[Answer::Absent]), Duration::ZERO),
            Class::Lost
        );
    }

    #[test]
    fn a_disabled_plugin_is_right_only_when_the_model_says_so() {
        let unrouted = || Answer::Unrouted;
        let ok = classify(
            Expect::Unrouted,
            &samples(&[alpha(), unrouted()]),
            Duration::ZERO,
        );
        assert!(matches!(ok, Class::Ok { .. }));
        // The plugin is enabled but the gateway still answers as if it were not.
        assert_eq!(
            classify(ALPHA, &samples(&[unrouted(), unrouted()]), Duration::ZERO),
            Class::Lost
        );
        assert_eq!(
            classify(
                Expect::Absent,
                &samples(&[unrouted(), unrouted()]),
                Duration::ZERO
            ),
            Class::Lost
        );
        // Disabled, but the gateway still routes (or knows the route is gone).
        assert_eq!(
            classify(
                Expect::Unrouted,
                &samples(&[alpha(), alpha()]),
                Duration::ZERO
            ),
            Class::Stale
        );
        assert_eq!(
            classify(
                Expect::Unrouted,
                &samples(&[Answer::Absent, Answer::Absent]),
                Duration::ZERO
            ),
            Class::Lost
        );
    }

    #[test]
    fn answers_are_read_from_status_header_and_code() {
        let body = |code: i32| serde_json::to_string(&GatewayError::new(code, "x")).unwrap();
        assert_eq!(Answer::from_response(200, Some("beta"), "{}"), beta());
        assert_eq!(
            Answer::from_response(404, None, &body(-107)),
            Answer::Absent
        );
        assert_eq!(
            Answer::from_response(404, None, &body(-102)),
            Answer::Absent
        );
        assert_eq!(
            Answer::from_response(404, None, &body(-106)),
            Answer::Unrouted
        );
        for (status, upstream, body) in [
            (404, None, body(-119)),
            (503, None, body(-106)),
            (200, None, "{}".to_owned()),
            (404, None, "not json".to_owned()),
        ] {
            assert!(
                matches!(
                    Answer::from_response(status, upstream, &body),
                    Answer::Other(_)
                ),
                "{status} {body}"
            );
        }
    }

    #[test]
    fn wrong_answers_count_as_flapping_only_once_the_gateway_caught_up() {
        // Right by chance while replaying the history, then an earlier state, then right.
        let s = samples(&[alpha(), Answer::Absent, alpha(), alpha()]);
        let caught_up = Duration::from_millis(200);
        assert_eq!(
            classify(ALPHA, &s, caught_up),
            Class::Ok {
                stable_after: Duration::from_millis(200)
            }
        );
        assert_eq!(classify(ALPHA, &s, Duration::ZERO), Class::Flapping);
        // Caught up at 100 ms, right, then wrong again: flapping.
        let s = samples(&[Answer::Absent, alpha(), Answer::Absent, alpha()]);
        assert_eq!(
            classify(ALPHA, &s, Duration::from_millis(100)),
            Class::Flapping
        );
        // Never caught up: only its last run of answers counts.
        assert_eq!(
            classify(ALPHA, &s, Duration::MAX),
            Class::Ok {
                stable_after: Duration::from_millis(300)
            }
        );
        let s = samples(&[alpha(), Answer::Absent]);
        assert_eq!(classify(ALPHA, &s, Duration::MAX), Class::Lost);
    }

    #[test]
    fn changes_name_each_new_answer_once() {
        let s = samples(&[Answer::Absent, Answer::Absent, alpha(), Answer::Absent]);
        assert_eq!(
            changes(&s),
            "from 0.00 s absent (404), from 0.20 s served by alpha, from 0.30 s absent (404)"
        );
        assert_eq!(changes(&[]), "no sample");
    }

    #[test]
    fn the_tally_counts_and_takes_quantiles() {
        let mut t = Tally::default();
        for ms in [30, 10, 20, 40] {
            t.add(Class::Ok {
                stable_after: Duration::from_millis(ms),
            });
        }
        t.add(Class::Lost);
        t.add(Class::Stale);
        t.add(Class::Flapping);
        assert_eq!((t.ok, t.lost, t.stale, t.flapping), (4, 1, 1, 1));
        assert_eq!(t.quantile(0.5), Some(Duration::from_millis(20)));
        assert_eq!(t.quantile(0.9), Some(Duration::from_millis(40)));
        assert_eq!(t.quantile(1.0), Some(Duration::from_millis(40)));
        assert_eq!(Tally::default().quantile(0.5), None);
        assert!(
            t.to_string()
                .starts_with("4 ok, 1 lost, 1 stale, 1 flapping; ")
        );
    }
}
