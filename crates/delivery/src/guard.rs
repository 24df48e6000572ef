//! Where deliveries may go: the address guard. A delivery goes only to a globally reachable
//! address, unless the operator allows the others. The rules are data: the IANA IPv4 and IPv6
//! Special-Purpose Address Registries (RFC 6890 and its updates), one row per entry with its
//! "Globally Reachable" value, plus the address-space registries' multicast and reserved blocks.
//! The most specific entry holding an address decides, so the registries' global exceptions
//! inside a non-global block (e.g. 192.0.0.9/32 inside 192.0.0.0/24) are delivered to, as the
//! registries mean them; "N/A" counts as not global. An IPv6 address that embeds an IPv4 address
//! (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo) is refused when the IPv4 address is, even
//! where the IPv6 block itself is global (64:ff9b::/96).
//!
//! The guard is the HTTP client's resolver, so the address that was checked is the address
//! connected to (a second DNS answer cannot point the request elsewhere); redirects are not
//! followed, so no other address is ever connected to.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::OnceLock;

/// The registry's "Globally Reachable" value of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// True: delivered to (unless it embeds a refused IPv4 address).
    Global,
    /// False: refused.
    NotGlobal,
    /// N/A (deprecated or special forms): refused, as not known to be global.
    NotApplicable,
}

/// One registry entry.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The address block, `address/prefix-length`.
    pub block: &'static str,
    pub name: &'static str,
    /// Where the entry comes from: the RFC the registry names.
    pub source: &'static str,
    pub reach: Reach,
}

const fn e(block: &'static str, name: &'static str, source: &'static str, reach: Reach) -> Entry {
    Entry {
        block,
        name,
        source,
        reach,
    }
}

use Reach::{Global, NotApplicable, NotGlobal};

/// The IANA IPv4 Special-Purpose Address Registry (iana-ipv4-special-registry, updated 2025),
/// every entry. An IPv4 address in none of these blocks is global unicast, except multicast.
#[rustfmt::skip]
pub const IPV4_SPECIAL: &[Entry] = &[
    e("0.0.0.0/8", "This network", "RFC 791", NotGlobal),
    e("0.0.0.0/32", "This host on this network", "RFC 1122", NotGlobal),
    e("10.0.0.0/8", "Private-Use", "RFC 1918", NotGlobal),
    e("100.64.0.0/10", "Shared Address Space", "RFC 6598", NotGlobal),
    e("127.0.0.0/8", "Loopback", "RFC 1122", NotGlobal),
    e("169.254.0.0/16", "Link Local", "RFC 3927", NotGlobal),
    e("172.16.0.0/12", "Private-Use", "RFC 1918", NotGlobal),
    e("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890", NotGlobal),
    e("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", NotGlobal),
    e("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", NotGlobal),
    e("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", Global),
    e("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155", Global),
    e("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050", NotGlobal),
    e("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050", NotGlobal),
    e("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", NotGlobal),
    e("192.31.196.0/24", "AS112-v4", "RFC 7535", Global),
    e("192.52.193.0/24", "AMT", "RFC 7450", Global),
    e("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", NotApplicable),
    e("192.88.99.2/32", "6a44-relay anycast address", "RFC 6751", NotGlobal),
    e("192.168.0.0/16", "Private-Use", "RFC 1918", NotGlobal),
    e("192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534", Global),
    e("198.18.0.0/15", "Benchmarking", "RFC 2544", NotGlobal),
    e("198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", NotGlobal),
    e("203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", NotGlobal),
    e("240.0.0.0/4", "Reserved", "RFC 1112", NotGlobal),
    e("255.255.255.255/32", "Limited Broadcast", "RFC 8190, RFC 919", NotGlobal),
];

/// From the IANA IPv4 Address Space Registry: the block that is not unicast.
#[rustfmt::skip]
pub const IPV4_SPACE: &[Entry] = &[e("224.0.0.0/4", "Multicast", "RFC 5771", NotGlobal)];

