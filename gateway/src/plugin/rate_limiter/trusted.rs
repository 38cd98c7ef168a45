//! [`TrustedProxies`]: the peers (`--trusted-proxies`) whose forwarding headers
//! (`X-Forwarded-For` & co.) the rate limiter's `REMOTE_ADDRESS_KEY_RESOLVER` believes. Any
//! other client could name a new address per request and never be limited.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// A list of CIDR blocks (`10.0.0.0/8`, `::1/128`; a bare address is a block of one).
/// Empty by default: no peer is trusted. An IPv4-mapped IPv6 peer (`::ffff:a.b.c.d`) is
/// matched as its IPv4 address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<(IpAddr, u8)>);

/// A `--trusted-proxies` entry that is not an address or CIDR block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an IP address or CIDR block (like 10.0.0.0/8 or ::1/128)")]
pub struct BadCidr(String);

impl TrustedProxies {
    /// Whether `peer` is in one of the blocks.
    pub fn contains(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.0.iter().any(|&(net, len)| match (net, peer) {
            (IpAddr::V4(net), IpAddr::V4(peer)) => prefix(
                u128::from(net.to_bits()),
                u128::from(peer.to_bits()),
                32,
                len,
            ),
            (IpAddr::V6(net), IpAddr::V6(peer)) => prefix(net.to_bits(), peer.to_bits(), 128, len),
            _ => false,
        })
    }

    /// Whether no peer is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether `a` and `b`, `bits` wide, agree on their first `len` bits.
fn prefix(a: u128, b: u128, bits: u32, len: u8) -> bool {
    let shift = bits - u32::from(len);
    shift >= bits || (a ^ b) >> shift == 0
}

/// Comma-separated blocks; blanks between commas are skipped.
impl FromStr for TrustedProxies {
    type Err = BadCidr;

    fn from_str(s: &str) -> Result<Self, BadCidr> {
        let mut blocks = Vec::new();
        for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let bad = || BadCidr(entry.to_owned());
            let (addr, len) = match entry.split_once('/') {
                Some((addr, len)) => (addr, Some(len)),
                None => (entry, None),
            };
            let addr = addr.parse::<IpAddr>().map_err(|_| bad())?.to_canonical();
            let width = if addr.is_ipv4() { 32 } else { 128 };
            let len = match len {
                None => width,
                Some(len) => len
                    .parse::<u8>()
                    .ok()
                    .filter(|l| *l <= width)
                    .ok_or_else(bad)?,
            };
            blocks.push((addr, len));
        }
        Ok(TrustedProxies(blocks))
    }
}

impl fmt::Display for TrustedProxies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (addr, len)) in self.0.iter().enumerate() {
            write!(f, "{}{addr}/{len}", if i > 0 { "," } else { "" })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_contain_their_addresses() {
        let trusted: TrustedProxies = "127.0.0.0/8, ::1/128,10.1.2.3,172.16.0.0/12,,fd00::/8"
            .parse()
            .unwrap();
        let has = |ip: &str| trusted.contains(ip.parse().unwrap());
        assert!(has("127.0.0.1") && has("127.255.0.9") && has("::1") && has("10.1.2.3"));
        assert!(has("::ffff:127.0.0.1"), "IPv4-mapped");
        assert!(has("172.31.255.255") && has("fd12::1"));
        assert!(!has("128.0.0.1") && !has("10.1.2.4") && !has("172.32.0.0") && !has("::2"));
        assert_eq!(
            trusted.to_string(),
            "127.0.0.0/8,::1/128,10.1.2.3/32,172.16.0.0/12,fd00::/8"
        );
        let all: TrustedProxies = "0.0.0.0/0,::/0".parse().unwrap();
        assert!(
            all.contains("8.8.8.8".parse().unwrap()) && all.contains("2001::1".parse().unwrap())
        );
        let none = TrustedProxies::default();
        assert!(none.is_empty() && !none.contains("127.0.0.1".parse().unwrap()));
    }

    #[test]
    fn bad_blocks_are_refused() {
        for bad in [
            "10.0.0.0/33",
            "::/129",
            "localhost",
            "10.0.0.0/",
            "10.0.0/8",
            "1.2.3.4/-1",
        ] {
            assert_eq!(
                bad.parse::<TrustedProxies>(),
                Err(BadCidr(bad.to_owned())),
                "{bad}"
            );
        }
    }
}
