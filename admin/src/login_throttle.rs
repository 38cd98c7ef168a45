//! Login throttling, and how login failures are logged.
//!
//! Failed logins lock out the pair of user name and client address they came with, for a
//! time that doubles with each further failure up to a cap; a lockout is answered before the
//! password is checked, so a guesser gets neither an answer nor Argon2 time. Failures counted
//! on the user name alone (from any address) or on the address alone (for any name) never
//! refuse an attempt: they only delay it, by at most [`LoginThrottle::max_delay`], so failures
//! from other addresses can slow a correct password down but never turn it away.
//!
//! The table of failures is bounded and swept by age. Failure warnings go through a
//! [`WarnBudget`] and show user names through [`loggable`].

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use model::lock::MutexExt;

/// How many keys the table remembers; past that, forgotten entries are swept and then the
/// least recently failed ones make room.
const MAX_ENTRIES: usize = 10_000;

/// How often the table is swept of entries older than the window.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// How failed logins are throttled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginThrottle {
    /// Failed logins allowed per (user name, client address) before a lockout, and per user
    /// name or per client address before attempts are delayed; 0 turns throttling off.
    pub max_failures: u32,
    /// The first lockout; each further failure doubles it.
    pub lockout: Duration,
    /// The longest lockout, and the window: a key whose last failure is older than this (and
    /// which is not locked out) starts again from zero and is swept from the table.
    pub max_lockout: Duration,
    /// The longest delay of an attempt for the failures of its user name or its address
    /// alone: it doubles from an eighth of this with each failure past `max_failures`.
    pub max_delay: Duration,
}

impl Default for LoginThrottle {
    /// 5 failures, then lockouts of 1 s doubling up to 5 min, delays up to 1 s.
    fn default() -> Self {
        Self {
            max_failures: 5,
            lockout: Duration::from_secs(1),
            max_lockout: Duration::from_secs(300),
            max_delay: Duration::from_secs(1),
        }
    }
}

/// What a login attempt counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// The user name from this address: locked out after too many failures.
    Pair(Box<str>, Option<IpAddr>),
    /// The user name from anywhere: delayed.
    User(Box<str>),
    /// An IPv4 address, or an IPv6 /64 (one host usually has a whole one), for any name:
    /// delayed.
    Address(IpAddr),
}

/// An IPv4 address, or the /64 prefix of an IPv6 one (a mapped IPv4 address is that address).
fn prefix(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        v4 => v4,
    }
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
    locked_until: Option<Instant>,
}

/// The failures seen per (user, address), user name and client address.
#[derive(Debug)]
pub(crate) struct Throttle {
    config: LoginThrottle,
    /// Failures per key and the time of the last sweep; a poisoned lock is taken over, as
    /// each change leaves the map whole.
    table: Mutex<(HashMap<Key, Failures>, Option<Instant>)>,
}

impl LoginThrottle {
    /// The lockout after the `count`th failure in a row.
    fn lockout_after(&self, count: u32) -> Option<Duration> {
        let over = count.checked_sub(self.max_failures)?;
        Some(doubled(self.lockout, over).min(self.max_lockout))
    }

    /// The delay of an attempt after `count` failures in a row.
    fn delay_after(&self, count: u32) -> Duration {
        count
            .checked_sub(self.max_failures)
            .map_or(Duration::ZERO, |over| {
                doubled(self.max_delay / 8, over).min(self.max_delay)
            })
    }

    /// Whether `failures` is old enough to forget at `now`.
    fn forgotten(&self, failures: &Failures, now: Instant) -> bool {
        failures.locked_until.is_none_or(|until| until <= now)
            && now.saturating_duration_since(failures.last) >= self.max_lockout
    }
}

/// `base` doubled `times` times, saturating.
fn doubled(base: Duration, times: u32) -> Duration {
    base.checked_mul(2u32.checked_pow(times).unwrap_or(u32::MAX))
        .unwrap_or(Duration::MAX)
}

impl Throttle {
    /// A throttle with no failures yet.
    pub(crate) fn new(config: LoginThrottle) -> Self {
        Self {
            config,
            table: Mutex::new((HashMap::new(), None)),
        }
    }