/// The IANA IPv6 Special-Purpose Address Registry (iana-ipv6-special-registry, updated 2025),
/// every entry.
#[rustfmt::skip]
pub const IPV6_SPECIAL: &[Entry] = &[
    e("::1/128", "Loopback Address", "RFC 4291", NotGlobal),
    e("::/128", "Unspecified Address", "RFC 4291", NotGlobal),
    e("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", NotGlobal),
    e("64:ff9b::/96", "IPv4-IPv6 Translation", "RFC 6052", Global),
    e("64:ff9b:1::/48", "IPv4-IPv6 Translation", "RFC 8215", NotGlobal),
    e("100::/64", "Discard-Only Address Block", "RFC 6666", NotGlobal),
    e("100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780", NotGlobal),
    e("2001::/23", "IETF Protocol Assignments", "RFC 2928", NotGlobal),
    e("2001::/32", "TEREDO", "RFC 4380, RFC 8190", NotApplicable),
    e("2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723", Global),
    e("2001:1::2/128", "Traversal Using Relays around NAT Anycast", "RFC 8155", Global),
    e("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", "RFC 9665", Global),
    e("2001:2::/48", "Benchmarking", "RFC 5180", NotGlobal),
    e("2001:3::/32", "AMT", "RFC 7450", Global),
    e("2001:4:112::/48", "AS112-v6", "RFC 7535", Global),
    e("2001:10::/28", "Deprecated (previously ORCHID)", "RFC 4843", NotApplicable),
    e("2001:20::/28", "ORCHIDv2", "RFC 7343", Global),
    e("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", Global),
    e("2001:db8::/32", "Documentation", "RFC 3849", NotGlobal),
    e("2002::/16", "6to4", "RFC 3056", NotApplicable),
    e("2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", Global),
    e("3fff::/20", "Documentation", "RFC 9637", NotGlobal),
    e("5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", NotGlobal),
    e("fc00::/7", "Unique-Local", "RFC 4193, RFC 8190", NotGlobal),
    e("fe80::/10", "Link-Local Unicast", "RFC 4291", NotGlobal),
];

