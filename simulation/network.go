package simulation

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/protocol/keys"
)

// ErrUnreachable is returned when a dial is refused by the simulated
// network: the two hosts are cut apart, not linked, or the target sits
// behind a NAT and the dialer is not already connected to it.
var ErrUnreachable = errors.New("simulation: peer unreachable")

// LinkProps are the properties of one link. Both directions share them.
//
// Latency is added to every Write on a stream and writes on one stream are
// delivered in order, so it is a one-way delay per write, not per packet:
// a request-response round trip costs 2 x Latency, but a bulk transfer in
// many writes is slowed by Latency per write (mocknet's model; see
// docs/simulation.md). Bandwidth is a token bucket in bytes per second
// shared by both directions of the link; 0 means unlimited.
type LinkProps struct {
	Latency   time.Duration
	Bandwidth float64
}

// Network is an in-memory network of libp2p hosts, built on mocknet.
//
// Links are "physical" reachability: two hosts can connect only while a
// link joins them. Cut removes a link and closes the connections over it
// (a partition); Heal restores it. A host added with natted set can only
// dial out: Network's own Connect, and the hosts it hands out, refuse to
// open a connection toward it, while connections it opened itself work in
// both directions, as through a real NAT.
//
// Network is safe for concurrent use.
type Network struct {
	mn  mocknet.Mocknet
	def LinkProps

	mu     sync.Mutex // guards the fields below
	hosts  map[peer.ID]*simHost
	natted map[peer.ID]bool
	props  map[pairKey]LinkProps // configured links, cut or not
	cut    map[pairKey]bool
	down   map[peer.ID]bool
	next   int
}

type pairKey struct{ a, b peer.ID }

func key(a, b peer.ID) pairKey {
	if b < a {
		a, b = b, a
	}
	return pairKey{a, b}
}

// NewNetwork returns an empty network whose links get def unless Link says
// otherwise.
func NewNetwork(def LinkProps) *Network {
	return &Network{
		mn: mocknet.New(), def: def,
		hosts: map[peer.ID]*simHost{}, natted: map[peer.ID]bool{},
		props: map[pairKey]LinkProps{}, cut: map[pairKey]bool{}, down: map[peer.ID]bool{},
	}
}

// AddHost adds a host with the device key of id. The returned host is what
// a node.Config.Host gets; it applies the NAT rule to Connect and
// NewStream.
func (n *Network) AddHost(id *keys.Identity, natted bool) (host.Host, error) {
	k, err := crypto.UnmarshalEd25519PrivateKey(id.PrivateKey())
	if err != nil {
		return nil, fmt.Errorf("simulated host key: %w", err)
	}
	n.mu.Lock()
	n.next++
	i := n.next
	n.mu.Unlock()
	// 100::/64 is the IPv6 discard prefix: the address is never routable.
	ip := net.IP{0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}
	addr, err := ma.NewMultiaddr(fmt.Sprintf("/ip6/%s/tcp/4242", ip))
	if err != nil {
		return nil, err
	}
	h, err := n.mn.AddPeer(k, addr)
	if err != nil {
		return nil, fmt.Errorf("adding simulated host: %w", err)
	}
	sh := &simHost{Host: h, net: n}
	n.mu.Lock()
	n.hosts[h.ID()] = sh
	n.natted[h.ID()] = natted
	n.mu.Unlock()
	return sh, nil
}

// Link joins a and b with props (replacing an earlier link between them).
// A cut pair stays cut until Heal.
func (n *Network) Link(a, b peer.ID, props LinkProps) error {
	n.mu.Lock()
	n.props[key(a, b)] = props
	cut := n.cut[key(a, b)]
	n.mu.Unlock()
	if cut {
		return nil
	}
	return n.setLink(a, b, props)
}

func (n *Network) setLink(a, b peer.ID, props LinkProps) error {
	if ls := n.mn.LinksBetweenPeers(a, b); len(ls) > 0 {
		for _, l := range ls {
			l.SetOptions(mocknet.LinkOptions{Latency: props.Latency, Bandwidth: props.Bandwidth})
		}
		return nil
	}
	l, err := n.mn.LinkPeers(a, b)
	if err != nil {
		return fmt.Errorf("linking %s and %s: %w", a, b, err)
	}
	l.SetOptions(mocknet.LinkOptions{Latency: props.Latency, Bandwidth: props.Bandwidth})
	return nil
}

// Unlink removes the link between a and b and closes their connections.
func (n *Network) Unlink(a, b peer.ID) error {
	n.mu.Lock()
	delete(n.props, key(a, b))
	delete(n.cut, key(a, b))
	n.mu.Unlock()
	if len(n.mn.LinksBetweenPeers(a, b)) > 0 {
		if err := n.mn.UnlinkPeers(a, b); err != nil {
			return fmt.Errorf("unlinking %s and %s: %w", a, b, err)
		}
	}
	n.closeConns(a, b)
	return nil
}

