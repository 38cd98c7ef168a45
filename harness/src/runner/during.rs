//! Traffic while the config changes: `clients` senders sending one request back to back (at
//! most at `rate` all together), each answer judged against the expectation and, with
//! `after` + `never`, the order of the upstreams that answered. A step's `during` is reported
//! as the check `steps[i].during`; the scenario's background `traffic` (runner::traffic) is
//! sent by the same engine.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use model::GatewayError;
use model::lock::MutexExt;
use tokio::time::{Interval, MissedTickBehavior};

use super::{Case, StepResult};
use crate::judge::Measurements;
use crate::probe::judge;
use crate::report::{CheckOutcome, CheckReport};
use crate::scenario::ast::{AdminChange, Change, During, Load, Order, StepSpec};
use crate::upstream::UPSTREAM_HEADER;

/// How many misses (and ordering violations) a failure shows in full; the rest are counted.
const SHOWN: usize = 3;

/// Where one answer came from: when its request was sent and when the answer came back (µs
/// from the start of the traffic), by which client, through which gateway, in which step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Answer {
    pub(super) sent_us: u64,
    pub(super) back_us: u64,
    pub(super) client: u32,
    pub(super) gateway: usize,
    pub(super) step: usize,
}

/// An answer that missed the expectation: where it came from and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Miss {
    pub(super) at: Answer,
    pub(super) why: String,
}

/// What traffic saw.
#[derive(Debug, Default)]
pub(super) struct Sent {
    pub(super) sent: u32,
    pub(super) missed: u32,
    /// Misses whose answer was a -102 (a selector without a matching rule).
    pub(super) no_rule: u32,
    /// The first few misses by send time.
    pub(super) misses: Vec<Miss>,
    /// With `after` + `never`: the answers from `after`.
    pub(super) after: Vec<Answer>,
    /// With `after` + `never`: the answers from `never`.
    pub(super) never: Vec<Answer>,
    pub(super) elapsed_ms: f64,
}

/// How a failure message names the traffic and its answers.
pub(super) struct Naming<'a> {
    /// The traffic's name: `` `during` ``, `` traffic `t` ``.
    pub(super) label: String,
    /// What the traffic is, after "answers": `during the step`, `` of traffic `t` ``.
    pub(super) what: String,
    /// Its request's path.
    pub(super) path: &'a str,
    /// Names of the steps, when the traffic spans several (each miss says its step).
    pub(super) steps: Option<Vec<&'a str>>,
    /// How a gateway is named by index.
    pub(super) gateway: &'a dyn Fn(usize) -> String,
}

impl Naming<'_> {
    /// `at 12 ms, client 0 via the gateway` (and ` in step `s`` across steps).
    fn answer(&self, a: &Answer, us: u64) -> String {
        let step = match &self.steps {
            Some(names) => format!(" in step `{}`", names.get(a.step).unwrap_or(&"?")),
            None => String::new(),
        };
        format!(
            "at {} ms{step}, client {} via {}",
            us / 1000,
            a.client,
            (self.gateway)(a.gateway)
        )
    }
}

/// The answers from `never` to requests sent after the first answer from `after` came back,
/// by send time, with the time that first answer came back (µs); `None` when `after` never
/// answered. With several clients "after" is by the clock of the whole traffic: a request
/// sent (by any client) once some client had received an answer from `after`.
pub(super) fn out_of_order<'a>(
    after: &[Answer],
    never: &'a [Answer],
) -> Option<(u64, Vec<&'a Answer>)> {
    let first_back = after.iter().map(|a| a.back_us).min()?;
    let mut late: Vec<&Answer> = never.iter().filter(|a| a.sent_us > first_back).collect();
    late.sort_by_key(|a| a.sent_us);
    Some((first_back, late))
}

