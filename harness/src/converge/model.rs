//! The reference model: the routes as the admin acknowledged them. An operation enters it only
//! once the admin answered it with success.

use std::collections::{BTreeMap, BTreeSet};

use super::history::{Op, Upstream};

/// What a route should answer once the gateways have converged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// HTTP 200 from this upstream.
    Served(Upstream),
    /// HTTP 200 from either upstream: both are registered for the application, and the
    /// registered rule balances at random (both warming up, so with equal weights).
    Either,
    /// HTTP 404, route absent (gateway code -107 or -102).
    Absent,
    /// HTTP 404 with gateway code -106: the divide plugin is disabled, so no route is served
    /// whatever its state.
    Unrouted,
}

/// One route as acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Route {
    upstream: Upstream,
    enabled: bool,
    rule: bool,
}

/// The acknowledged state of every route of a history.
#[derive(Debug, Clone, Default)]
pub(crate) struct Model {
    routes: BTreeMap<u8, Route>,
    /// Per registered application, the upstreams whose addresses it registered.
    registered: BTreeMap<u8, BTreeSet<Upstream>>,
    /// Whether the divide plugin is disabled (it starts enabled).
    plugin_off: bool,
}

impl Model {
    /// Whether `op` means anything now (a route must exist to be enabled or deleted, a rule
    /// to be deleted); the runner sends only those.
    pub(crate) fn applies(&self, op: Op) -> bool {
        match op {
            Op::Put { .. } | Op::Plugin { .. } | Op::Register { .. } => true,
            Op::Enable { key, .. } | Op::Delete { key } => self.routes.contains_key(&key),
            Op::DeleteRule { key } => self.routes.get(&key).is_some_and(|r| r.rule),
        }
    }

    /// Whether acknowledging `op` now makes the admin publish a change (in the etcd mode: at
    /// least one etcd write): every operation that applies does, but a registration of an
    /// upstream the application has registered already (the admin changes nothing).
    pub(crate) fn writes(&self, op: Op) -> bool {
        match op {
            Op::Register { key, upstream } => self
                .registered
                .get(&key)
                .is_none_or(|u| !u.contains(&upstream)),
            _ => self.applies(op),
        }
    }

    /// Whether the route's rule exists.
    pub(crate) fn has_rule(&self, key: u8) -> bool {
        self.routes.get(&key).is_some_and(|r| r.rule)
    }

    /// Whether the route's selector is enabled (a new one is).
    pub(crate) fn enabled(&self, key: u8) -> bool {
        self.routes.get(&key).is_none_or(|r| r.enabled)
    }

    /// The upstream the route sends to (served or not), if it exists.
    pub(crate) fn upstream(&self, key: u8) -> Option<Upstream> {
        self.routes.get(&key).map(|r| r.upstream)
    }

    /// Records `op` as acknowledged by the admin.
    pub(crate) fn acknowledged(&mut self, op: Op) {
        match op {
            Op::Put { key, upstream } => {
                let route = self.routes.entry(key).or_insert(Route {
                    upstream,
                    enabled: true,
                    rule: true,
                });
                route.upstream = upstream;
                route.rule = true;
            }
            Op::Enable { key, on } => {
                if let Some(r) = self.routes.get_mut(&key) {
                    r.enabled = on;
                }
            }
            Op::Delete { key } => {
                self.routes.remove(&key);
            }
            Op::DeleteRule { key } => {
                if let Some(r) = self.routes.get_mut(&key) {
                    r.rule = false;
                }
            }
            Op::Plugin { on } => self.plugin_off = !on,
            Op::Register { key, upstream } => {
                self.registered.entry(key).or_default().insert(upstream);
            }
        }
    }

    /// What registered application `key`'s API path must answer: served by its one
    /// upstream, by either once both registered, absent before any registration.
    pub(crate) fn expect_registered(&self, key: u8) -> Expect {
        if self.plugin_off {
            return Expect::Unrouted;
        }
        let upstreams = self.registered.get(&key);
        match upstreams
            .map(|u| u.iter().copied().collect::<Vec<_>>())
            .as_deref()
        {
            Some([one]) => Expect::Served(*one),
            Some([_, _, ..]) => Expect::Either,
            _ => Expect::Absent,
        }
    }