// LinkDefault joins a and b with the network's default properties.
func (n *Network) LinkDefault(a, b peer.ID) error { return n.Link(a, b, n.def) }

// Linked reports whether a and b are joined by a link that is not cut.
func (n *Network) Linked(a, b peer.ID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.props[key(a, b)]
	return ok && !n.cut[key(a, b)]
}

// Cut partitions a from b: the link goes and every connection between
// them closes. Dials fail until Heal.
func (n *Network) Cut(a, b peer.ID) error {
	n.mu.Lock()
	n.cut[key(a, b)] = true
	n.mu.Unlock()
	if len(n.mn.LinksBetweenPeers(a, b)) > 0 {
		if err := n.mn.UnlinkPeers(a, b); err != nil {
			return fmt.Errorf("cutting %s from %s: %w", a, b, err)
		}
	}
	n.closeConns(a, b)
	return nil
}

// closeConns closes the connections between a and b on both sides and
// waits (briefly) until neither side reports one.
func (n *Network) closeConns(a, b peer.ID) {
	for i := 0; i < 200; i++ {
		open := false
		for _, p := range [][2]peer.ID{{a, b}, {b, a}} {
			for _, c := range n.mn.Net(p[0]).ConnsToPeer(p[1]) {
				open = true
				_ = c.Close()
			}
		}
		if !open {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Heal restores a link that Cut removed. It does not connect: nodes redial
// on their own, or the caller calls Connect.
func (n *Network) Heal(a, b peer.ID) error {
	n.mu.Lock()
	props, ok := n.props[key(a, b)]
	wasCut := n.cut[key(a, b)]
	delete(n.cut, key(a, b))
	n.mu.Unlock()
	if !ok || !wasCut {
		return nil
	}
	return n.setLink(a, b, props)
}

// HealAll heals every cut.
func (n *Network) HealAll() {
	n.mu.Lock()
	var cuts []pairKey
	for k := range n.cut {
		cuts = append(cuts, k)
	}
	n.mu.Unlock()
	for _, k := range cuts {
		_ = n.Heal(k.a, k.b)
	}
}

// CanDial reports whether from may open a new connection to to: they are
// linked and not cut, and to is not behind a NAT.
func (n *Network) CanDial(from, to peer.ID) bool {
	n.mu.Lock()
	refused := n.natted[to] || n.down[to] || n.down[from]
	n.mu.Unlock()
	return !refused && n.Linked(from, to)
}

// SetDown takes p off the network (every connection closed, every dial to
// or from it refused) or puts it back: a device that is switched off.
func (n *Network) SetDown(p peer.ID, down bool) {
	n.mu.Lock()
	n.down[p] = down
	n.mu.Unlock()
	if down {
		n.Disconnect(p)
	}
}

// Natted reports whether p was added behind a NAT.
func (n *Network) Natted(p peer.ID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.natted[p]
}

// Connect makes from dial to, as a node would, applying the NAT rule.
func (n *Network) Connect(ctx context.Context, from, to peer.ID) error {
	n.mu.Lock()
	h := n.hosts[from]
	n.mu.Unlock()
	if h == nil {
		return fmt.Errorf("simulation: no host %s", from)
	}
	return h.Connect(ctx, peer.AddrInfo{ID: to})
}

// Connected reports whether a and b have a connection open.
func (n *Network) Connected(a, b peer.ID) bool {
	return n.mn.Net(a).Connectedness(b) == network.Connected
}

// Disconnect closes every connection of p (its links stay).
func (n *Network) Disconnect(p peer.ID) {
	for _, c := range n.mn.Net(p).Conns() {
		n.closeConns(p, c.RemotePeer())
	}
}

// Close closes every host.
func (n *Network) Close() error { return n.mn.Close() }

// simHost is a mocknet host that refuses to dial a NAT'ed or cut-off peer
// it is not already connected to. It overrides the two calls through
// which node/ opens connections.
type simHost struct {
	host.Host
	net *Network
}

func (h *simHost) allowed(p peer.ID) error {
	if h.Network().Connectedness(p) == network.Connected {
		return nil
	}
	if !h.net.CanDial(h.ID(), p) {
		return fmt.Errorf("dialing %s from %s: %w", p, h.ID(), ErrUnreachable)
	}
	return nil
}

// Connect implements host.Host.
func (h *simHost) Connect(ctx context.Context, pi peer.AddrInfo) error {
	if err := h.allowed(pi.ID); err != nil {
		return err
	}
	return h.Host.Connect(ctx, pi)
}

// NewStream implements host.Host.
func (h *simHost) NewStream(ctx context.Context, p peer.ID, pids ...protocol.ID) (network.Stream, error) {
	if err := h.allowed(p); err != nil {
		return nil, err
	}
	return h.Host.NewStream(ctx, p, pids...)
}