impl Sent {
    /// Why the traffic fails: answers missed, an upstream answered out of `order`, or
    /// nothing was sent (it then showed nothing).
    pub(super) fn failures(&self, naming: &Naming<'_>, order: Option<&Order>) -> Vec<String> {
        let path = naming.path;
        if self.sent == 0 {
            return vec![format!(
                "{} sent no request to {path} in its {:.0} ms (no gateway was running, or \
                 the step ended first), so it shows nothing",
                naming.label, self.elapsed_ms
            )];
        }
        let mut failures = Vec::new();
        if self.missed > 0 {
            let shown: Vec<String> = (self.misses.iter())
                .map(|m| format!("{}: {}", naming.answer(&m.at, m.at.sent_us), m.why))
                .collect();
            failures.push(format!(
                "{} of {} answers {} missed {path}; first: {}{}",
                self.missed,
                self.sent,
                naming.what,
                shown.join("; "),
                more(self.missed as usize, shown.len())
            ));
        }
        if let Some(order) = order
            && let Some((first_back, late)) = out_of_order(&self.after, &self.never)
            && !late.is_empty()
        {
            let shown: Vec<String> = (late.iter().take(SHOWN))
                .map(|a| format!("sent {}", naming.answer(a, a.sent_us)))
                .collect();
            failures.push(format!(
                "{} of {} answers {} to {path} came from {} after {} had answered (its first \
                 answer came back at {} ms; no request sent later may reach {}): {}{}",
                late.len(),
                self.sent,
                naming.what,
                order.never,
                order.after,
                first_back / 1000,
                order.never,
                shown.join("; "),
                more(late.len(), shown.len())
            ));
        }
        failures
    }

    /// Adds what one client saw.
    fn merge(&mut self, other: Sent) {
        self.sent += other.sent;
        self.missed += other.missed;
        self.no_rule += other.no_rule;
        self.misses.extend(other.misses);
        self.misses.sort_by_key(|m| m.at.sent_us);
        self.misses.truncate(SHOWN);
        self.after.extend(other.after);
        self.never.extend(other.never);
    }
}

/// Why misses were -102 when `steps` (those the traffic spanned) create a selector with its
/// rules: the admin publishes the selector, then each rule, so for a moment the gateway holds
/// the selector without them. `None` when no miss was a -102 or no such selector was made.
pub(super) fn created_without_rules_yet<'s>(
    sent: &Sent,
    steps: impl IntoIterator<Item = &'s StepSpec>,
) -> Option<String> {
    if sent.no_rule == 0 {
        return None;
    }
    let (step, selector) = steps.into_iter().find_map(|st| {
        st.changes.iter().find_map(|c| match c {
            Change::Admin(AdminChange::CreateSelector(sel)) if !sel.rules.is_empty() => {
                Some((&st.name, &sel.name))
            }
            _ => None,
        })
    })?;
    Some(format!(
        "{} of the misses were -102 (a selector but no rule) while step `{step}` created \
         selector `{selector}` with its rules: the admin publishes a selector, then each of its \
         rules, so for a moment the gateway holds the selector without them; create it so that \
         it matches nothing yet (e.g. behind a header), then open it with one `updateSelector` \
         (docs/scenarios.md, \"Moving a route under traffic\")",
        sent.no_rule
    ))
}

/// `; and N more` when `shown` of `all` were shown.
fn more(all: usize, shown: usize) -> String {
    match all.saturating_sub(shown) {
        0 => String::new(),
        rest => format!("; and {rest} more"),
    }
}

/// What the senders of one traffic share: its start, whether it is over, the step it is in,
/// the gateway turn and the pace.
pub(super) struct Span<'s> {
    pub(super) started: Instant,
    /// Whether to stop, given the time since the start.
    pub(super) over: &'s (dyn Fn(Duration) -> bool + Sync),
    /// The index of the step under way.
    pub(super) step: &'s (dyn Fn() -> usize + Sync),
}