    /// The pair key, then the keys that only delay.
    fn keys(user: &str, address: Option<IpAddr>) -> impl Iterator<Item = Key> {
        let address = address.map(prefix);
        [Key::Pair(user.into(), address), Key::User(user.into())]
            .into_iter()
            .chain(address.map(Key::Address))
    }

    /// Starts a login attempt for `user` from `address` at `now`: refused with the time left
    /// while the pair is locked out; otherwise allowed after the delay answered. The attempt
    /// counts as a failure until [`Self::succeeded`] says it was not, so guesses sent in
    /// parallel cannot all get past this check before the first one fails.
    pub(crate) fn begin(
        &self,
        user: &str,
        address: Option<IpAddr>,
        now: Instant,
    ) -> Result<Duration, Duration> {
        if self.config.max_failures == 0 {
            return Ok(Duration::ZERO);
        }
        let mut guard = self.table.locked();
        let (table, last_sweep) = &mut *guard;
        if last_sweep.is_none_or(|at| now.saturating_duration_since(at) >= SWEEP_INTERVAL) {
            table.retain(|_, failures| !self.config.forgotten(failures, now));
            *last_sweep = Some(now);
        }
        let mut keys = Self::keys(user, address);
        let pair = keys.next().expect("the pair key comes first");
        if let Some(left) = table
            .get(&pair)
            .and_then(|failures| failures.locked_until?.checked_duration_since(now))
            .filter(|left| !left.is_zero())
        {
            return Err(left);
        }
        let mut delay = Duration::ZERO;
        for key in std::iter::once(pair).chain(keys) {
            let locks = matches!(key, Key::Pair(..));
            if !table.contains_key(&key) && table.len() >= MAX_ENTRIES {
                self.make_room(table, now);
            }
            let failures = table.entry(key).or_insert(Failures {
                count: 0,
                last: now,
                locked_until: None,
            });
            if self.config.forgotten(failures, now) {
                failures.count = 0;
            }
            if !locks {
                delay = delay.max(self.config.delay_after(failures.count));
            }
            failures.count = failures.count.saturating_add(1);
            failures.last = now;
            failures.locked_until = self
                .config
                .lockout_after(failures.count)
                .filter(|_| locks)
                .map(|lockout| {
                    now.checked_add(lockout)
                        .unwrap_or(now + self.config.max_lockout)
                });
        }
        Ok(delay)
    }

    /// The attempt begun for `user` from `address` had the right password: the pair and the
    /// user start over; the address no longer counts this attempt.
    pub(crate) fn succeeded(&self, user: &str, address: Option<IpAddr>) {
        let mut guard = self.table.locked();
        let table = &mut guard.0;
        for key in Self::keys(user, address) {
            if let Key::Address(_) = key
                && let Some(failures) = table.get_mut(&key)
                && failures.count > 1
            {
                failures.count -= 1;
            } else {
                table.remove(&key);
            }
        }
    }

    /// How many keys the table holds.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> usize {
        self.table.locked().0.len()
    }

    /// Sweeps forgotten entries, then, if still full, the least recently failed one.
    fn make_room(&self, table: &mut HashMap<Key, Failures>, now: Instant) {
        table.retain(|_, failures| !self.config.forgotten(failures, now));
        if table.len() >= MAX_ENTRIES
            && let Some(oldest) = table
                .iter()
                .min_by_key(|(_, failures)| failures.last)
                .map(|(key, _)| key.clone())
        {
            table.remove(&oldest);
        }
    }
}

/// How many characters of a user name [`loggable`] shows.
const LOGGED_NAME_CHARS: usize = 64;

/// `name` as it may go into a log line: its first 64 characters, escaped (`\n`, `\u{1b}`),
/// with `…` when cut, so a name can neither forge log lines nor flood the log.
pub(crate) fn loggable(name: &str) -> String {
    let mut shown: String = name
        .chars()
        .take(LOGGED_NAME_CHARS)
        .flat_map(char::escape_debug)
        .collect();
    if name.chars().nth(LOGGED_NAME_CHARS).is_some() {
        shown.push('…');
    }
    shown
}

