//! The network boundaries of a request: the client's address behind reverse proxies, and where
//! a sign-in may send the browser next ([`safe_referral`]).
//!
//! A request's peer is a proxy when it is listed as trusted; the client is then read from
//! `X-Forwarded-For`, right to left, skipping further trusted proxies. Entries a client wrote
//! itself sit to the left of the first untrusted one and are never believed. With no trusted
//! proxies the header is ignored.

use std::net::IpAddr;
use std::str::FromStr;

/// A set of trusted proxy addresses and networks (`10.0.0.0/8`, `::1`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<(IpAddr, u8)>);

/// A trusted proxy entry that is neither an address nor a network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadNetwork(pub String);

impl std::fmt::Display for BadNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not an IP address or network: {:?}", self.0)
    }
}

impl std::error::Error for BadNetwork {}

impl TrustedProxies {
    /// Parses a comma-separated list; blank entries are skipped.
    pub fn parse(list: &str) -> Result<TrustedProxies, BadNetwork> {
        let mut nets = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let bad = || BadNetwork(item.to_string());
            let (addr, prefix) = match item.split_once('/') {
                Some((a, p)) => {
                    let addr = IpAddr::from_str(a).map_err(|_| bad())?;
                    let prefix: u8 = p.parse().map_err(|_| bad())?;
                    (addr, prefix)
                }
                None => {
                    let addr = IpAddr::from_str(item).map_err(|_| bad())?;
                    (addr, max_prefix(addr))
                }
            };
            if prefix > max_prefix(addr) {
                return Err(bad());
            }
            nets.push((addr, prefix));
        }
        Ok(TrustedProxies(nets))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is one of the trusted proxies.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0
            .iter()
            .any(|&(net, prefix)| in_network(ip, canonical(net), prefix))
    }

    /// The client's address: the peer, unless the peer is a trusted proxy and
    /// `X-Forwarded-For` names an address beyond it.
    pub fn client_ip(&self, peer: IpAddr, forwarded_for: Option<&str>) -> IpAddr {
        if !self.contains(peer) {
            return peer;
        }
        let Some(header) = forwarded_for else {
            return peer;
        };
        let mut client = peer;
        for entry in header.rsplit(',') {
            let Some(ip) = parse_entry(entry) else {
                // An entry no proxy would write: stop believing the rest.
                return client;
            };
            client = ip;
            if !self.contains(ip) {
                return ip;
            }
        }
        client
    }
}

fn parse_entry(entry: &str) -> Option<IpAddr> {
    let e = entry.trim();
    // Some proxies write "[v6]:port" or "v4:port".
    if let Ok(sa) = std::net::SocketAddr::from_str(e) {
        return Some(sa.ip());
    }
    IpAddr::from_str(e.trim_start_matches('[').trim_end_matches(']')).ok()
}

fn max_prefix(ip: IpAddr) -> u8 {
    match ip {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// IPv4-mapped IPv6 addresses compare as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn in_network(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// The referral if it stays on this server (a path, or a URL under the base URL), else the
/// base URL: a sign-in never redirects elsewhere.
pub fn safe_referral(base_url: &str, referral: Option<&str>) -> String {
    match referral.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) if r.starts_with('/') && !r.starts_with("//") && !r.contains('\\') => {
            format!("{base_url}{r}")
        }
        Some(r) if r == base_url || r.starts_with(&format!("{base_url}/")) => r.to_string(),
        _ => format!("{base_url}/"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_addresses_and_networks() {
        let t = TrustedProxies::parse(" 10.0.0.0/8, ::1 ,,192.168.1.5").unwrap();
        assert!(t.contains(ip("10.200.3.4")));
        assert!(!t.contains(ip("11.0.0.1")));
        assert!(t.contains(ip("::1")));
        assert!(t.contains(ip("192.168.1.5")));
        assert!(!t.contains(ip("192.168.1.6")));
        assert!(
            t.contains(ip("::ffff:10.1.2.3")),
            "mapped IPv4 counts as IPv4"
        );
        assert!(TrustedProxies::parse("").unwrap().is_empty());
        for bad in ["10.0.0.0/33", "::/129", "localhost", "10.0.0.0/x", "1.2.3"] {
            assert_eq!(
                TrustedProxies::parse(bad),
                Err(BadNetwork(bad.to_string())),
                "{bad}"
            );
        }
        let all = TrustedProxies::parse("0.0.0.0/0").unwrap();
        assert!(all.contains(ip("203.0.113.9")));
    }

    #[test]
    fn the_header_counts_only_from_a_trusted_peer() {
        let none = TrustedProxies::default();
        assert_eq!(
            none.client_ip(ip("10.0.0.1"), Some("203.0.113.7")),
            ip("10.0.0.1")
        );
        let t = TrustedProxies::parse("10.0.0.0/8").unwrap();
        assert_eq!(
            t.client_ip(ip("198.51.100.2"), Some("203.0.113.7")),
            ip("198.51.100.2"),
            "an untrusted peer cannot name another address"
        );
        assert_eq!(t.client_ip(ip("10.0.0.1"), None), ip("10.0.0.1"));
    }

    #[test]
    fn reads_right_to_left_past_trusted_proxies() {
        let t = TrustedProxies::parse("10.0.0.0/8").unwrap();
        // A client-written first entry is not believed.
        assert_eq!(
            t.client_ip(ip("10.0.0.1"), Some("1.1.1.1, 203.0.113.7, 10.0.0.9")),
            ip("203.0.113.7")
        );
        assert_eq!(
            t.client_ip(ip("10.0.0.1"), Some("[2001:db8::5]:443")),
            ip("2001:db8::5")
        );
        assert_eq!(
            t.client_ip(ip("10.0.0.1"), Some("203.0.113.7:5120")),
            ip("203.0.113.7")
        );
        // Garbage stops the walk at the last good address.
        assert_eq!(
            t.client_ip(ip("10.0.0.1"), Some("203.0.113.7, junk")),
            ip("10.0.0.1")
        );
        assert_eq!(
            t.client_ip(ip("10.0.0.1"), Some("junk, 10.0.0.8")),
            ip("10.0.0.8")
        );
        // Only proxies: the leftmost.
        assert_eq!(
            t.client_ip(ip("10.0.0.1"), Some("10.0.0.3, 10.0.0.2")),
            ip("10.0.0.3")
        );
    }

    #[test]
    fn referrals_stay_on_this_server() {
        let b = "https://files.example.com";
        assert_eq!(
            safe_referral(b, Some("/#/folders")),
            "https://files.example.com/#/folders"
        );
        assert_eq!(
            safe_referral(b, Some("https://files.example.com/x")),
            "https://files.example.com/x"
        );
        for bad in [
            "https://evil.example",
            "//evil.example/x",
            "https://files.example.com.evil.net/",
            "/\\evil",
            "javascript:alert(1)",
        ] {
            assert_eq!(
                safe_referral(b, Some(bad)),
                "https://files.example.com/",
                "{bad}"
            );
        }
        assert_eq!(safe_referral(b, None), "https://files.example.com/");
    }
}