/// The IANA IPv6 Address Space Registry's top level, which covers the whole space: only
/// 2000::/3 is global unicast (the special-purpose entries above are more specific and win).
#[rustfmt::skip]
pub const IPV6_SPACE: &[Entry] = &[
    e("::/8", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("100::/8", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("200::/7", "Reserved by IETF", "RFC 4048", NotGlobal),
    e("400::/6", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("800::/5", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("1000::/4", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("2000::/3", "Global Unicast", "RFC 4291", Global),
    e("4000::/3", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("6000::/3", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("8000::/3", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("a000::/3", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("c000::/3", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("e000::/4", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("f000::/5", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("f800::/6", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("fc00::/7", "Unique Local Unicast", "RFC 4193", NotGlobal),
    e("fe00::/9", "Reserved by IETF", "RFC 4291", NotGlobal),
    e("fe80::/10", "Link-Scoped Unicast", "RFC 4291", NotGlobal),
    e("fec0::/10", "Reserved by IETF (deprecated site-local)", "RFC 3879", NotGlobal),
    e("ff00::/8", "Multicast", "RFC 4291", NotGlobal),
];

/// A parsed block: the address as a number (IPv4 in the low 32 bits), its width and prefix.
#[derive(Debug, Clone, Copy)]
struct Block {
    net: u128,
    bits: u8,
    prefix: u8,
}

impl Block {
    fn parse(s: &str) -> Option<Block> {
        let (addr, prefix) = s.split_once('/')?;
        let prefix: u8 = prefix.parse().ok()?;
        let (net, bits) = match addr.parse::<IpAddr>().ok()? {
            IpAddr::V4(a) => (u128::from(u32::from(a)), 32),
            IpAddr::V6(a) => (u128::from(a), 128),
        };
        (prefix <= bits && net & !mask(bits, prefix) == 0).then_some(Block { net, bits, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        let (value, bits) = match ip {
            IpAddr::V4(a) => (u128::from(u32::from(a)), 32),
            IpAddr::V6(a) => (u128::from(a), 128),
        };
        bits == self.bits && value & mask(bits, self.prefix) == self.net
    }
}

/// The network mask of `prefix` bits in an address of `bits` bits.
fn mask(bits: u8, prefix: u8) -> u128 {
    let all = if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    all & !all.checked_shr(u32::from(prefix)).unwrap_or(0)
}

/// Every entry, parsed once. The tables are constants checked by the tests, so a block that
/// does not parse is a programming error.
fn table() -> &'static [(Block, &'static Entry)] {
    static TABLE: OnceLock<Vec<(Block, &'static Entry)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        [IPV4_SPECIAL, IPV4_SPACE, IPV6_SPECIAL, IPV6_SPACE]
            .into_iter()
            .flatten()
            .map(|entry| {
                let block = Block::parse(entry.block)
                    .unwrap_or_else(|| panic!("address guard: bad block {}", entry.block));
                (block, entry)
            })
            .collect()
    })
}

/// The most specific entry holding `ip`, if any.
pub fn entry(ip: IpAddr) -> Option<&'static Entry> {
    // `max_by_key` keeps the last of equals: reversed, a special-purpose entry wins over the
    // address-space entry of the same block (fc00::/7, fe80::/10).
    table()
        .iter()
        .rev()
        .filter(|(b, _)| b.contains(ip))
        .max_by_key(|(b, _)| b.prefix)
        .map(|(_, entry)| *entry)
}

/// The IPv4 addresses an IPv6 address carries: IPv4-mapped and IPv4-compatible (the last 32
/// bits), NAT64 (RFC 6052, the /96 and the /48 layouts), 6to4 (bits 16–47) and Teredo (the
/// server, bits 32–63, and the client, the last 32 bits inverted).
pub fn embedded_ipv4(ip: Ipv6Addr) -> Vec<Ipv4Addr> {
    let o = ip.octets();
    let s = ip.segments();
    let v4 = |a: u8, b: u8, c: u8, d: u8| Ipv4Addr::new(a, b, c, d);
    let last = v4(o[12], o[13], o[14], o[15]);
    let mapped_or_compatible = s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0);
    if mapped_or_compatible || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        vec![last]
    } else if s[..3] == [0x64, 0xff9b, 1] {
        vec![v4(o[6], o[7], o[9], o[10])]
    } else if s[0] == 0x2002 {
        vec![v4(o[2], o[3], o[4], o[5])]
    } else if s[..2] == [0x2001, 0] {
        vec![
            v4(o[4], o[5], o[6], o[7]),
            v4(!o[12], !o[13], !o[14], !o[15]),
        ]
    } else {
        Vec::new()
    }
}

/// Why an address is refused: the entry that holds it, or the one holding the IPv4 address it
/// embeds.
#[derive(Debug, Clone, Copy)]
pub struct Refusal {
    pub entry: &'static Entry,
    /// The embedded IPv4 address that was refused, when that is the reason.
    pub embedded: Option<Ipv4Addr>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.entry.reach {
            Global => "globally reachable",
            NotGlobal => "not globally reachable",
            NotApplicable => "global reachability N/A",
        };
        if let Some(v4) = self.embedded {
            write!(f, "embeds {v4}, which is ")?;
        }
        write!(
            f,
            "in {} {} ({}; {what})",
            self.entry.block, self.entry.name, self.entry.source
        )
    }
}

fn refused(ip: IpAddr) -> Option<&'static Entry> {
    entry(ip).filter(|e| e.reach != Global)
}

/// Why an address is not global, if it is not.
pub fn non_public(ip: IpAddr) -> Option<Refusal> {
    if let Some(entry) = refused(ip) {
        return Some(Refusal {
            entry,
            embedded: None,
        });
    }
    let IpAddr::V6(v6) = ip else { return None };
    embedded_ipv4(v6).into_iter().find_map(|v4| {
        refused(IpAddr::V4(v4)).map(|entry| Refusal {
            entry,
            embedded: Some(v4),
        })
    })
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
                        "refused: {} {why} (set COFFER_WEBHOOK_ALLOW_PRIVATE=true to allow)",
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
    use std::collections::HashSet;

    /// Asserts that `ip` is refused because of the entry `block` (directly, or through the IPv4
    /// address it embeds).
    fn refused_by(ip: &str, block: &str) {
        let r = non_public(ip.parse().unwrap()).unwrap_or_else(|| panic!("{ip} was allowed"));
        assert_eq!(r.entry.block, block, "{ip}: {r}");
    }

    fn allowed(ip: &str) {
        let r = non_public(ip.parse().unwrap());
        assert!(r.is_none(), "{ip} was refused: {}", r.unwrap());
    }

    /// One test per non-global entry: its first and last address are refused by it. The list
    /// is checked against the tables by `every_entry_has_a_test`.
    macro_rules! refuses {
        ($($name:ident: $block:literal => $first:literal, $last:literal;)*) => {
            $(#[test]
            fn $name() {
                refused_by($first, $block);
                refused_by($last, $block);
            })*
            const TESTED: &[&str] = &[$($block),*];
        };
    }

    refuses! {
        v4_this_network: "0.0.0.0/8" => "0.0.0.1", "0.255.255.255";
        v4_this_host: "0.0.0.0/32" => "0.0.0.0", "0.0.0.0";
        v4_private_10: "10.0.0.0/8" => "10.0.0.0", "10.255.255.255";
        v4_shared_address_space: "100.64.0.0/10" => "100.64.0.0", "100.127.255.255";
        v4_loopback: "127.0.0.0/8" => "127.0.0.1", "127.255.255.255";
        v4_link_local: "169.254.0.0/16" => "169.254.0.0", "169.254.169.254";
        v4_private_172: "172.16.0.0/12" => "172.16.0.0", "172.31.255.255";
        v4_ietf_protocol_assignments: "192.0.0.0/24" => "192.0.0.11", "192.0.0.255";
        v4_service_continuity: "192.0.0.0/29" => "192.0.0.0", "192.0.0.7";
        v4_dummy: "192.0.0.8/32" => "192.0.0.8", "192.0.0.8";
        v4_nat64_discovery_170: "192.0.0.170/32" => "192.0.0.170", "192.0.0.170";
        v4_nat64_discovery_171: "192.0.0.171/32" => "192.0.0.171", "192.0.0.171";
        v4_test_net_1: "192.0.2.0/24" => "192.0.2.0", "192.0.2.255";
        v4_deprecated_6to4_relay: "192.88.99.0/24" => "192.88.99.0", "192.88.99.255";
        v4_6a44_relay: "192.88.99.2/32" => "192.88.99.2", "192.88.99.2";
        v4_private_192: "192.168.0.0/16" => "192.168.0.0", "192.168.255.255";
        v4_benchmarking: "198.18.0.0/15" => "198.18.0.0", "198.19.255.255";
        v4_test_net_2: "198.51.100.0/24" => "198.51.100.0", "198.51.100.255";
        v4_test_net_3: "203.0.113.0/24" => "203.0.113.0", "203.0.113.255";
        v4_reserved: "240.0.0.0/4" => "240.0.0.0", "255.255.255.254";
        v4_limited_broadcast: "255.255.255.255/32" => "255.255.255.255", "255.255.255.255";
        v4_multicast: "224.0.0.0/4" => "224.0.0.0", "239.255.255.255";
        v6_loopback: "::1/128" => "::1", "::1";
        v6_unspecified: "::/128" => "::", "::";
        v6_ipv4_mapped: "::ffff:0:0/96" => "::ffff:0.0.0.0", "::ffff:255.255.255.255";
        v6_nat64_local_use: "64:ff9b:1::/48" => "64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff";
        v6_discard_only: "100::/64" => "100::", "100::ffff:ffff:ffff:ffff";
        v6_dummy_prefix: "100:0:0:1::/64" => "100:0:0:1::", "100::1:ffff:ffff:ffff:ffff";
        v6_ietf_protocol_assignments: "2001::/23" => "2001:100::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_teredo: "2001::/32" => "2001::", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_benchmarking: "2001:2::/48" => "2001:2::", "2001:2:0:ffff:ffff:ffff:ffff:ffff";
        v6_deprecated_orchid: "2001:10::/28" => "2001:10::", "2001:1f:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_documentation: "2001:db8::/32" => "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_6to4: "2002::/16" => "2002:5db8:d822::", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_documentation_3fff: "3fff::/20" => "3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_srv6_sids: "5f00::/16" => "5f00::", "5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_unique_local: "fc00::/7" => "fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_link_local: "fe80::/10" => "fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_0000: "::/8" => "::1:0:0:0", "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_0100: "100::/8" => "100:1::", "1ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_0200: "200::/7" => "200::", "3ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_0400: "400::/6" => "400::", "7ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_0800: "800::/5" => "800::", "fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_1000: "1000::/4" => "1000::", "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_4000: "4000::/3" => "4000::", "5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_6000: "6000::/3" => "6000::", "7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_8000: "8000::/3" => "8000::", "9fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_a000: "a000::/3" => "a000::", "bfff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_c000: "c000::/3" => "c000::", "dfff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_e000: "e000::/4" => "e000::", "efff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_f000: "f000::/5" => "f000::", "f7ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_f800: "f800::/6" => "f800::", "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_reserved_fe00: "fe00::/9" => "fe00::", "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_site_local: "fec0::/10" => "fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        v6_multicast: "ff00::/8" => "ff02::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
    }

    #[test]
    fn every_block_parses_and_is_aligned() {
        for entry in [IPV4_SPECIAL, IPV4_SPACE, IPV6_SPECIAL, IPV6_SPACE]
            .into_iter()
            .flatten()
        {
            assert!(Block::parse(entry.block).is_some(), "{}", entry.block);
        }
        assert!(Block::parse("10.0.0.1/8").is_none(), "host bits set");
        assert!(Block::parse("10.0.0.0/33").is_none());
    }

    #[test]
    fn every_entry_has_a_test() {
        let tested: HashSet<&str> = TESTED.iter().copied().collect();
        for entry in [IPV4_SPECIAL, IPV4_SPACE, IPV6_SPECIAL, IPV6_SPACE]
            .into_iter()
            .flatten()
        {
            // A global entry is tested in `global_entries_are_delivered_to`; the two address-
            // space rows that repeat a special-purpose block are tested under that one.
            let repeated = ["fc00::/7", "fe80::/10"].contains(&entry.block);
            if entry.reach != Global && !repeated {
                assert!(tested.contains(entry.block), "no test for {}", entry.block);
            }
        }
    }

    #[test]
    fn the_ipv6_top_level_covers_the_whole_space_once() {
        // Every address falls in exactly one top-level block: their sizes add up to 2^128,
        // counted in units of 2^118 (every top-level prefix is at most /10).
        let total: u32 = IPV6_SPACE
            .iter()
            .map(|e| 1u32 << (10 - Block::parse(e.block).unwrap().prefix))
            .sum();
        assert_eq!(total, 1 << 10);
        for ip in ["::1:2:3:4", "2a00::1", "fec0::1", "4000::1", "ff0e::1"] {
            let ip: IpAddr = ip.parse().unwrap();
            let holders = IPV6_SPACE
                .iter()
                .filter(|e| Block::parse(e.block).unwrap().contains(ip))
                .count();
            assert_eq!(holders, 1, "{ip}");
        }
    }

    #[test]
    fn global_entries_are_delivered_to() {
        // The registries' global exceptions inside non-global blocks: the most specific wins.
        for ip in [
            "192.0.0.9",
            "192.0.0.10",
            "192.31.196.1",
            "192.52.193.1",
            "192.175.48.1",
            "2001:1::1",
            "2001:1::2",
            "2001:1::3",
            "2001:3::1",
            "2001:4:112::1",
            "2001:20::1",
            "2001:30::1",
            "2620:4f:8000::1",
        ] {
            allowed(ip);
        }
        // Next to them, the covering block still refuses.
        refused_by("2001:1::4", "2001::/23");
        refused_by("192.0.0.12", "192.0.0.0/24");
    }

    #[test]
    fn ordinary_public_addresses_are_delivered_to() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.1",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "2606:2800:220:1::1",
            "2a00:1450:4001:82a::200e",
            "2001:200::1",
            "64:ff9b::5db8:d822",
        ] {
            allowed(ip);
        }
    }

    #[test]
    fn embedded_ipv4_is_checked_too() {
        // NAT64 is globally reachable itself; what it embeds decides.
        allowed("64:ff9b::8.8.8.8");
        for (ip, v4, block) in [
            ("64:ff9b::127.0.0.1", "127.0.0.1", "127.0.0.0/8"),
            ("64:ff9b::10.1.2.3", "10.1.2.3", "10.0.0.0/8"),
            (
                "64:ff9b::169.254.169.254",
                "169.254.169.254",
                "169.254.0.0/16",
            ),
            ("64:ff9b::100.64.0.1", "100.64.0.1", "100.64.0.0/10"),
            ("64:ff9b::192.0.2.1", "192.0.2.1", "192.0.2.0/24"),
        ] {
            let r = non_public(ip.parse().unwrap()).unwrap();
            assert_eq!(r.entry.block, block, "{ip}");
            assert_eq!(r.embedded, Some(v4.parse().unwrap()), "{ip}");
            assert!(r.to_string().contains(v4), "{r}");
        }
        // The other forms are refused as blocks, and carry their IPv4 address.
        for (ip, v4) in [
            ("::ffff:127.0.0.1", "127.0.0.1"),
            ("::127.0.0.1", "127.0.0.1"),
            ("::8.8.8.8", "8.8.8.8"),
            ("2002:7f00:1::", "127.0.0.1"),
            ("2002:a00:1::1", "10.0.0.1"),
            ("64:ff9b:1:7f00:0:100::", "127.0.0.1"),
        ] {
            let v6: Ipv6Addr = ip.parse().unwrap();
            assert_eq!(
                embedded_ipv4(v6),
                vec![v4.parse::<Ipv4Addr>().unwrap()],
                "{ip}"
            );
            assert!(non_public(IpAddr::V6(v6)).is_some(), "{ip}");
        }
        // Teredo: the server, and the client inverted.
        let teredo: Ipv6Addr = "2001:0:4136:e378:8000:63bf:3fff:fdd2".parse().unwrap();
        assert_eq!(
            embedded_ipv4(teredo),
            vec![
                Ipv4Addr::new(65, 54, 227, 120),
                Ipv4Addr::new(192, 0, 2, 45)
            ]
        );
        assert!(embedded_ipv4("2606:2800:220:1::1".parse().unwrap()).is_empty());
    }

    #[test]
    fn the_resolver_refuses_or_allows() {
        use ureq::Resolver;
        let refuse = Guard {
            allow_private: false,
        };
        let e = refuse.resolve("127.0.0.1:80").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("127.0.0.0/8 Loopback"), "{e}");
        // A name is checked after resolution: whatever it resolves to is what is refused.
        let e = refuse.resolve("localhost:80").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        let e = refuse.resolve("[64:ff9b::a9fe:a9fe]:80").unwrap_err();
        assert!(e.to_string().contains("embeds 169.254.169.254"), "{e}");
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
