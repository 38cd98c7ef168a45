//! `--partition`: one shard of a run's plan, so that N CI runners each run a part and `gantry
//! report merge` joins their reports (as `cargo nextest run --partition` splits a test suite).
//!
//! - `hash:K/N` (or `K/N`): the entries whose name (`<case>@<mode>@<backend>`, as `gantry list`
//!   prints it) hashes to K − 1 modulo N (the first 8 bytes of its SHA-256). A case keeps its
//!   shard when other cases are added or removed, and every runner computes the same split
//!   without talking to the others.
//! - `count:K/N`: every N-th entry of the plan, starting with the K-th: shards of even size, but
//!   adding a case moves the ones after it.
//!
//! Either way the N shards are disjoint and together are the whole plan, whatever the filter,
//! modes and backend, as long as every shard is given the same ones.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// How a plan is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// By a hash of each entry's name.
    Hash,
    /// Round robin over the plan's order.
    Count,
}

/// Shard `shard` of `total` (1 ≤ shard ≤ total) of a run's plan, split as `split` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// How the plan is split.
    pub split: Split,
    /// Which shard, from 1.
    pub shard: u32,
    /// How many shards.
    pub total: u32,
}

impl Partition {
    /// Whether the plan's entry at `index` (from 0), named `name`, is in this shard.
    pub fn takes(&self, index: usize, name: &str) -> bool {
        let total = u64::from(self.total);
        let slot = match self.split {
            Split::Count => index as u64 % total,
            Split::Hash => {
                let digest = Sha256::digest(name.as_bytes());
                let mut first = [0u8; 8];
                first.copy_from_slice(&digest[..8]);
                u64::from_be_bytes(first) % total
            }
        };
        slot == u64::from(self.shard - 1)
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let split = match self.split {
            Split::Hash => "hash",
            Split::Count => "count",
        };
        write!(f, "{split}:{}/{}", self.shard, self.total)
    }
}

/// A `--partition` value that is not `hash:K/N`, `count:K/N` or `K/N` with 1 ≤ K ≤ N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a partition: write hash:K/N, count:K/N or K/N (hash), with 1 ≤ K ≤ N")]
pub struct BadPartition(String);

impl FromStr for Partition {
    type Err = BadPartition;

    fn from_str(text: &str) -> Result<Self, BadPartition> {
        let bad = || BadPartition(text.to_owned());
        let (split, rest) = match text.split_once(':') {
            Some(("hash", rest)) => (Split::Hash, rest),
            Some(("count", rest)) => (Split::Count, rest),
            Some(_) => return Err(bad()),
            None => (Split::Hash, text),
        };
        let (shard, total) = rest.split_once('/').ok_or_else(bad)?;
        let shard: u32 = shard.trim().parse().map_err(|_| bad())?;
        let total: u32 = total.trim().parse().map_err(|_| bad())?;
        if shard == 0 || shard > total {
            return Err(bad());
        }
        Ok(Partition {
            split,
            shard,
            total,
        })
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case("hash:1/4", Split::Hash, 1, 4)]
    #[case("count:3/3", Split::Count, 3, 3)]
    #[case("2/5", Split::Hash, 2, 5)]
    fn parses(#[case] text: &str, #[case] split: Split, #[case] shard: u32, #[case] total: u32) {
        let p: Partition = text.parse().unwrap();
        assert_eq!(
            p,
            Partition {
                split,
                shard,
                total
            }
        );
        if text.contains(':') {
            assert_eq!(p.to_string(), text);
        }
    }

    #[rstest]
    #[case("0/4")]
    #[case("5/4")]
    #[case("hash:1/0")]
    #[case("rand:1/2")]
    #[case("1-2")]
    #[case("a/b")]
    #[case("")]
    fn refuses(#[case] text: &str) {
        let e = text.parse::<Partition>().unwrap_err();
        assert!(e.to_string().contains(&format!("`{text}`")), "{e}");
    }

    /// Every entry is in exactly one shard, for both splits and several shard counts.
    #[rstest]
    fn shards_are_disjoint_and_whole(
        #[values(Split::Hash, Split::Count)] split: Split,
        #[values(1, 2, 4, 7)] total: u32,
    ) {
        let names: Vec<String> = (0..200)
            .map(|i| format!("case-{i}@websocket@host"))
            .collect();
        for (i, name) in names.iter().enumerate() {
            let holders = (1..=total)
                .filter(|&shard| {
                    Partition {
                        split,
                        shard,
                        total,
                    }
                    .takes(i, name)
                })
                .count();
            assert_eq!(holders, 1, "{name} is in {holders} of {total} shards");
        }
    }

    /// The hash split does not leave a shard nearly empty: with 200 entries over 4 shards each
    /// holds 50 ± 20 (a fixed set of names, so this cannot flake).
    #[test]
    fn hash_shards_are_roughly_even() {
        let names: Vec<String> = (0..200)
            .map(|i| format!("case-{i}@websocket@host"))
            .collect();
        for shard in 1..=4 {
            let p = Partition {
                split: Split::Hash,
                shard,
                total: 4,
            };
            let n = names
                .iter()
                .enumerate()
                .filter(|(i, n)| p.takes(*i, n))
                .count();
            assert!((30..=70).contains(&n), "shard {shard} holds {n} of 200");
        }
    }

    /// A case's hash shard does not depend on its place in the plan.
    #[test]
    fn hash_shard_ignores_the_index() {
        let p = Partition {
            split: Split::Hash,
            shard: 2,
            total: 3,
        };
        let name = "balance_random@http@docker";
        assert_eq!(p.takes(0, name), p.takes(17, name));
    }
}
