//! The checkers, over every observed state of a run ([`Trace`]), not only the last:
//! - **prefix consistency**: group by group, the configs a gateway swaps in follow the
//!   admin's commits in order: never one the admin did not commit, never an older one after
//!   a newer (a restarted gateway starts empty and resumes where the admin is);
//! - **liveness**: once the last fault has healed and the last operation is acknowledged,
//!   every gateway holds the admin's last commit within the bound;
//! - **routing**: every answer the client got is what one of the configs its gateway held
//!   while the request was in flight says ([`routing::expect`]): never an answer no config
//!   of that moment explains (a mixture of two, or a config already replaced).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::routing::{self, Answer, Held};
use super::trace::{Entry, GROUPS, Groups, Trace};

/// A property a run broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    /// Which checker found it (`prefix`, `liveness`).
    pub(crate) checker: &'static str,
    /// What it saw.
    pub(crate) detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.checker, self.detail)
    }
}

/// Every gateway's applied configs follow the admin's commits, group by group.
pub(crate) fn prefix_consistency(trace: &Trace, gateways: u8) -> Result<(), Violation> {
    let commits: Vec<&Groups> = trace
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Commit { groups, .. } => Some(groups),
            _ => None,
        })
        .collect();
    let empty = Groups::of(&model::ConfigSet::default());
    for gateway in 0..gateways {
        for (g, group) in GROUPS.iter().enumerate() {
            let admin: Vec<&str> = dedup(commits.iter().map(|c| c.0[g].as_str()));
            // Where in the admin's sequence the gateway is (greedy subsequence match).
            let mut position = 0;
            let mut current: Option<&str> = None;
            let mut life = None;
            let mut synced = false;
            for entry in &trace.entries {
                let Entry::Applied {
                    at,
                    gateway: gw,
                    life: l,
                    groups,
                    ..
                } = entry
                else {
                    continue;
                };
                if *gw != gateway {
                    continue;
                }
                if life != Some(*l) {
                    // A new process: it starts empty, and its group counts only once synced.
                    life = Some(*l);
                    synced = false;
                    current = None;
                }
                let digest = groups.0[g].as_str();
                synced |= digest != empty.0[g];
                if !synced || current == Some(digest) {
                    continue;
                }
                current = Some(digest);
                match admin[position..].iter().position(|d| *d == digest) {
                    Some(i) => position += i,
                    None => {
                        let why = if admin.contains(&digest) {
                            "an older config than one it held before (it went back)"
                        } else {
                            "a config the admin never committed"
                        };
                        return Err(Violation {
                            checker: "prefix",
                            detail: format!(
                                "gw{gateway}.{l} at {} ms holds, in its {group} group, {why}: {digest}",
                                at.as_millis()
                            ),
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

/// Every gateway holds the admin's last commit by `settled + bound`.
pub(crate) fn liveness(
    trace: &Trace,
    gateways: u8,
    settled: Duration,
    bound: Duration,
) -> Result<(), Violation> {
    let Some((last, last_summary)) = trace.entries.iter().rev().find_map(|e| match e {
        Entry::Commit {
            groups, summary, ..
        } => Some((groups, summary)),
        _ => None,
    }) else {
        return Ok(());
    };
    let deadline = settled + bound;
    for gateway in 0..gateways {
        let applied: Vec<(Duration, u32, &Groups, &str)> = trace
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Applied {
                    at,
                    gateway: gw,
                    life,
                    groups,
                    summary,
                    ..
                } if *gw == gateway => Some((*at, *life, groups, summary.as_str())),
                _ => None,
            })
            .collect();
        let last_life = applied.last().map(|a| a.1);
        // The last life's entries from where it last came to hold the admin's last commit.
        let mut reached = None;
        for (at, life, groups, _) in &applied {
            if Some(*life) != last_life {
                continue;
            }
            if **groups == *last {
                reached.get_or_insert(*at);
            } else {
                reached = None;
            }
        }
        let holds = applied.last().map_or("nothing", |a| a.3);
        match reached {
            Some(at) if at <= deadline => {}
            Some(at) => {
                return Err(Violation {
                    checker: "liveness",
                    detail: format!(
                        "gw{gateway} reached the admin's last commit only at {} ms, over the \
                         bound ({} ms after the last heal or operation at {} ms)",
                        at.as_millis(),
                        bound.as_millis(),
                        settled.as_millis()
                    ),
                });
            }
            None => {
                return Err(Violation {
                    checker: "liveness",
                    detail: format!(
                        "gw{gateway} holds {holds}, not the admin's last commit ({last_summary}), \
                         {} ms after the last heal or operation at {} ms",
                        bound.as_millis(),
                        settled.as_millis()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Every answer the client got agrees with a config its gateway held while the request was
/// in flight.
pub(crate) fn routing(trace: &Trace) -> Result<(), Violation> {
    let mut held: HashMap<u8, Held> = HashMap::new();
    let empty = Arc::new(model::ConfigSet::default());
    for entry in &trace.entries {
        match entry {
            Entry::Started { at, gateway, .. } => {
                held.entry(*gateway)
                    .or_default()
                    .push(*at, Arc::clone(&empty));
            }
            Entry::Applied {
                at, gateway, set, ..
            } => held.entry(*gateway).or_default().push(*at, Arc::clone(set)),
            Entry::Request { exchange, .. } => {
                if matches!(exchange.answer, Answer::Unanswered(_)) {
                    continue;
                }
                let Some(configs) = held.get(&exchange.gateway) else {
                    continue;
                };
                let expects: Vec<routing::Expect> = configs
                    .between(exchange.sent, exchange.received)
                    .map(|set| routing::expect(set, &exchange.path))
                    .collect();
                if !expects.iter().any(|e| routing::agrees(&exchange.answer, e)) {
                    let mut said: Vec<String> = expects.iter().map(ToString::to_string).collect();
                    said.dedup();
                    return Err(Violation {
                        checker: "routing",
                        detail: format!(
                            "{exchange}, answered at {} ms; the config(s) it held meanwhile \
                             say {}",
                            exchange.received.as_millis(),
                            said.join(" or ")
                        ),
                    });
                }
            }
            Entry::Commit { .. } | Entry::Step { .. } => {}
        }
    }
    Ok(())
}

/// `items` without consecutive repeats.
fn dedup<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for item in items {
        if out.last() != Some(&item) {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use model::{ConfigSet, PluginData, SelectorData};

    use super::*;

    fn set(plugins: usize, selectors: &[&str]) -> ConfigSet {
        ConfigSet {
            plugins: (0..plugins)
                .map(|i| PluginData {
                    id: i.to_string(),
                    name: format!("p{i}"),
                    enabled: true,
                    ..PluginData::default()
                })
                .collect(),
            selectors: selectors
                .iter()
                .map(|id| SelectorData {
                    id: (*id).to_owned(),
                    name: (*id).to_owned(),
                    ..SelectorData::default()
                })
                .collect(),
            ..ConfigSet::default()
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The admin commits a, then a+b, then b; gateway 0 follows.
    fn admin_history() -> Trace {
        let mut t = Trace::default();
        t.commit(ms(0), &set(2, &[]));
        t.commit(ms(10), &set(2, &["a"]));
        t.commit(ms(20), &set(2, &["a", "b"]));
        t.commit(ms(30), &set(2, &["b"]));
        t
    }

    #[test]
    fn a_gateway_that_follows_the_admin_passes_both_checkers() {
        let mut t = admin_history();
        // Plugins first, then the selectors of a later commit: groups move one at a time.
        t.applied(ms(5), 0, 0, &set(2, &[]));
        t.applied(ms(25), 0, 0, &set(2, &["a", "b"]));
        t.applied(ms(35), 0, 0, &set(2, &["b"]));
        // A restart: the new process starts empty and jumps to the latest.
        t.applied(ms(40), 0, 1, &set(2, &[]));
        t.applied(ms(41), 0, 1, &set(2, &["b"]));
        assert_eq!(prefix_consistency(&t, 1), Ok(()));
        assert_eq!(liveness(&t, 1, ms(30), ms(20)), Ok(()));
    }

    #[test]
    fn a_config_the_admin_never_committed_is_caught() {
        let mut t = admin_history();
        t.applied(ms(25), 0, 0, &set(2, &["b", "c"]));
        let v = prefix_consistency(&t, 1).unwrap_err();
        assert_eq!(v.checker, "prefix");
        assert!(v.detail.contains("never committed"), "{v}");
    }

    #[test]
    fn going_back_is_caught() {
        let mut t = admin_history();
        t.applied(ms(25), 0, 0, &set(2, &["a", "b"]));
        t.applied(ms(26), 0, 0, &set(2, &["a"]));
        let v = prefix_consistency(&t, 1).unwrap_err();
        assert!(v.detail.contains("went back"), "{v}");
    }

    #[test]
    fn a_gateway_left_behind_or_late_fails_liveness() {
        let mut t = admin_history();
        t.applied(ms(25), 0, 0, &set(2, &["a", "b"]));
        let v = liveness(&t, 1, ms(30), ms(20)).unwrap_err();
        assert!(v.detail.contains("not the admin's last commit"), "{v}");
        t.applied(ms(60), 0, 0, &set(2, &["b"]));
        let v = liveness(&t, 1, ms(30), ms(20)).unwrap_err();
        assert!(v.detail.contains("only at 60 ms"), "{v}");
        assert_eq!(liveness(&t, 1, ms(30), ms(40)), Ok(()));
    }

    /// Gateway 0 starts, swaps in a route to alpha at 10 ms, moves it to beta at 20 ms.
    fn routed() -> Trace {
        let mut t = Trace::default();
        t.started(ms(0), 0, 0);
        t.applied(ms(10), 0, 0, &routing::tests::set("alpha", true));
        t.applied(ms(20), 0, 0, &routing::tests::set("beta", true));
        t
    }

    fn asked(t: &mut Trace, sent: u64, received: u64, upstream: Option<&str>) {
        let answer = match upstream {
            Some(u) => Answer::Served {
                selector: "s0".to_owned(),
                rule: "r0".to_owned(),
                upstream: u.to_owned(),
            },
            None => Answer::Refused {
                status: 404,
                code: Some(model::GatewayError::CANNOT_FIND_URL),
            },
        };
        t.request(
            ms(received),
            routing::Exchange {
                sent: ms(sent),
                received: ms(received),
                gateway: 0,
                path: "/conv/1/0".to_owned(),
                answer,
            },
        );
    }

    #[test]
    fn answers_of_a_config_held_in_flight_pass_the_routing_checker() {
        let mut t = routed();
        asked(&mut t, 1, 2, None);
        asked(&mut t, 12, 14, Some("alpha"));
        // In flight across the swap: either config.
        asked(&mut t, 18, 22, Some("alpha"));
        asked(&mut t, 18, 22, Some("beta"));
        asked(&mut t, 25, 26, Some("beta"));
        assert_eq!(routing(&t), Ok(()));
    }

    #[test]
    fn an_answer_of_a_config_already_replaced_fails_the_routing_checker() {
        let mut t = routed();
        asked(&mut t, 25, 26, Some("alpha"));
        let v = routing(&t).unwrap_err();
        assert_eq!(v.checker, "routing");
        assert!(v.detail.contains("200 by beta"), "{v}");
        // Before any route: the empty config of a fresh process says -106.
        let mut t = routed();
        asked(&mut t, 2, 3, Some("alpha"));
        assert!(routing(&t).is_err());
    }

    #[test]
    fn a_gateway_that_never_synced_fails_liveness() {
        let t = admin_history();
        let v = liveness(&t, 1, ms(30), ms(20)).unwrap_err();
        assert!(v.detail.contains("holds nothing"), "{v}");
    }
}
