//! Java's renderings of values ShenYu compares, forwards or hashes as strings, shared by the
//! router (`ip` and `host` conditions), the proxy (`X-Forwarded-For`) and the hash balancer.

use std::net::IpAddr;

/// Java's `InetAddress.getHostAddress()`: IPv4-mapped IPv6 as dotted IPv4, other IPv6 as eight
/// uncompressed lower-case hex groups.
pub(crate) fn java_ip(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let groups: Vec<String> = v6.segments().iter().map(|g| format!("{g:x}")).collect();
                groups.join(":")
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("127.0.0.1", "127.0.0.1")]
    #[case("::1", "0:0:0:0:0:0:0:1")]
    #[case("::ffff:10.0.0.1", "10.0.0.1")]
    #[case("2001:db8::1", "2001:db8:0:0:0:0:0:1")]
    fn java_renders_addresses(#[case] ip: &str, #[case] want: &str) {
        assert_eq!(java_ip(ip.parse().unwrap()), want);
    }
}
