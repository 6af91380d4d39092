//! A client's address as Kafka's ACLs name hosts: Java's `InetAddress.getHostAddress`.

use std::net::IpAddr;

/// Java's text for `address`: IPv4 dotted; IPv6 as eight lower-case hexadecimal groups
/// without leading zeros and without `::` compression (`0:0:0:0:0:0:0:1`); an IPv4-mapped
/// IPv6 address as the IPv4 address it maps, since Java makes an `Inet4Address` of it. An
/// ACL's host must be written the same way to match.
pub fn java_host_address(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6
                .segments()
                .iter()
                .map(|s| format!("{s:x}"))
                .collect::<Vec<_>>()
                .join(":"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_written_as_java_writes_them() {
        let host = |s: &str| java_host_address(s.parse().unwrap());
        assert_eq!(host("127.0.0.1"), "127.0.0.1");
        assert_eq!(host("::1"), "0:0:0:0:0:0:0:1");
        assert_eq!(host("fe80::1:ab"), "fe80:0:0:0:0:0:1:ab");
        assert_eq!(host("::ffff:10.0.0.7"), "10.0.0.7");
    }
}
