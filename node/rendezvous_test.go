package node

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/enrol"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/internal/hometest"
	"github.com/weftsync/weft/node/connect"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/relay"
	"github.com/weftsync/weft/store/home"
)

// dhtServers runs n DHT servers of weft's DHT on loopback, connected to
// each other, and returns their multiaddrs (with /p2p/<ID>).
func dhtServers(t *testing.T, n int) []string {
	t.Helper()
	var hosts []host.Host
	var addrs []string
	for range n {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := dht.New(h, dht.Mode(dht.ModeServer), dht.ProtocolPrefix(relay.DHTPrefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			d.Close()
			h.Close()
		})
		for _, o := range hosts {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := h.Connect(ctx, peer.AddrInfo{ID: o.ID(), Addrs: o.Addrs()})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		hosts = append(hosts, h)
		addrs = append(addrs, h.Addrs()[0].String()+"/p2p/"+h.ID().String())
	}
	return addrs
}

// startRendezvousNode runs a node of home h on loopback with the given
// bootstrap peers, a fast rendezvous loop, no mDNS and no relays.
func startRendezvousNode(t *testing.T, h *home.Home, bootstrap []string, logw *hometest.SyncLog) *Node {
	t.Helper()
	n, err := New(Config{
		Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-", Bootstrap: bootstrap,
		Logger: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	n.rdv.CheckEvery, n.rdv.FindEvery, n.rdv.ProvideEvery = 50*time.Millisecond, 50*time.Millisecond, time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("node run: %v", err)
		}
	})
	<-n.Ready()
	return n
}

