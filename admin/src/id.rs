//! Snowflake-like ids: 19 decimal digits, milliseconds since the epoch followed by a
//! six-digit counter, strictly increasing within a process. Never contain `-` (ShenYu splits
//! rule paths on it).

use std::sync::atomic::{AtomicU64, Ordering};

/// Hands out increasing numeric ids.
#[derive(Debug, Default)]
pub(crate) struct IdGenerator {
    last: AtomicU64,
}

impl IdGenerator {
    /// The next id.
    pub(crate) fn next_id(&self) -> String {
        let millis = u64::try_from(chrono::Utc::now().timestamp_millis()).unwrap_or(0);
        let base = millis * 1_000_000;
        let step = |last: u64| (last + 1).max(base);
        let previous = self
            .last
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| Some(step(last)))
            .expect("the update closure always succeeds");
        step(previous).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_19_digits_and_increase() {
        let ids = IdGenerator::default();
        let a = ids.next_id();
        let b = ids.next_id();
        assert_eq!(a.len(), 19, "{a}");
        assert!(a.bytes().all(|c| c.is_ascii_digit()), "{a}");
        assert!(b.parse::<u64>().unwrap() > a.parse::<u64>().unwrap());
    }
}
