package batchexport

import (
	"net/netip"
	"strings"
)

// nonPublicV4 are the IPv4 blocks that are not addresses of the public internet: the
// special-purpose blocks (this network, private, shared/CGNAT, loopback, link-local,
// IETF protocol assignments, documentation, the 6to4 relay anycast, benchmarking),
// multicast, and the reserved block with the limited broadcast address in it.
var nonPublicV4 = prefixes(
	"0.0.0.0/8",          // "this network"
	"10.0.0.0/8",         // private
	"100.64.0.0/10",      // shared address space (carrier-grade NAT)
	"127.0.0.0/8",        // loopback
	"169.254.0.0/16",     // link-local (cloud metadata services live here)
	"172.16.0.0/12",      // private
	"192.0.0.0/24",       // IETF protocol assignments
	"192.0.2.0/24",       // documentation (TEST-NET-1)
	"192.88.99.0/24",     // 6to4 relay anycast, deprecated
	"192.168.0.0/16",     // private
	"198.18.0.0/15",      // benchmarking
	"198.51.100.0/24",    // documentation (TEST-NET-2)
	"203.0.113.0/24",     // documentation (TEST-NET-3)
	"224.0.0.0/4",        // multicast
	"240.0.0.0/4",        // reserved
	"255.255.255.255/32", // limited broadcast (inside 240.0.0.0/4; named for the reader)
)

// globalUnicastV6 is the only IPv6 block allocated for unicast on the internet: an
// address outside it (IPv4-compatible ::a.b.c.d, ::/128, ::1, 100::/64, fc00::/7,
// fe80::/10, ff00::/8...) is not public, except the two forms below that carry an
// IPv4 address and are judged by it.
var globalUnicastV6 = netip.MustParsePrefix("2000::/3")

// nonPublicV6 are the special-purpose blocks of IPv6 that are not public, listed
// whole, the ones outside 2000::/3 included.
var nonPublicV6 = prefixes(
	"::/128",         // unspecified
	"::1/128",        // loopback
	"64:ff9b:1::/48", // local-use IPv4/IPv6 translation
	"100::/64",       // discard-only
	"100:0:0:1::/64", // dummy prefix
	"2001::/23",      // IETF protocol assignments (Teredo, benchmarking, ORCHID...)
	"2001:db8::/32",  // documentation
	"3fff::/20",      // documentation
	"5f00::/16",      // segment routing (SRv6) SIDs
	"fc00::/7",       // unique local
	"fe80::/10",      // link-local
	"ff00::/8",       // multicast
)

// The IPv6 forms that carry an IPv4 address: IPv4-mapped ::ffff:a.b.c.d (netip's
// Is4In6), NAT64 64:ff9b::a.b.c.d (the last 32 bits) and 6to4 2002:AABB:CCDD::/48 (bits
// 16 to 47). They reach the IPv4 address they carry, so they are as public as it is.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func prefixes(blocks ...string) []netip.Prefix {
	list := make([]netip.Prefix, len(blocks))
	for i, b := range blocks {
		list[i] = netip.MustParsePrefix(b)
	}
	return list
}

// publicAddress says whether a is an address of the public internet, rather than of
// this host, its networks or a special purpose. It is the one test of both an
// endpoint_url when an export is saved and each address an upload dials.
func publicAddress(a netip.Addr) bool {
	a = a.WithZone("") // a zone names a link: fe80::1%eth0 is judged as fe80::1
	switch {
	case a.Is4In6():
		a = a.Unmap()
	case nat64.Contains(a):
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:16]))
	case sixToFour.Contains(a):
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[2:6]))
	}
	if a.Is4() {
		return !inAny(nonPublicV4, a)
	}
	return a.Is6() && globalUnicastV6.Contains(a) && !inAny(nonPublicV6, a)
}

func inAny(blocks []netip.Prefix, a netip.Addr) bool {
	for _, p := range blocks {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// localHostName says whether a host name names this host whatever DNS says:
// localhost and the names under it, with or without the final dot.
func localHostName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}
