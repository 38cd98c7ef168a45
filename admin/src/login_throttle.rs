//! Login throttling: failed logins lock out the user name and the client address they came
//! with, for a time that doubles with each further failure up to a cap. A successful login
//! clears both. Lockouts are answered before the password is checked, so a guesser gets
//! neither an answer nor Argon2 time.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How many users and addresses the table remembers; past that, forgotten entries are swept
/// and then the least recently failed ones make room.
const MAX_ENTRIES: usize = 10_000;

/// How failed logins are throttled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginThrottle {
    /// Failed logins allowed per user name and per client address before a lockout; 0 turns
    /// throttling off.
    pub max_failures: u32,
    /// The first lockout; each further failure doubles it.
    pub lockout: Duration,
    /// The longest lockout. A user or address whose last failure is older than this (and who
    /// is not locked out) starts again from zero.
    pub max_lockout: Duration,
}

impl Default for LoginThrottle {
    /// 5 failures, then 1 s doubling up to 5 min.
    fn default() -> Self {
        Self {
            max_failures: 5,
            lockout: Duration::from_secs(1),
            max_lockout: Duration::from_secs(300),
        }
    }
}

/// What a login attempt counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    User(String),
    /// An IPv4 address, or an IPv6 /64 (one host usually has a whole one).
    Address(IpAddr),
}