impl Case<'_> {
    /// Sends `load` until `span` says it is over: its clients together, each back to back,
    /// at most at its rate; each to the running gateways in turn (one going down is left
    /// out first, and the requests in flight to it answered); while none runs, they wait for
    /// one.
    pub(super) async fn send_load(&self, load: &Load, span: &Span<'_>) -> Sent {
        let pace = load
            .rate
            .map(|r| r.spacing())
            .filter(|s| !s.is_zero())
            .map(|s| {
                let mut pace = tokio::time::interval(s);
                pace.set_missed_tick_behavior(MissedTickBehavior::Delay);
                tokio::sync::Mutex::new(pace)
            });
        let turn = AtomicUsize::new(0);
        let clients = (0..load.clients).map(|c| self.client(c, load, span, &turn, pace.as_ref()));
        let mut sent = Sent::default();
        for one in futures_util::future::join_all(clients).await {
            sent.merge(one);
        }
        sent.elapsed_ms = span.started.elapsed().as_secs_f64() * 1000.0;
        sent
    }

    /// One client of [`Self::send_load`].
    async fn client(
        &self,
        client: u32,
        load: &Load,
        span: &Span<'_>,
        turn: &AtomicUsize,
        pace: Option<&tokio::sync::Mutex<Interval>>,
    ) -> Sent {
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let mut seen = Sent::default();
        while !(span.over)(span.started.elapsed()) {
            if let Some(pace) = pace {
                pace.lock().await.tick().await;
            }
            let sending = self.in_flight.read().await;
            let running = self.running_gateways();
            let Some(&gateway) =
                running.get(turn.fetch_add(1, Ordering::Relaxed) % running.len().max(1))
            else {
                drop(sending);
                // No gateway to serve: poll for one to come back.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let step = (span.step)();
            let sent_us = micros(span.started.elapsed());
            let answer = self
                .send(&self.gateways[gateway], &load.probe.request)
                .await;
            let at = Answer {
                sent_us,
                back_us: micros(span.started.elapsed()),
                client,
                gateway,
                step,
            };
            drop(sending);
            seen.sent += 1;
            let mut no_rule = false;
            let verdict = answer.and_then(|resp| {
                no_rule = serde_json::from_str::<GatewayError>(&resp.body)
                    .is_ok_and(|e| e.code == GatewayError::RULE_NOT_FOUND);
                if let Some(order) = &load.order {
                    match resp.header(UPSTREAM_HEADER) {
                        Some(up) if up == order.after => seen.after.push(at),
                        Some(up) if up == order.never => seen.never.push(at),
                        _ => {}
                    }
                }
                judge(&load.probe.expect, &resp, &self.names.locked())
            });
            if let Err(why) = verdict {
                seen.missed += 1;
                seen.no_rule += u32::from(no_rule);
                if seen.misses.len() < SHOWN {
                    seen.misses.push(Miss { at, why });
                }
            }
        }
        seen
    }

    /// Sends a step's `during` until `done` and for at least its `duration`.
    pub(super) async fn during(&self, during: &During, done: &AtomicBool) -> Sent {
        let least = during.duration.unwrap_or_default();
        let over = |elapsed: Duration| done.load(Ordering::Relaxed) && elapsed >= least;
        let span = Span {
            started: Instant::now(),
            over: &over,
            step: &|| 0,
        };
        self.send_load(&during.load, &span).await
    }

    /// Reports a step's `during` as a check of the step (`steps[i].during`); fails the step
    /// when an answer missed, an upstream answered out of order, or none was sent (the step
    /// then showed nothing about it).
    pub(super) fn during_report(
        &self,
        st: &StepSpec,
        index: usize,
        during: &During,
        sent: &Sent,
    ) -> StepResult<()> {
        let gateway = |i| self.gateway_name(i);
        let naming = Naming {
            label: "`during`".to_owned(),
            what: "during the step".to_owned(),
            path: &during.load.probe.request.path,
            steps: None,
            gateway: &gateway,
        };
        let mut failures = sent.failures(&naming, during.load.order.as_ref());
        failures.extend(created_without_rules_yet(sent, [st]));
        self.step_check(CheckReport {
            name: format!("during step `{}`", st.name),
            path: format!("steps[{index}].during"),
            step: Some(st.name.clone()),
            kind: "probe",
            outcome: match failures.is_empty() {
                true => CheckOutcome::Passed,
                false => CheckOutcome::Failed(failures),
            },
            elapsed_ms: sent.elapsed_ms,
            measurements: Measurements::Probe {
                sent: sent.sent,
                passed: sent.sent - sent.missed,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(sent_ms: u64, back_ms: u64, client: u32) -> Answer {
        Answer {
            sent_us: sent_ms * 1000,
            back_us: back_ms * 1000,
            client,
            gateway: 0,
            step: 0,
        }
    }

    fn naming<'a>(gateway: &'a dyn Fn(usize) -> String, steps: Option<Vec<&'a str>>) -> Naming<'a> {
        Naming {
            label: "`during`".into(),
            what: "during the step".into(),
            path: "/a",
            steps,
            gateway,
        }
    }

    fn order() -> Order {
        Order {
            after: "beta".into(),
            never: "alpha".into(),
        }
    }

    #[test]
    fn traffic_fails_on_a_miss_and_when_it_sent_nothing() {
        let one = |_| "the gateway".to_owned();
        let nothing = Sent {
            elapsed_ms: 12.4,
            ..Sent::default()
        };
        assert_eq!(
            nothing.failures(&naming(&one, None), None),
            [
                "`during` sent no request to /a in its 12 ms (no gateway was running, \
              or the step ended first), so it shows nothing"
            ]
        );
        let why = "status: expected 200, got 404".to_owned();
        let missed = Sent {
            sent: 9,
            missed: 5,
            misses: (1..=3)
                .map(|c| Miss {
                    at: answer(c, c + 1, c as u32),
                    why: why.clone(),
                })
                .collect(),
            elapsed_ms: 40.0,
            ..Sent::default()
        };
        assert_eq!(
            missed.failures(&naming(&one, None), None),
            [
                "5 of 9 answers during the step missed /a; first: at 1 ms, client 1 via the \
              gateway: status: expected 200, got 404; at 2 ms, client 2 via the gateway: \
              status: expected 200, got 404; at 3 ms, client 3 via the gateway: status: \
              expected 200, got 404; and 2 more"
            ]
        );
        let across = |i| format!("gateway[{i}]");
        let steps = Some(vec!["create", "switch"]);
        let mut late = missed.misses[0].clone();
        late.at.step = 1;
        late.at.gateway = 1;
        let one_miss = Sent {
            sent: 2,
            missed: 1,
            misses: vec![late],
            ..Sent::default()
        };
        assert_eq!(
            one_miss.failures(&naming(&across, steps), None),
            [
                "1 of 2 answers during the step missed /a; first: at 1 ms in step `switch`, \
              client 1 via gateway[1]: status: expected 200, got 404"
            ]
        );
        let passed = Sent {
            sent: 5,
            ..Sent::default()
        };
        assert!(passed.failures(&naming(&one, None), None).is_empty());
    }

    #[test]
    fn a_no_rule_miss_names_the_selector_created_with_its_rules() {
        let step: StepSpec = serde_norway::from_str(
            "name: move\nchanges:\n  - createSelector:\n      name: v2\n      plugin: divide\n\
             \x20     conditions: [{ paramType: uri, operator: startsWith, paramValue: /a }]\n\
             \x20     upstreams: [{ upstream: beta }]\n\
             \x20     rules: [{ name: all, conditions: [] }]\n\
             wait: { probe: { request: { path: /a }, expect: { upstream: beta } } }\n",
        )
        .unwrap();
        let sent = Sent {
            sent: 10,
            missed: 4,
            no_rule: 3,
            ..Sent::default()
        };
        let hint = created_without_rules_yet(&sent, [&step]).unwrap();
        assert!(
            hint.starts_with(
                "3 of the misses were -102 (a selector but no rule) while step `move` created \
                 selector `v2` with its rules"
            ),
            "{hint}"
        );
        // No -102 among the misses, or no selector created with rules: no hint.
        let other = Sent { no_rule: 0, ..sent };
        assert_eq!(created_without_rules_yet(&other, [&step]), None);
        let mut no_create = step;
        no_create.changes.clear();
        let sent = Sent {
            no_rule: 1,
            ..Sent::default()
        };
        assert_eq!(created_without_rules_yet(&sent, [&no_create]), None);
    }

    #[test]
    fn never_may_not_answer_a_request_sent_after_after_answered() {
        // beta's first answer comes back at 10 ms (client 1); a request sent at 11 ms by
        // client 0 reaching alpha is out of order, one sent at 9 ms (in flight meanwhile)
        // is not, nor one sent exactly at 10 ms.
        let after = [answer(8, 12, 0), answer(5, 10, 1)];
        let never = [answer(9, 13, 2), answer(10, 11, 2), answer(11, 12, 0)];
        let (first_back, late) = out_of_order(&after, &never).unwrap();
        assert_eq!(first_back, 10_000);
        assert_eq!(late, [&never[2]]);
        // beta never answered: no constraint.
        assert_eq!(out_of_order(&[], &never), None);

        let one = |_| "the gateway".to_owned();
        let seen = Sent {
            sent: 5,
            after: after.to_vec(),
            never: never.to_vec(),
            ..Sent::default()
        };
        assert_eq!(
            seen.failures(&naming(&one, None), Some(&order())),
            [
                "1 of 5 answers during the step to /a came from alpha after beta had answered (its \
              first answer came back at 10 ms; no request sent later may reach alpha): sent \
              at 11 ms, client 0 via the gateway"
            ]
        );
        let in_order = Sent {
            sent: 4,
            after: after.to_vec(),
            never: never[..2].to_vec(),
            ..Sent::default()
        };
        assert!(
            in_order
                .failures(&naming(&one, None), Some(&order()))
                .is_empty()
        );
    }
}
