//! Checks: each fits its kind, its request, the objects it names and its number ranges.

use super::*;

impl<'s> Validator<'s> {
    /// A check fits its kind: its request is valid, the selector and upstreams it names exist
    /// at that point, and its numbers are in range.
    pub(super) fn check(&mut self, c: &Check, at: &str, selectors: &HashSet<&str>) {
        // A probe's keys stand beside `name`; a judge's under its key.
        let base = match &c.kind {
            CheckKind::Probe(_) => at.to_owned(),
            kind => format!("{at}.{}", kind.name()),
        };
        self.method(&c.kind.request().method, &format!("{base}.request.method"));
        let selector = |v: &mut Self, name: &str| {
            if !selectors.contains(name) {
                v.report(
                    format!("{base}.selector"),
                    format!("no selector named `{name}` at this point"),
                );
            }
        };
        let at_least = |v: &mut Self, value: u32, min: u32, field: &str| {
            if value < min {
                v.report(
                    format!("{base}.{field}"),
                    format!("must be at least {min}, got {value}"),
                );
            }
        };
        let fraction = |v: &mut Self, value: f64, field: &str, open: bool| {
            let ok = if open {
                value > 0.0 && value < 1.0
            } else {
                (0.0..=1.0).contains(&value)
            };
            if !ok {
                let range = if open {
                    "strictly between 0 and 1"
                } else {
                    "between 0 and 1"
                };
                v.report(
                    format!("{base}.{field}"),
                    format!("must be {range}, got {value}"),
                );
            }
        };
        match &c.kind {
            CheckKind::Probe(p) => {
                self.expectation(&p.expect, at);
                at_least(self, p.repeat, 1, "repeat");
                for name in p.attempts.keys() {
                    self.known(name, format!("{base}.attempts.{name}"));
                }
            }
            CheckKind::Distribution(d) => {
                selector(self, &d.selector);
                at_least(self, d.requests, 1, "requests");
                at_least(self, d.concurrency, 1, "concurrency");
                fraction(self, d.alpha, "alpha", true);
                if let Some(shares) = &d.shares {
                    for (name, share) in shares {
                        let path = format!("{base}.shares.{name}");
                        self.known(name, path.clone());
                        if !(share.is_finite() && *share >= 0.0) {
                            self.report(path, format!("must be a number ≥ 0, got {share}"));
                        }
                    }
                    if shares.values().sum::<f64>() <= 0.0 {
                        self.report(
                            format!("{base}.shares"),
                            "at least one share must be positive",
                        );
                    }
                }
            }
            CheckKind::RoundRobin(r) => {
                selector(self, &r.selector);
                at_least(self, r.rounds, 1, "rounds");
            }
            CheckKind::Hash(h) => {
                selector(self, &h.selector);
                at_least(self, h.clients, 1, "clients");
                at_least(self, h.repeat, 1, "repeat");
                if h.clients > MAX_HASH_CLIENTS {
                    self.report(
                        format!("{base}.clients"),
                        format!("at most {MAX_HASH_CLIENTS}, got {}", h.clients),
                    );
                }
            }
            CheckKind::Steer(st) => {
                selector(self, &st.selector);
                self.known(&st.slow, format!("{base}.slow"));
                at_least(self, st.requests, 1, "requests");
                at_least(self, st.concurrency, 1, "concurrency");
                fraction(self, st.max_share, "maxShare", false);
                fraction(self, st.min_share, "minShare", false);
            }
            CheckKind::Latency(l) => {
                selector(self, &l.selector);
                at_least(self, l.consecutive, 1, "consecutive");
                if l.changes < 2 || l.changes % 2 != 0 {
                    self.report(
                        format!("{base}.changes"),
                        format!(
                            "must be an even number ≥ 2 (the selector ends as it started), got {}",
                            l.changes
                        ),
                    );
                }
                for (field, limits) in [("limits", &l.limits), ("probeLimits", &l.probe_limits)] {
                    for (q, set, least) in [
                        ("p95", limits.p95.is_some(), MIN_P95_CHANGES),
                        ("p99", limits.p99.is_some(), MIN_P99_CHANGES),
                    ] {
                        if set && l.changes < least {
                            self.report(
                                format!("{base}.{field}.{q}"),
                                format!(
                                    "a {q} limit needs `changes` ≥ {least} (with fewer the {q} is \
                                     the maximum), got {}",
                                    l.changes
                                ),
                            );
                        }
                    }
                }
                if l.interval.is_zero() || l.interval > MAX_LATENCY_INTERVAL {
                    self.report(
                        format!("{base}.interval"),
                        format!(
                            "must be between 1µs and 1ms (a latency is not quantised by its probe), got {}",
                            humantime::format_duration(l.interval)
                        ),
                    );
                }
            }
            CheckKind::Burst(b) => {
                if !(1..=MAX_BURST).contains(&b.requests) {
                    self.report(
                        format!("{base}.requests"),
                        format!("must be between 1 and {MAX_BURST}, got {}", b.requests),
                    );
                }
                for status in b.statuses.keys() {
                    if !(100..=599).contains(status) {
                        self.report(
                            format!("{base}.statuses.{status}"),
                            "not an HTTP status (100 to 599)",
                        );
                    }
                }
                let expected: u64 = b.statuses.values().map(|&n| u64::from(n)).sum();
                if expected != u64::from(b.requests) {
                    self.report(
                        format!("{base}.statuses"),
                        format!(
                            "the counts add up to {expected}, but {} requests are sent",
                            b.requests
                        ),
                    );
                }
            }
            CheckKind::Churn(ch) => {
                self.expectation(&ch.expect, &base);
                if !(1..=MAX_CHURN_RATE).contains(&ch.rate) {
                    self.report(
                        format!("{base}.rate"),
                        format!(
                            "must be between 1 and {MAX_CHURN_RATE} changes/s, got {}",
                            ch.rate
                        ),
                    );
                }
                if !(1..=MAX_CHURN_CONNECTIONS).contains(&ch.connections) {
                    self.report(
                        format!("{base}.connections"),
                        format!(
                            "must be between 1 and {MAX_CHURN_CONNECTIONS}, got {}",
                            ch.connections
                        ),
                    );
                }
                if !(1..=MAX_CHURN_REQUEST_RATE).contains(&ch.request_rate) {
                    self.report(
                        format!("{base}.requestRate"),
                        format!(
                            "must be between 1 and {MAX_CHURN_REQUEST_RATE} requests/s, got {}",
                            ch.request_rate
                        ),
                    );
                }
                if ch.duration < MIN_CHURN_DURATION {
                    self.report(
                        format!("{base}.duration"),
                        format!(
                            "must be at least {} (an achieved rate needs a few changes), got {}",
                            humantime::format_duration(MIN_CHURN_DURATION),
                            humantime::format_duration(ch.duration)
                        ),
                    );
                }
                if let Some(b) = &ch.burst {
                    if b.every.is_zero() || b.every > ch.duration {
                        self.report(
                            format!("{base}.burst.every"),
                            format!(
                                "must be positive and at most the duration ({}), got {}",
                                humantime::format_duration(ch.duration),
                                humantime::format_duration(b.every)
                            ),
                        );
                    }
                    if !(1..=MAX_CHURN_RATE).contains(&b.changes) {
                        self.report(
                            format!("{base}.burst.changes"),
                            format!("must be between 1 and {MAX_CHURN_RATE}, got {}", b.changes),
                        );
                    }
                }
            }
        }
    }
}

/// The most client addresses a hash check may ask for.
const MAX_HASH_CLIENTS: u32 = 1024;

/// The most requests a burst check sends at once.
const MAX_BURST: u32 = 256;

/// The most admin changes a second (and per burst) a churn check may ask for.
const MAX_CHURN_RATE: u32 = 1000;

/// The most requests a churn check keeps in flight on its stable route.
const MAX_CHURN_CONNECTIONS: u32 = 64;

/// The most requests a second a churn check sends on its stable route.
const MAX_CHURN_REQUEST_RATE: u32 = 100_000;

/// The shortest phase of a churn check.
const MIN_CHURN_DURATION: Duration = Duration::from_millis(500);

/// The longest probe interval of a latency check.
pub(crate) const MAX_LATENCY_INTERVAL: Duration = Duration::from_millis(1);
/// The fewest changes a latency check with a p95 limit makes (5% of them is one change).
pub(crate) const MIN_P95_CHANGES: u32 = 20;
/// The fewest changes a latency check with a p99 limit makes (1% of them is one change).
pub(crate) const MIN_P99_CHANGES: u32 = 100;