// TestDHTRendezvousSync: two devices of one vault that know nothing of
// each other (no remembered addresses, no relay, no mDNS) but share DHT
// bootstrap peers find each other under the vault's rendezvous name,
// connect, remember each other and sync a file. A device of another vault
// that provides the first vault's name too (as a revoked former member
// could) is found and ignored: never connected, never remembered.
func TestDHTRendezvousSync(t *testing.T) {
	servers := dhtServers(t, 3)
	dir := t.TempDir()
	ha, hb := hometest.PairHomes(t, enrol.InitVault, dir)
	logA, logB, logC := &hometest.SyncLog{}, &hometest.SyncLog{}, &hometest.SyncLog{}
	defer func() {
		if t.Failed() {
			t.Logf("A:\n%s\nB:\n%s\nC:\n%s", logA, logB, logC)
		}
	}()

	// C, a device of another vault, on the same DHT.
	hc, err := home.Open(filepath.Join(dir, "c", "home"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := enrol.InitVault(hc, filepath.Join(dir, "c", "folder"), "", time.Now()); err != nil {
		t.Fatal(err)
	}
	c := startRendezvousNode(t, hc, servers[:1], logC)

	a := startRendezvousNode(t, ha, servers[1:2], logA)
	va := a.vaultsNow()[0]
	if c.vaultsNow()[0].rendezvousKey() == va.rendezvousKey() {
		t.Fatal("two vaults share a rendezvous key")
	}
	// C also provides A's names. Until C has done so, B stays off, so
	// whoever searches for B finds C's record first or in the same query.
	waitUntil(t, 30*time.Second, func() error {
		d := c.rdv.DHT()
		if d == nil {
			return fmt.Errorf("C's DHT has not started")
		}
		for _, w := range connect.RendezvousWindows(time.Now()) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := d.Provide(ctx, connect.RendezvousName(va.rendezvousKey(), w), true)
			cancel()
			if err != nil {
				return fmt.Errorf("C providing A's name: %w", err)
			}
		}
		return nil
	})

	b := startRendezvousNode(t, hb, servers[2:], logB)
	if known := va.book.All(); len(known) != 0 {
		t.Fatalf("A remembers %v before meeting, want nothing", known)
	}

	folderA, folderB := filepath.Join(dir, "a", "folder"), filepath.Join(dir, "b", "folder")
	content := bytes.Repeat([]byte("met through the DHT\n"), 1000)
	if err := os.WriteFile(filepath.Join(folderA, "note.md"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, func() error {
		got, err := os.ReadFile(filepath.Join(folderB, "note.md"))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, content) {
			return fmt.Errorf("B has %d bytes, want %d", len(got), len(content))
		}
		return nil
	})

	// The meeting came from the DHT, and each side remembers the other.
	sa, sb := a.rdv.Stats(), b.rdv.Stats()
	if !sa.Met[b.host.ID()] && !sb.Met[a.host.ID()] {
		t.Errorf("got met A=%v B=%v, want A or B to have met the other through the DHT", sa.Met, sb.Met)
	}
	waitUntil(t, 10*time.Second, func() error {
		if len(va.book.All()[b.ID()]) == 0 {
			return fmt.Errorf("A remembers no address of B")
		}
		if len(b.vaultsNow()[0].book.All()[a.ID()]) == 0 {
			return fmt.Errorf("B remembers no address of A")
		}
		return nil
	})

	// C was found (whoever searched got its record) and ignored.
	waitUntil(t, 10*time.Second, func() error {
		if !a.rdv.Stats().Ignored[c.host.ID()] && !b.rdv.Stats().Ignored[c.host.ID()] {
			return fmt.Errorf("neither A nor B has seen C's provider record yet")
		}
		return nil
	})
	for _, n := range []*Node{a, b} {
		if got := n.host.Network().Connectedness(c.host.ID()); got == network.Connected {
			t.Errorf("%s is connected to C, a device of another vault", n.ID().Short())
		}
		if _, ok := n.vaultsNow()[0].book.All()[c.ID()]; ok {
			t.Errorf("%s remembers C, a device of another vault", n.ID().Short())
		}
		if n.rdv.Stats().Met[c.host.ID()] {
			t.Errorf("%s met C through the DHT", n.ID().Short())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "c", "folder", "note.md")); err == nil {
		t.Errorf("C got A's file")
	}
}

// TestDHTIdleWithoutBootstrap: with no bootstrap peer and no relay the DHT
// does not start, the node dials nobody, and the log says so once.
func TestDHTIdleWithoutBootstrap(t *testing.T) {
	h, _ := testHome(t)
	logw := &hometest.SyncLog{}
	n := startRendezvousNode(t, h, nil, logw)
	waitUntil(t, 10*time.Second, func() error {
		if st := n.rdv.Stats(); st.Steps < 5 {
			return fmt.Errorf("%d rendezvous steps, want 5", st.Steps)
		}
		return nil
	})
	if n.rdv.Stats().Started {
		t.Errorf("the DHT started with no bootstrap peer")
	}
	if peers := n.host.Network().Peers(); len(peers) != 0 {
		t.Errorf("connected to %v, want nobody", peers)
	}
	if got := strings.Count(logw.String(), "DHT rendezvous idle"); got != 1 {
		t.Errorf("idle message logged %d times, want once:\n%s", got, logw)
	}
}

// TestNoDHT: Config.NoDHT keeps the DHT off even with bootstrap peers.
func TestNoDHT(t *testing.T) {
	servers := dhtServers(t, 1)
	n, _ := testNodeWith(t, Config{NoDHT: true, Bootstrap: servers})
	if err := n.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := n.rdv.Stats(); st.Started || st.Steps != 0 {
		t.Errorf("got %+v, want the rendezvous loop never run", st)
	}
	if peers := n.host.Network().Peers(); len(peers) != 0 {
		t.Errorf("connected to %v, want nobody", peers)
	}
}

// TestDHTBootstrapsFromVaultRelay: a relay listed in the vault (a real
// relay with its DHT server) is a bootstrap peer: the device's DHT starts
// once the relay is added and provides the vault's name through it.
func TestDHTBootstrapsFromVaultRelay(t *testing.T) {
	r, err := relay.New(relay.Config{
		Home: filepath.Join(t.TempDir(), "relay"), ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay run: %v", err)
		}
	})

	h, _ := testHome(t)
	logw := &hometest.SyncLog{}
	n := startRendezvousNode(t, h, nil, logw)
	waitUntil(t, 10*time.Second, func() error {
		if st := n.rdv.Stats(); st.Steps < 2 {
			return fmt.Errorf("%d rendezvous steps, want 2", st.Steps)
		}
		return nil
	})
	if n.rdv.Stats().Started {
		t.Fatal("the DHT started before the vault had a relay")
	}
	if err := n.API().ChangeRelay(keys.VaultID{}, r.Addrs()[0], false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() error {
		if st := n.rdv.Stats(); !st.Started || st.Provides == 0 {
			return fmt.Errorf("rendezvous %+v, want the DHT started and a name provided", st)
		}
		return nil
	})
	if !strings.Contains(logw.String(), `msg="DHT rendezvous on" mode=client bootstrap=1`) {
		t.Errorf("log lacks the start of the DHT in client mode with one bootstrap peer:\n%s", logw)
	}
}