impl Key {
    fn address(address: IpAddr) -> Key {
        Key::Address(match address.to_canonical() {
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(prefix.into())
            }
            v4 => v4,
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
    locked_until: Option<Instant>,
}

/// The failures seen per user name and client address.
#[derive(Debug)]
pub(crate) struct Throttle {
    config: LoginThrottle,
    /// Failures per key; a poisoned lock is taken over, as each change leaves the map whole.
    table: Mutex<HashMap<Key, Failures>>,
}

impl LoginThrottle {
    /// The lockout after the `count`th failure in a row.
    fn lockout_after(&self, count: u32) -> Option<Duration> {
        let over = count.checked_sub(self.max_failures)?;
        let doubled = self
            .lockout
            .checked_mul(2u32.checked_pow(over).unwrap_or(u32::MAX))
            .unwrap_or(Duration::MAX);
        Some(doubled.min(self.max_lockout))
    }

    /// Whether `failures` is old enough to forget at `now`.
    fn forgotten(&self, failures: &Failures, now: Instant) -> bool {
        failures.locked_until.is_none_or(|until| until <= now)
            && now.saturating_duration_since(failures.last) >= self.max_lockout
    }
}

impl Throttle {
    /// A throttle with no failures yet.
    pub(crate) fn new(config: LoginThrottle) -> Self {
        Self {
            config,
            table: Mutex::new(HashMap::new()),
        }
    }

    fn keys(user: &str, address: Option<IpAddr>) -> impl Iterator<Item = Key> {
        std::iter::once(Key::User(user.to_owned())).chain(address.map(Key::address))
    }

    /// Starts a login attempt for `user` from `address` at `now`: refused with the time left
    /// while either is locked out. Otherwise the attempt counts as a failure until
    /// [`Self::succeeded`] says it was not, so guesses sent in parallel cannot all get past
    /// this check before the first one fails.
    pub(crate) fn begin(
        &self,
        user: &str,
        address: Option<IpAddr>,
        now: Instant,
    ) -> Result<(), Duration> {
        if self.config.max_failures == 0 {
            return Ok(());
        }
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let wait = Self::keys(user, address)
            .filter_map(|key| table.get(&key)?.locked_until)
            .filter_map(|until| until.checked_duration_since(now))
            .filter(|left| !left.is_zero())
            .max();
        if let Some(wait) = wait {
            return Err(wait);
        }
        for key in Self::keys(user, address) {
            if !table.contains_key(&key) && table.len() >= MAX_ENTRIES {
                self.make_room(&mut table, now);
            }
            let failures = table.entry(key).or_insert(Failures {
                count: 0,
                last: now,
                locked_until: None,
            });
            if self.config.forgotten(failures, now) {
                failures.count = 0;
            }
            failures.count = failures.count.saturating_add(1);
            failures.last = now;
            failures.locked_until = self.config.lockout_after(failures.count).map(|lockout| {
                now.checked_add(lockout)
                    .unwrap_or(now + self.config.max_lockout)
            });
        }
        Ok(())
    }

    /// The attempt begun for `user` from `address` had the right password: both start over.
    pub(crate) fn succeeded(&self, user: &str, address: Option<IpAddr>) {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        for key in Self::keys(user, address) {
            table.remove(&key);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn throttle(max_failures: u32) -> Throttle {
        Throttle::new(LoginThrottle {
            max_failures,
            lockout: SECOND,
            max_lockout: 8 * SECOND,
        })
    }

    fn addr(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn lockouts_double_up_to_the_cap() {
        let config = LoginThrottle {
            max_failures: 5,
            lockout: SECOND,
            max_lockout: 8 * SECOND,
        };
        let lockouts: Vec<_> = (1..=10).map(|n| config.lockout_after(n)).collect();
        let s = |n| Some(n * SECOND);
        assert_eq!(
            lockouts,
            [None, None, None, None, s(1), s(2), s(4), s(8), s(8), s(8)]
        );
        assert_eq!(config.lockout_after(u32::MAX), s(8), "no overflow");
    }

    #[test]
    fn failures_lock_out_the_user_and_the_address() {
        let t = throttle(3);
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(t.begin("admin", addr("10.0.0.1"), now), Ok(()));
        }
        // The user, from anywhere; the address, for any user.
        assert_eq!(t.begin("admin", addr("10.0.0.2"), now), Err(SECOND));
        assert_eq!(t.begin("root", addr("10.0.0.1"), now), Err(SECOND));
        assert_eq!(t.begin("root", addr("10.0.0.2"), now), Ok(()));
        // The lockout ends, and the next failure locks for twice as long.
        let later = now + SECOND;
        assert_eq!(t.begin("admin", addr("10.0.0.3"), later), Ok(()));
        assert_eq!(t.begin("admin", None, later), Err(2 * SECOND));
        assert_eq!(
            t.begin("admin", None, later + SECOND / 2),
            Err(3 * SECOND / 2)
        );
    }

    #[test]
    fn a_success_clears_both_and_old_failures_are_forgotten() {
        let t = throttle(2);
        let now = Instant::now();
        assert_eq!(t.begin("admin", addr("10.0.0.1"), now), Ok(()));
        t.succeeded("admin", addr("10.0.0.1"));
        assert_eq!(t.begin("admin", addr("10.0.0.1"), now), Ok(()));
        assert_eq!(t.begin("admin", addr("10.0.0.1"), now), Ok(()));
        assert!(t.begin("admin", addr("10.0.0.1"), now).is_err());
        t.succeeded("admin", addr("10.0.0.1"));
        assert_eq!(t.begin("admin", addr("10.0.0.1"), now), Ok(()));
        // One failure, then quiet for the longest lockout: forgotten.
        let later = now + 8 * SECOND;
        assert_eq!(t.begin("admin", addr("10.0.0.1"), later), Ok(()));
        assert_eq!(
            t.begin("admin", addr("10.0.0.1"), later),
            Ok(()),
            "the failure before the quiet no longer counts"
        );
        assert_eq!(t.begin("admin", addr("10.0.0.1"), later), Err(SECOND));
    }

    #[test]
    fn ipv6_addresses_count_per_64_prefix() {
        let t = throttle(1);
        let now = Instant::now();
        assert_eq!(t.begin("a", addr("2001:db8::1"), now), Ok(()));
        assert!(t.begin("b", addr("2001:db8::ffff:2"), now).is_err());
        assert_eq!(t.begin("c", addr("2001:db8:0:1::1"), now), Ok(()));
        assert_eq!(t.begin("d", addr("::ffff:10.0.0.9"), now), Ok(()));
        assert!(
            t.begin("e", addr("10.0.0.9"), now).is_err(),
            "a mapped IPv4 address is that address"
        );
    }

    #[test]
    fn zero_failures_turns_throttling_off() {
        let t = throttle(0);
        let now = Instant::now();
        for _ in 0..100 {
            assert_eq!(t.begin("admin", addr("10.0.0.1"), now), Ok(()));
        }
    }

    #[test]
    fn the_table_is_bounded() {
        let t = throttle(5);
        let now = Instant::now();
        for i in 0..MAX_ENTRIES + 10 {
            assert_eq!(t.begin(&format!("user{i}"), None, now), Ok(()));
        }
        assert_eq!(t.table.lock().unwrap().len(), MAX_ENTRIES);
    }
}
