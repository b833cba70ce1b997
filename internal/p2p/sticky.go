package p2p

import (
	"errors"
	"fmt"
	"strconv"

	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Sticky listen ports (docs/connectivity.md, "Listen ports"): a device
// that listens where the system picks a port (a configured address with
// port 0, the default) listens on the same port at its next start, so the
// addresses its peers remember of it stay valid across restarts; where
// mDNS does not reach (a VPN, two subnets, Wi-Fi that filters multicast),
// those remembered addresses are how two restarted devices find each
// other again.

// Ports maps each configured listen address whose port is 0, as
// configured (for example "/ip4/0.0.0.0/tcp/0"), to the port it got.
type Ports map[string]int

// ListenNet is what ListenSticky needs of a host's network
// (host.Host.Network()).
type ListenNet interface {
	Listen(addrs ...ma.Multiaddr) error
	ListenAddresses() []ma.Multiaddr
}

// ListenSticky makes n listen on every address of configured, in order,
// and returns the ports the port-0 addresses got, for the next start.
//
// An address with port 0 first tries the port it got last time
// (last[address]); an IPv6 address with none recorded first tries the
// port that an IPv4 address of the same transport got just before it, so
// both families answer on one port (one rule for a firewall). When that
// port is taken (taken says so, or listening on it fails), the address
// takes whatever port the system gives. An address with a port of its own
// is listened on as configured.
//
// failed lists the addresses that could not be listened on at all (an
// IPv6 address on a host without IPv6, a configured port in use); err is
// not nil only when configured holds an address that does not parse, or
// none could be listened on, the cases where the host cannot work.
func ListenSticky(n ListenNet, configured []string, last Ports, taken func(ma.Multiaddr) bool) (got Ports, failed []error, err error) {
	got = Ports{}
	type held struct {
		shape string // the address without its IP and port
		ip6   bool
		port  int
	}
	var done []held
	listened := 0
	for _, s := range configured {
		m, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, nil, fmt.Errorf("listen address %q: %w", s, err)
		}
		port, ok := portOf(m)
		if !ok || port != 0 {
			if err := n.Listen(m); err != nil {
				failed = append(failed, fmt.Errorf("listening on %s: %w", m, err))
				continue
			}
			listened++
			continue
		}
		shape, ip6 := shapeOf(m)
		want := last[s]
		if want == 0 && ip6 {
			for _, h := range done {
				if !h.ip6 && h.shape == shape {
					want = h.port
					break
				}
			}
		}
		if want > 0 && want <= 65535 {
			if mp, err := withPort(m, want); err == nil && (taken == nil || !taken(mp)) && n.Listen(mp) == nil {
				got[s] = want
				done = append(done, held{shape, ip6, want})
				listened++
				continue
			}
		}
		before := n.ListenAddresses()
		if err := n.Listen(m); err != nil {
			failed = append(failed, fmt.Errorf("listening on %s: %w", m, err))
			continue
		}
		listened++
		if p, ok := newPort(m, before, n.ListenAddresses()); ok {
			got[s] = p
			done = append(done, held{shape, ip6, p})
		}
	}
	if listened == 0 && len(configured) > 0 {
		return nil, failed, fmt.Errorf("listening on none of %d addresses: %w", len(configured), errors.Join(failed...))
	}
	return got, failed, nil
}

// portOf returns the TCP or UDP port of m, and whether it has one.
func portOf(m ma.Multiaddr) (int, bool) {
	for _, c := range m {
		if c.Code() == ma.P_TCP || c.Code() == ma.P_UDP {
			p, err := strconv.Atoi(c.Value())
			return p, err == nil
		}
	}
	return 0, false
}

// withPort returns m with its TCP or UDP port replaced by port.
func withPort(m ma.Multiaddr, port int) (ma.Multiaddr, error) {
	out := make(ma.Multiaddr, 0, len(m))
	for _, c := range m {
		if c.Code() == ma.P_TCP || c.Code() == ma.P_UDP {
			nc, err := ma.NewComponent(c.Protocol().Name, strconv.Itoa(port))
			if err != nil {
				return nil, err
			}
			c = *nc
		}
		out = append(out, c)
	}
	return out, nil
}

// shapeOf returns m with its IP address and port left out (the transport
// stack, "/tcp/" or "/udp//quic-v1"), and whether it is IPv6.
func shapeOf(m ma.Multiaddr) (string, bool) {
	shape, ip6 := "", false
	for _, c := range m {
		switch c.Code() {
		case ma.P_IP4:
		case ma.P_IP6:
			ip6 = true
		case ma.P_TCP, ma.P_UDP:
			shape += "/" + c.Protocol().Name + "/"
		default:
			shape += c.String()
		}
	}
	return shape, ip6
}

// newPort finds the port that listening on m (port 0) got: the address
// of after, not in before, that is m but for its port.
func newPort(m ma.Multiaddr, before, after []ma.Multiaddr) (int, bool) {
	for _, a := range after {
		if ma.Contains(before, a) {
			continue
		}
		p, ok := portOf(a)
		if !ok {
			continue
		}
		if w, err := withPort(m, p); err == nil && w.Equal(a) {
			return p, true
		}
	}
	return 0, false
}

// TCPPortTaken reports whether m is a TCP address that something already
// listens on, by binding it without SO_REUSEPORT for a moment. libp2p's
// TCP transport listens with SO_REUSEPORT, and Linux lets two such
// listeners of one user share a port, handing each connection to one of
// them: a device that took back its port while another weft process (a
// second home, a test) held it would get half of that process's
// connections. A port the system hands out for port 0 is never shared
// that way, so only a remembered port needs the check.
func TCPPortTaken(m ma.Multiaddr) bool {
	if _, err := m.ValueForProtocol(ma.P_TCP); err != nil {
		return false
	}
	l, err := manet.Listen(m)
	if err != nil {
		return true
	}
	l.Close()
	return false
}
