//! Snowflake-like ids, safe across processes: 19 decimal digits like ShenYu's, strictly
//! increasing within one generator, never containing `-` (ShenYu splits rule paths on it).
//!
//! An id is a 63-bit number: `millis << 20 | node << 6 | seq`.
//!
//! - `millis`: milliseconds since the Unix epoch (19 digits from 2000 to 2248, always below
//!   `i64::MAX`, so Java clients can read it as a `long`).
//! - `node`: 14 random bits drawn when the generator is made. Two admins sharing one database
//!   (or two generators in one process) differ here unless they drew the same node
//!   (1 in 16,384), and even then they collide only when both hand out the same sequence
//!   number in the same millisecond.
//! - `seq`: 6 bits counting ids within a millisecond. When a millisecond's 64 ids are used up
//!   the generator moves on to the next millisecond before the clock does, so ids keep
//!   increasing (and a generator never goes back in time when the wall clock does).

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits of the sequence number within a millisecond.
const SEQ_BITS: u32 = 6;
/// Bits of the random node part.
const NODE_BITS: u32 = 14;

/// Hands out increasing numeric ids that other generators (in this or another process)
/// almost surely never hand out.
#[derive(Debug)]
pub(crate) struct IdGenerator {
    /// This generator's node number, below `2^NODE_BITS`.
    node: u64,
    /// The last tick handed out: `millis << SEQ_BITS | seq`.
    last: AtomicU64,
}

impl Default for IdGenerator {
    /// A generator with a random node.
    fn default() -> Self {
        Self::with_node(model::world::random_u64())
    }
}

impl IdGenerator {
    /// A generator for `node` (only its low `NODE_BITS` bits are used).
    pub(crate) fn with_node(node: u64) -> Self {
        Self {
            node: node & ((1 << NODE_BITS) - 1),
            last: AtomicU64::new(0),
        }
    }

    /// The next id.
    pub(crate) fn next_id(&self) -> String {
        let millis = u64::try_from(model::world::since_epoch().as_millis()).unwrap_or(0);
        self.id_at(millis).to_string()
    }

    /// The next id when the clock reads `millis`.
    fn id_at(&self, millis: u64) -> u64 {
        let floor = millis << SEQ_BITS;
        let step = |last: u64| (last + 1).max(floor);
        let previous = self
            .last
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| Some(step(last)))
            .expect("the update closure always succeeds");
        let tick = step(previous);
        let seq = tick & ((1 << SEQ_BITS) - 1);
        let millis = tick >> SEQ_BITS;
        (millis << (NODE_BITS + SEQ_BITS)) | (self.node << SEQ_BITS) | seq
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn parse(id: &str) -> u64 {
        id.parse().unwrap()
    }

    #[test]
    fn ids_are_19_digits_and_increase() {
        let ids = IdGenerator::default();
        let mut last = 0;
        // Far more than one millisecond holds, so the sequence overflows into later ones.
        for _ in 0..10_000 {
            let id = ids.next_id();
            assert_eq!(id.len(), 19, "{id}");
            assert!(id.bytes().all(|c| c.is_ascii_digit()), "{id}");
            assert!(parse(&id) > last, "{id} after {last}");
            assert!(i64::try_from(parse(&id)).is_ok(), "{id} fits a Java long");
            last = parse(&id);
        }
    }

    #[test]
    fn the_layout_is_millis_node_seq() {
        let ids = IdGenerator::with_node(0x1234);
        let millis = 1_700_000_000_000;
        let first = ids.id_at(millis);
        assert_eq!(first >> 20, millis);
        assert_eq!((first >> 6) & 0x3fff, 0x1234);
        assert_eq!(first & 0x3f, 0);
        assert_eq!(
            ids.id_at(millis),
            first + 1,
            "same millisecond: next sequence number"
        );
        // The 64 numbers of a millisecond used up: the generator runs ahead of the clock.
        for _ in 2..64 {
            ids.id_at(millis);
        }
        let ahead = ids.id_at(millis);
        assert_eq!((ahead >> 20, ahead & 0x3f), (millis + 1, 0));
        // A clock going backwards does not make ids go backwards.
        assert!(ids.id_at(millis - 5_000) > ahead);
        assert_eq!(IdGenerator::with_node(u64::MAX).node, 0x3fff);
    }

    #[test]
    fn generators_with_different_nodes_never_collide() {
        // Two admins creating records in the very same milliseconds.
        let a = IdGenerator::with_node(1);
        let b = IdGenerator::with_node(2);
        let mut seen = HashSet::new();
        for millis in 1_700_000_000_000..1_700_000_000_010 {
            for _ in 0..100 {
                assert!(seen.insert(a.id_at(millis)));
                assert!(seen.insert(b.id_at(millis)));
            }
        }
    }

    #[test]
    fn nodes_are_drawn_at_random() {
        let nodes: HashSet<u64> = (0..32).map(|_| IdGenerator::default().node).collect();
        assert!(nodes.len() > 1, "32 generators all drew node {nodes:?}");
    }
}
