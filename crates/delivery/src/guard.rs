//! Where deliveries may go: the address guard. Deliveries to loopback, private, link-local and
//! other non-public addresses are refused unless the operator allows them. The guard is the HTTP
//! client's resolver, so the address that was checked is the address connected to (a second DNS
//! answer cannot point the request elsewhere).

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// Why an address is not public, if it is not.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4.is_loopback() {
                Some("a loopback address")
            } else if v4.is_private() || (o[0] == 100 && (64..128).contains(&o[1])) {
                Some("a private address")
            } else if v4.is_link_local() {
                Some("a link-local address")
            } else if v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || o[0] == 0
                || o[0] >= 240
            {
                Some("not a unicast address")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return non_public(IpAddr::V4(v4));
            }
            let seg = v6.segments();
            if v6.is_loopback() {
                Some("a loopback address")
            } else if v6.is_unspecified() || v6.is_multicast() {
                Some("not a unicast address")
            } else if seg[0] & 0xfe00 == 0xfc00 {
                Some("a private address")
            } else if seg[0] & 0xffc0 == 0xfe80 {
                Some("a link-local address")
            } else {
                None
            }
        }
    }
}

/// The resolver the delivery client uses.
#[derive(Debug, Clone, Copy)]
pub struct Guard {
    pub allow_private: bool,
}

impl ureq::Resolver for Guard {
    fn resolve(&self, netloc: &str) -> io::Result<Vec<SocketAddr>> {
        let addrs: Vec<SocketAddr> = netloc.to_socket_addrs()?.collect();
        if !self.allow_private {
            if let Some((addr, why)) = addrs
                .iter()
                .find_map(|a| non_public(a.ip()).map(|w| (a, w)))
            {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "refused: {} is {why} (set COFFER_WEBHOOK_ALLOW_PRIVATE=true to allow)",
                        addr.ip()
                    ),
                ));
            }
        }
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_addresses() {
        for (ip, bad) in [
            ("127.0.0.1", true),
            ("10.1.2.3", true),
            ("172.16.0.1", true),
            ("192.168.1.1", true),
            ("169.254.169.254", true),
            ("100.64.0.1", true),
            ("0.0.0.0", true),
            ("255.255.255.255", true),
            ("::1", true),
            ("fd00::1", true),
            ("fe80::1", true),
            ("::ffff:127.0.0.1", true),
            ("93.184.216.34", false),
            ("2606:2800:220:1::1", false),
        ] {
            assert_eq!(non_public(ip.parse().unwrap()).is_some(), bad, "{ip}");
        }
    }

    #[test]
    fn the_resolver_refuses_or_allows() {
        use ureq::Resolver;
        let e = Guard {
            allow_private: false,
        }
        .resolve("127.0.0.1:80")
        .unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
        assert_eq!(
            Guard {
                allow_private: true
            }
            .resolve("127.0.0.1:80")
            .unwrap()
            .len(),
            1
        );
    }
}