/// A budget of log lines per second: past it, lines are dropped and counted, and the count
/// is reported with the next line let through.
#[derive(Debug)]
pub(crate) struct WarnBudget {
    per_second: u32,
    /// Start of the current second, lines let through in it, lines dropped since the last
    /// one let through.
    state: Mutex<(Option<Instant>, u32, u64)>,
}

impl WarnBudget {
    /// A budget of `per_second` lines a second.
    pub(crate) fn new(per_second: u32) -> Self {
        Self {
            per_second,
            state: Mutex::new((None, 0, 0)),
        }
    }

    /// Whether a line may be logged at `now`: `Some(lines dropped since the last one)`, or
    /// `None` (dropped and counted).
    pub(crate) fn admit(&self, now: Instant) -> Option<u64> {
        let mut guard = self.state.locked();
        let (start, used, dropped) = &mut *guard;
        if start.is_none_or(|at| now.saturating_duration_since(at) >= Duration::from_secs(1)) {
            *start = Some(now);
            *used = 0;
        }
        if *used >= self.per_second {
            *dropped += 1;
            return None;
        }
        *used += 1;
        Some(std::mem::take(dropped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn throttle(max_failures: u32) -> Throttle {
        Throttle::new(LoginThrottle {
            max_failures,
            lockout: SECOND,
            max_lockout: 8 * SECOND,
            max_delay: SECOND,
        })
    }

    fn addr(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    const NO_DELAY: Result<Duration, Duration> = Ok(Duration::ZERO);

    #[test]
    fn lockouts_and_delays_double_up_to_their_caps() {
        let config = LoginThrottle {
            max_failures: 5,
            lockout: SECOND,
            max_lockout: 8 * SECOND,
            max_delay: SECOND,
        };
        let lockouts: Vec<_> = (1..=10).map(|n| config.lockout_after(n)).collect();
        let s = |n| Some(n * SECOND);
        assert_eq!(
            lockouts,
            [None, None, None, None, s(1), s(2), s(4), s(8), s(8), s(8)]
        );
        assert_eq!(config.lockout_after(u32::MAX), s(8), "no overflow");
        let delays: Vec<_> = (4..=10)
            .map(|n| config.delay_after(n).as_millis())
            .collect();
        assert_eq!(delays, [0, 125, 250, 500, 1000, 1000, 1000]);
        assert_eq!(config.delay_after(u32::MAX), SECOND, "no overflow");
    }

    #[test]
    fn failures_lock_out_the_pair_and_only_delay_the_user_and_the_address() {
        let t = throttle(3);
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(t.begin("admin", addr("10.0.0.1"), now), NO_DELAY);
        }
        // The pair is locked out.
        assert_eq!(t.begin("admin", addr("10.0.0.1"), now), Err(SECOND));
        // The user from elsewhere, and the address for another user: delayed, not refused.
        assert_eq!(t.begin("admin", addr("10.0.0.2"), now), Ok(SECOND / 8));
        assert_eq!(t.begin("root", addr("10.0.0.1"), now), Ok(SECOND / 8));
        assert_eq!(t.begin("root", addr("10.0.0.2"), now), NO_DELAY);
        // The lockout ends, and the next failure locks the pair for twice as long.
        let later = now + SECOND;
        assert_eq!(t.begin("admin", addr("10.0.0.1"), later), Ok(SECOND / 4));
        assert_eq!(t.begin("admin", addr("10.0.0.1"), later), Err(2 * SECOND));
        // However many failures, a user's delay stays bounded.
        for i in 0..50 {
            let delay = t
                .begin("admin", addr(&format!("10.1.0.{i}")), later)
                .unwrap();
            assert!(delay <= SECOND, "{delay:?}");
        }
        assert_eq!(t.begin("admin", addr("10.2.0.1"), later), Ok(SECOND));
    }

    #[test]
    fn a_success_clears_the_pair_and_the_user_and_old_failures_are_forgotten() {
        let t = throttle(2);
        let now = Instant::now();
        assert_eq!(t.begin("admin", addr("10.0.0.1"), now), NO_DELAY);
        t.succeeded("admin", addr("10.0.0.1"));
        assert_eq!(t.begin("admin", addr("10.0.0.1"), now), NO_DELAY);
        assert_eq!(t.begin("admin", addr("10.0.0.1"), now), NO_DELAY);
        assert!(t.begin("admin", addr("10.0.0.1"), now).is_err());
        t.succeeded("admin", addr("10.0.0.1"));
        assert_eq!(t.begin("admin", addr("10.0.0.2"), now), NO_DELAY);
        // One failure, then quiet for the longest lockout: forgotten.
        let later = now + 8 * SECOND;
        assert_eq!(t.begin("admin", addr("10.0.0.1"), later), NO_DELAY);
        assert_eq!(
            t.begin("admin", addr("10.0.0.1"), later),
            NO_DELAY,
            "the failure before the quiet no longer counts"
        );
        assert_eq!(t.begin("admin", addr("10.0.0.1"), later), Err(SECOND));
    }

    #[test]
    fn ipv6_addresses_count_per_64_prefix() {
        let t = throttle(1);
        let now = Instant::now();
        assert_eq!(t.begin("a", addr("2001:db8::1"), now), NO_DELAY);
        assert_eq!(t.begin("a", addr("2001:db8::ffff:2"), now), Err(SECOND));
        assert_eq!(t.begin("c", addr("2001:db8:0:1::1"), now), NO_DELAY);
        assert_eq!(t.begin("d", addr("::ffff:10.0.0.9"), now), NO_DELAY);
        assert_eq!(
            t.begin("d", addr("10.0.0.9"), now),
            Err(SECOND),
            "a mapped IPv4 address is that address"
        );
    }

    #[test]
    fn zero_failures_turns_throttling_off() {
        let t = throttle(0);
        let now = Instant::now();
        for _ in 0..100 {
            assert_eq!(t.begin("admin", addr("10.0.0.1"), now), NO_DELAY);
        }
    }

    #[test]
    fn the_table_is_bounded() {
        let t = throttle(5);
        let now = Instant::now();
        for i in 0..MAX_ENTRIES + 10 {
            assert_eq!(t.begin(&format!("user{i}"), None, now), NO_DELAY);
        }
        assert_eq!(t.entries(), MAX_ENTRIES);
    }

    #[test]
    fn the_table_is_swept_by_age() {
        let t = throttle(5);
        let now = Instant::now();
        for i in 0..100 {
            assert!(t.begin(&format!("user{i}"), addr("10.0.0.1"), now).is_ok());
        }
        // 100 pairs, 100 users, one address.
        assert_eq!(t.entries(), 201);
        // Within the window nothing goes; past it, everything old does.
        let _ = t.begin("late", addr("10.0.0.2"), now + 7 * SECOND);
        assert_eq!(t.entries(), 204);
        let _ = t.begin("later", addr("10.0.0.3"), now + 8 * SECOND);
        assert_eq!(t.entries(), 6, "only `late` and `later` are left");
    }

    #[test]
    fn names_are_logged_escaped_and_cut() {
        assert_eq!(
            loggable("admin\n2026-01-01 INFO forged\u{1b}[31m"),
            "admin\\n2026-01-01 INFO forged\\u{1b}[31m"
        );
        let long = "é".repeat(100);
        assert_eq!(loggable(&long), format!("{}…", "é".repeat(64)));
        assert_eq!(loggable(&"x".repeat(64)), "x".repeat(64));
    }

    #[test]
    fn the_warn_budget_counts_what_it_drops() {
        let budget = WarnBudget::new(2);
        let now = Instant::now();
        assert_eq!(budget.admit(now), Some(0));
        assert_eq!(budget.admit(now), Some(0));
        assert_eq!(budget.admit(now), None);
        assert_eq!(budget.admit(now + SECOND / 2), None);
        assert_eq!(budget.admit(now + SECOND), Some(2));
        assert_eq!(budget.admit(now + SECOND), Some(0));
        assert_eq!(budget.admit(now + SECOND), None);
    }
}
