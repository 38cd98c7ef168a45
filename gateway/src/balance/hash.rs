//! Consistent hash on the client IP (ShenYu `HashLoadBalancer`): 5 virtual nodes per upstream
//! at `md5_32("SHENYU-{url}-HASH-{i}")`, the key `md5_32(ip)`, the first ring point `>=` the
//! key, else the smallest. `md5_32` is the first 4 MD5 bytes, little-endian. Weights are
//! ignored; on an exact point collision the later upstream wins. The ring is built once per
//! pool (ShenYu rebuilds it on every call); the IP is the socket peer rendered the Java way.
//! [`crate::EmulatedBug::HashRingOffByOne`] takes the point after the successor (wrapping).

use std::collections::BTreeMap;
use std::net::IpAddr;

use md5::{Digest, Md5};

use super::Upstream;
use crate::java::java_ip;

const VIRTUAL_NODES: usize = 5;

/// The ring: points sorted ascending, each with its upstream index.
#[derive(Debug)]
pub(super) struct Ring {
    points: Vec<(u32, usize)>,
}

impl Ring {
    /// The ring over `upstreams`.
    pub(super) fn new(upstreams: &[Upstream]) -> Ring {
        let mut points = BTreeMap::new();
        for (index, u) in upstreams.iter().enumerate() {
            for i in 0..VIRTUAL_NODES {
                let key = format!("SHENYU-{}-HASH-{i}", u.data.upstream_url);
                points.insert(md5_32(key.as_bytes()), index);
            }
        }
        Ring {
            points: points.into_iter().collect(),
        }
    }

    /// The upstream index for a client (0 for an empty ring); the successor's successor when
    /// `off_by_one` (the emulated bug).
    pub(super) fn pick(&self, ip: IpAddr, off_by_one: bool) -> usize {
        if self.points.is_empty() {
            return 0;
        }
        let key = md5_32(java_ip(ip).as_bytes());
        let at = self.points.partition_point(|(point, _)| *point < key) + usize::from(off_by_one);
        self.points[at % self.points.len()].1
    }
}

/// The first four MD5 bytes as a little-endian unsigned integer.
pub(super) fn md5_32(bytes: &[u8]) -> u32 {
    let digest = Md5::digest(bytes);
    u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]])
}

#[cfg(test)]
mod tests {
    use super::super::test_support::up;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn md5_32_is_little_endian_of_the_first_bytes() {
        // md5("") = d41d8cd98f00b204e9800998ecf8427e
        assert_eq!(md5_32(b""), 0xd98c_1dd4);
    }

    fn ups(n: usize) -> Vec<Upstream> {
        (0..n).map(|i| up(&format!("10.0.0.{i}:8080"), 1)).collect()
    }

    proptest! {
        /// One IP always lands on the same upstream, and removing another upstream only moves
        /// the IPs that were on the removed one.
        #[test]
        fn stable_per_ip(ip in any::<u32>(), n in 2..8usize, removed in 0..8usize) {
            let all = ups(n);
            let ring = Ring::new(&all);
            let ip = IpAddr::from(ip.to_be_bytes());
            let first = ring.pick(ip, false);
            for _ in 0..3 {
                prop_assert_eq!(ring.pick(ip, false), first);
            }
            let removed = removed % n;
            prop_assume!(removed != first);
            let rest: Vec<Upstream> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != removed)
                .map(|(_, u)| u.clone())
                .collect();
            let after = Ring::new(&rest).pick(ip, false);
            prop_assert_eq!(&rest[after].data.upstream_url, &all[first].data.upstream_url);
        }
    }

    /// The off-by-one takes the point after the successor on the ring (wrapping), modelled
    /// here over the ring's points; it moves the clients whose two points differ in owner.
    #[test]
    fn off_by_one_takes_the_successors_successor() {
        let list = ups(3);
        let ring = Ring::new(&list);
        let mut points: BTreeMap<u32, usize> = BTreeMap::new();
        for (index, u) in list.iter().enumerate() {
            for i in 0..VIRTUAL_NODES {
                let key = format!("SHENYU-{}-HASH-{i}", u.data.upstream_url);
                points.insert(md5_32(key.as_bytes()), index);
            }
        }
        let after = |key: u32, inclusive: bool| {
            let mut at = if inclusive {
                points.range(key..)
            } else {
                points.range(key.saturating_add(1)..)
            };
            at.next()
                .or_else(|| points.iter().next())
                .map(|(p, i)| (*p, *i))
                .unwrap()
        };
        let mut moved = 0;
        for last in 0..=255u8 {
            let ip = IpAddr::from([10, 1, 2, last]);
            let (successor, owner) = after(md5_32(java_ip(ip).as_bytes()), true);
            assert_eq!(ring.pick(ip, false), owner);
            let (_, next_owner) = after(successor, false);
            assert_eq!(ring.pick(ip, true), next_owner, "{ip}");
            moved += usize::from(next_owner != owner);
        }
        assert!(moved > 64, "only {moved} of 256 clients moved");
    }

    #[test]
    fn ring_order_does_not_depend_on_list_order() {
        let mut list = ups(4);
        let ip: IpAddr = [192, 168, 1, 7].into();
        let a = &list[Ring::new(&list).pick(ip, false)]
            .data
            .upstream_url
            .clone();
        list.reverse();
        assert_eq!(&list[Ring::new(&list).pick(ip, false)].data.upstream_url, a);
    }
}
