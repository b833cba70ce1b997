package punchtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weftsync/weft/node/enrol"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/transport/quicreuse"
	"github.com/marcopolo/simnet"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/quic-go/quic-go"
	"go.uber.org/fx"

	"github.com/weftsync/weft/internal/hometest"
	"github.com/weftsync/weft/node"
	"github.com/weftsync/weft/node/connect"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/store/home"
)

// The hole-punching proof runs in go-libp2p's simulated network: QUIC
// over simnet's in-memory UDP, under testing/synctest so that time is
// virtual. libp2p only punches holes for hosts that see public addresses,
// so the addresses are public-looking ones (1.2.0.1 for the relay,
// 2.2.0.x for the devices) that exist only inside the simulation. The
// modelling follows go-libp2p's own p2p/protocol/holepunch tests.

// sourceIP tells quicreuse which local address a simulated socket has
// (there is no kernel routing table to ask).
type sourceIP struct{ ip atomic.Pointer[net.IP] }

func (s *sourceIP) PreferredSourceIPForDestination(*net.UDPAddr) (net.IP, error) {
	return *s.ip.Load(), nil
}

// simQUIC makes the host's QUIC sockets simulated ones attached to router.
// A public socket accepts packets from anyone; any other only from
// addresses it has sent to (router is a stateful firewall per socket, the
// behaviour of an endpoint-independent NAT that hole punching relies on).
func simQUIC(router *simnet.SimpleFirewallRouter, public bool) libp2p.Option {
	src := &sourceIP{}
	// A QUICReuse constructor of our own is not closed with the host, so
	// close it on the host's fx stop (as x/simlibp2p.QUICSimnet does);
	// otherwise its goroutines outlive the synctest bubble.
	newCM := func(l fx.Lifecycle, reset quic.StatelessResetKey, token quic.TokenGeneratorKey, opts ...quicreuse.Option) (*quicreuse.ConnManager, error) {
		cm, err := quicreuse.NewConnManager(reset, token, opts...)
		if err != nil {
			return nil, err
		}
		l.Append(fx.StopHook(cm.Close))
		return cm, nil
	}
	return libp2p.QUICReuse(newCM,
		quicreuse.OverrideSourceIPSelector(func() (quicreuse.SourceIPSelector, error) { return src, nil }),
		quicreuse.OverrideListenUDP(func(_ string, addr *net.UDPAddr) (net.PacketConn, error) {
			src.ip.Store(&addr.IP)
			if public {
				router.SetAddrPubliclyReachable(addr)
			}
			c := simnet.NewSimConn(addr)
			c.SetUpPacketReceiver(router)
			router.AddNode(addr, c)
			return c, nil
		}))
}

// simDevice is a weft node on a simulated host behind a firewall.
type simDevice struct {
	n      *node.Node
	fs     *folder.MemFS
	host   host.Host
	cancel context.CancelFunc
	done   chan error
}

// startSimDevice runs a node of home h on a host built from hostOptions
// with simulated QUIC behind the firewall router, listening on listen.
func startSimDevice(t *testing.T, h *home.Home, router *simnet.SimpleFirewallRouter, listen string, relays []string, logw io.Writer, name string) *simDevice {
	t.Helper()
	id, err := h.Identity()
	if err != nil {
		t.Fatal(err)
	}
	tr := connect.NewPunchTracer()
	opts, err := connect.HostOptions(connect.HostConfig{Identity: id, ListenAddrs: []string{listen}, Punches: tr})
	if err != nil {
		t.Fatal(err)
	}
	// Behind a NAT a host does not know its public address: it announces
	// none of its listen addresses (so members cannot learn and dial them)
	// and learns its public address from what the relay observes
	// (identify), which is all hole punching needs.
	noDirect := libp2p.AddrsFactory(func(as []ma.Multiaddr) []ma.Multiaddr {
		return slices.DeleteFunc(as, func(a ma.Multiaddr) bool { _, err := a.ValueForProtocol(ma.P_CIRCUIT); return err != nil })
	})
	hst, err := libp2p.New(append(opts, simQUIC(router, false), noDirect)...)
	if err != nil {
		t.Fatal(err)
	}
	d := &simDevice{fs: folder.NewMemFS(folder.MemFSConfig{}), host: hst, done: make(chan error, 1)}
	d.n, err = node.New(node.Config{
		Home: h, Host: hst, Punches: tr, Relays: relays, APIAddr: "-", NoWatcher: true,
		FolderFS: func(string) (folder.FS, error) { return d.fs, nil },
		Logger:   slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelDebug})).With("dev", name),
	})
	if err != nil {
		t.Fatal(err)
	}
	var ctx context.Context
	ctx, d.cancel = context.WithCancel(context.Background())
	go func() { d.done <- d.n.Run(ctx) }()
	<-d.n.Ready()
	return d
}