    /// What route `key` must answer.
    pub(crate) fn expect(&self, key: u8) -> Expect {
        if self.plugin_off {
            return Expect::Unrouted;
        }
        match self.routes.get(&key) {
            Some(r) if r.enabled && r.rule => Expect::Served(r.upstream),
            _ => Expect::Absent,
        }
    }

    /// The routes that exist.
    #[cfg(test)]
    fn keys(&self) -> impl Iterator<Item = u8> + '_ {
        self.routes.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_acknowledged_operations() {
        let mut m = Model::default();
        assert!(!m.applies(Op::Delete { key: 0 }));
        assert!(!m.writes(Op::Delete { key: 0 }));
        assert!(m.writes(Op::Plugin { on: true }));
        m.acknowledged(Op::Put {
            key: 0,
            upstream: Upstream::Alpha,
        });
        assert_eq!(m.expect(0), Expect::Served(Upstream::Alpha));
        m.acknowledged(Op::Enable { key: 0, on: false });
        assert_eq!(m.expect(0), Expect::Absent);
        m.acknowledged(Op::Put {
            key: 0,
            upstream: Upstream::Beta,
        });
        assert_eq!(
            m.expect(0),
            Expect::Absent,
            "a put keeps the selector disabled"
        );
        m.acknowledged(Op::Enable { key: 0, on: true });
        assert_eq!(m.expect(0), Expect::Served(Upstream::Beta));
        m.acknowledged(Op::DeleteRule { key: 0 });
        assert_eq!(m.expect(0), Expect::Absent);
        assert!(!m.applies(Op::DeleteRule { key: 0 }));
        m.acknowledged(Op::Put {
            key: 0,
            upstream: Upstream::Alpha,
        });
        assert_eq!(m.expect(0), Expect::Served(Upstream::Alpha));
        m.acknowledged(Op::Delete { key: 0 });
        assert_eq!(m.expect(0), Expect::Absent);
        assert_eq!(m.keys().count(), 0);
    }

    #[test]
    fn a_second_registration_adds_an_upstream_and_a_repeated_one_changes_nothing() {
        let mut m = Model::default();
        let alpha = Op::Register {
            key: 1,
            upstream: Upstream::Alpha,
        };
        assert!(m.applies(alpha));
        assert!(m.writes(alpha));
        assert_eq!(m.expect_registered(1), Expect::Absent);
        m.acknowledged(alpha);
        assert_eq!(m.expect_registered(1), Expect::Served(Upstream::Alpha));
        assert!(
            !m.writes(alpha),
            "the same registration again changes nothing"
        );
        m.acknowledged(alpha);
        assert_eq!(m.expect_registered(1), Expect::Served(Upstream::Alpha));
        assert!(m.writes(Op::Register {
            key: 1,
            upstream: Upstream::Beta
        }));
        assert_eq!(
            m.expect_registered(0),
            Expect::Absent,
            "applications are apart"
        );
        m.acknowledged(Op::Register {
            key: 1,
            upstream: Upstream::Beta,
        });
        assert_eq!(m.expect_registered(1), Expect::Either);
        m.acknowledged(Op::Plugin { on: false });
        assert_eq!(m.expect_registered(1), Expect::Unrouted);
        m.acknowledged(Op::Plugin { on: true });
        assert_eq!(m.expect_registered(1), Expect::Either);
        assert_eq!(
            (m.keys().count(), m.expect(1)),
            (0, Expect::Absent),
            "registrations share no key with routes"
        );
    }

    #[test]
    fn a_disabled_plugin_unroutes_every_route_and_keeps_their_state() {
        let mut m = Model::default();
        m.acknowledged(Op::Put {
            key: 0,
            upstream: Upstream::Beta,
        });
        assert!(m.applies(Op::Plugin { on: false }));
        m.acknowledged(Op::Plugin { on: false });
        assert_eq!(
            (m.expect(0), m.expect(1)),
            (Expect::Unrouted, Expect::Unrouted)
        );
        m.acknowledged(Op::Delete { key: 0 });
        m.acknowledged(Op::Put {
            key: 1,
            upstream: Upstream::Alpha,
        });
        assert_eq!(m.expect(1), Expect::Unrouted);
        m.acknowledged(Op::Plugin { on: true });
        assert_eq!(
            (m.expect(0), m.expect(1)),
            (Expect::Absent, Expect::Served(Upstream::Alpha))
        );
    }
}
