package admin

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Reverse proxies. A proxy in front of hedge says who the client is and how it was
// reached in headers (X-Forwarded-For, -Host, -Proto), which any client can also send.
// So they are believed only from the peers that Config.TrustedProxies names
// (--trusted-proxies, PostHog's TRUSTED_PROXIES): from any other peer the client is the
// peer, the host the Host header, the scheme that of the connection. Trust decides the
// sign-in limits (which count per client address), the origin check of sessions (which
// compares Origin with the host), the cookies' Secure flag and __Host- prefix, and the
// absolute links of pagination and invites.

// ParseTrustedProxies reads a comma-separated list of addresses and CIDR prefixes
// (10.0.0.0/8, 2001:db8::/32, 127.0.0.1); "" is none.
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var prefixes []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("invalid trusted proxy %q: %w", s, err)
			}
			prefixes = append(prefixes, p.Masked())
			continue
		}
		addr, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("invalid trusted proxy %q: %w", s, err)
		}
		addr = addr.Unmap()
		prefixes = append(prefixes, netip.PrefixFrom(addr, addr.BitLen()))
	}
	return prefixes, nil
}

// proxyStrings is prefixes as Fiber's TrustedProxies takes them.
func proxyStrings(prefixes []netip.Prefix) []string {
	list := make([]string, len(prefixes))
	for i, p := range prefixes {
		list[i] = p.String()
	}
	return list
}

// trusted reports whether addr is one of the trusted proxies.
func (a *API) trusted(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range a.trustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// clientAddress is the address of the request's client: the peer, or, when the peer is
// a trusted proxy, the last address of X-Forwarded-For that is not a trusted proxy
// (each proxy appends the address it took the request from, so the addresses before
// the last untrusted one are the client's own word). When every address is a trusted
// proxy, the first one; when the header names none, the peer.
func (a *API) clientAddress(c *fiber.Ctx) string {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	peer = peer.Unmap()
	if !a.trusted(peer) {
		return peer.String()
	}
	client := peer
	hops := strings.Split(c.Get(fiber.HeaderXForwardedFor), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a hop that is no address: the ones before it cannot be placed
		}
		client = hop.Unmap()
		if !a.trusted(client) {
			break
		}
	}
	return client.String()
}