func (d *simDevice) stop(t *testing.T) {
	t.Helper()
	d.cancel()
	if err := <-d.done; err != nil {
		t.Errorf("node run: %v", err)
	}
	if err := d.host.Close(); err != nil {
		t.Errorf("closing host: %v", err)
	}
}

// writeMem writes content to p in fsys the way an editor does.
func writeMem(t *testing.T, fsys *folder.MemFS, p string, content []byte) {
	t.Helper()
	f, err := fsys.CreateTemp("", ".tmp-")
	if err != nil {
		t.Fatal(err)
	}
	tmp := f.Path()
	if _, err := f.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

func readMem(fsys *folder.MemFS, p string) ([]byte, bool) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return b, err == nil
}

// TestHolePunchedSync is the proof that two devices behind NATs reach
// each other through a relay, punch a hole (DCUtR) and sync directly:
//
//   - a relay at 1.2.0.1 with go-libp2p's default circuit limits, so a
//     relayed connection is limited and weft's streams (which never ask
//     for limited connections) cannot run on it;
//   - devices A (2.2.0.1) and B (2.2.0.2), real node.Node instances on
//     hosts built from hostOptions, each behind a stateful firewall that
//     drops packets from addresses it has not sent to; each is given the
//     relay in Config.Relays and nothing about the other's addresses;
//   - both reserve on the relay, dial each other through it, DCUtR makes
//     a direct connection, and a file written on A arrives on B
//     byte-identical; both report the other as holepunched.
func TestHolePunchedSync(t *testing.T) {
	logs := &hometest.SyncLog{}
	synctest.Test(t, func(t *testing.T) {
		// Runs last: goleveldb's Close leaves a goroutine that drains its
		// memory pool for up to a second of (virtual) time.
		defer time.Sleep(2 * time.Second)
		defer func() {
			if t.Failed() || os.Getenv("HP_LOGS") != "" {
				t.Logf("node logs:\n%s", logs)
			}
		}()
		router := &simnet.SimpleFirewallRouter{}
		relay, err := libp2p.New(
			simQUIC(router, true),
			libp2p.ListenAddrStrings("/ip4/1.2.0.1/udp/8000/quic-v1"),
			libp2p.DisableRelay(),
			libp2p.ResourceManager(&network.NullResourceManager{}),
		)
		if err != nil {
			t.Fatal(err)
		}
		defer relay.Close()
		svc, err := relayv2.New(relay)
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close()
		relayAddr := "/ip4/1.2.0.1/udp/8000/quic-v1/p2p/" + relay.ID().String()

		ha, hb := hometest.PairHomes(t, enrol.InitVault, t.TempDir())
		a := startSimDevice(t, ha, router, "/ip4/2.2.0.1/udp/8000/quic-v1", []string{relayAddr}, logs, "A")
		defer a.stop(t)
		b := startSimDevice(t, hb, router, "/ip4/2.2.0.2/udp/8001/quic-v1", []string{relayAddr}, logs, "B")
		defer b.stop(t)

		content := make([]byte, 300<<10) // several chunks, not inline
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range content {
			content[i] = byte(rng.Uint32())
		}
		writeMem(t, a.fs, "report.bin", content)
		if err := a.n.Scan(context.Background()); err != nil {
			t.Fatal(err)
		}

		start := time.Now() // virtual
		var got []byte
		for range 600 { // up to 10 virtual minutes
			if b2, ok := readMem(b.fs, "report.bin"); ok && bytes.Equal(b2, content) {
				got = b2
				break
			}
			time.Sleep(time.Second)
		}
		if !bytes.Equal(got, content) {
			t.Fatalf("B has %d bytes of report.bin, want the %d bytes A wrote", len(got), len(content))
		}
		t.Logf("report.bin arrived on B after %v of virtual time", time.Since(start))

		// The devices ended connected directly, by a hole punch.
		direct := 0
		for _, c := range a.host.Network().ConnsToPeer(b.host.ID()) {
			if connect.IsRelayed(c) {
				for _, s := range c.GetStreams() {
					if strings.HasPrefix(string(s.Protocol()), "/weft/") {
						t.Errorf("weft stream %s on relayed connection %s", s.Protocol(), c.RemoteMultiaddr())
					}
				}
				continue
			}
			direct++
			if c.Stat().Limited {
				t.Errorf("direct connection %s is limited", c.RemoteMultiaddr())
			}
		}
		if direct == 0 {
			t.Errorf("got no direct connection from A to B, want a hole-punched one")
		}
		for _, pair := range []struct {
			name string
			d    *simDevice
			peer peer.ID
		}{{"A", a, b.host.ID()}, {"B", b, a.host.ID()}} {
			var kind string
			for _, p := range pair.d.n.Status().Peers {
				if p.ID == fmt.Sprint(mustDevice(t, pair.peer)) {
					kind = p.Connection
				}
			}
			if kind != connect.ConnHolepunched {
				t.Errorf("%s reports its peer as %q, want %q", pair.name, kind, connect.ConnHolepunched)
			}
		}
	})
}

func mustDevice(t *testing.T, p peer.ID) string {
	d, err := node.DeviceIDOf(p)
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// simRelay starts a circuit v2 relay at a public simulated address and
// returns its host and its multiaddr with /p2p/ID.
func simRelay(t *testing.T, router *simnet.SimpleFirewallRouter, opts ...relayv2.Option) (host.Host, string) {
	t.Helper()
	h, err := libp2p.New(
		simQUIC(router, true),
		libp2p.ListenAddrStrings("/ip4/1.2.0.1/udp/8000/quic-v1"),
		libp2p.DisableRelay(),
		libp2p.ResourceManager(&network.NullResourceManager{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := relayv2.New(h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		svc.Close()
		h.Close()
	})
	return h, "/ip4/1.2.0.1/udp/8000/quic-v1/p2p/" + h.ID().String()
}

// TestReservationKeptAndRestored checks keepReservations against a relay
// whose reservations last two minutes: the device is still reachable
// through the relay after ten (so it renewed), and again shortly after
// the relay drops its connection (so it reserved again).
func TestReservationKeptAndRestored(t *testing.T) {
	logs := &hometest.SyncLog{}
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(2 * time.Second) // see TestHolePunchedSync
		defer func() {
			if t.Failed() {
				t.Logf("node logs:\n%s", logs)
			}
		}()
		router := &simnet.SimpleFirewallRouter{}
		res := relayv2.DefaultResources()
		res.ReservationTTL = 2 * time.Minute
		relay, relayAddr := simRelay(t, router, relayv2.WithResources(res))

		h, err := home.Open(filepath.Join(t.TempDir(), "home"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := enrol.InitVault(h, filepath.Join(t.TempDir(), "folder"), "", time.Now()); err != nil {
			t.Fatal(err)
		}
		d := startSimDevice(t, h, router, "/ip4/2.2.0.1/udp/8000/quic-v1", []string{relayAddr}, logs, "A")
		defer d.stop(t)

		// An outside host dials the device through the relay; that works
		// only while the device holds a reservation.
		out, err := libp2p.New(simQUIC(router, true), libp2p.ListenAddrStrings("/ip4/3.3.0.1/udp/8000/quic-v1"),
			libp2p.ResourceManager(&network.NullResourceManager{}))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		circuit := ma.StringCast(relayAddr + "/p2p-circuit")
		dial := func(when string) {
			t.Helper()
			ctx, cancel := context.WithTimeout(network.WithAllowLimitedConn(context.Background(), "test"), 10*time.Second)
			defer cancel()
			err := out.Connect(ctx, peer.AddrInfo{ID: d.host.ID(), Addrs: []ma.Multiaddr{circuit}})
			if err != nil {
				t.Fatalf("%s: dialling the device through the relay: %v", when, err)
			}
			if err := out.Network().ClosePeer(d.host.ID()); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		dial("at start")
		time.Sleep(10 * time.Minute)
		dial("after 10 minutes (5 reservation lifetimes)")
		if err := relay.Network().ClosePeer(d.host.ID()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * connect.ReservationCheck)
		dial("after the relay dropped the device's connection")
	})
}
