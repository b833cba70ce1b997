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

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/relay"
	"github.com/weftsync/weft/store/home"
)

func TestRendezvousName(t *testing.T) {
	var key [32]byte
	for i := range key {
		key[i] = byte(i)
	}
	tests := []struct {
		name   string
		key    [32]byte
		window int64
		want   string
	}{
		// Golden: HKDF-SHA256(key 00..1f, no salt, info "weft/v1
		// rendezvous-window window=20000"), SHA-256, CIDv1 raw, base32;
		// computed independently with Python's hmac and hashlib.
		{"day 20000", key, 20000, "bafkreifrvijx5ftkjmpozlrtxlmwxwpxlisf5yv4uw5d3jbvzexfbnmohm"},
		{"day 20001", key, 20001, "bafkreig6ekqxvlscbajojj2u3mqxesev54deatsiavmh7afcj352tl2bre"},
		{"zero key", [32]byte{}, 20000, "bafkreibeph3akei7ebhl6ykleufajqjxksuqezozkdm3ygnpdtg32vzdfm"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := rendezvousName(tt.key, tt.window)
			if got := c.String(); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if c.Prefix().Codec != cid.Raw || c.Prefix().Version != 1 {
				t.Errorf("got prefix %+v, want CIDv1 raw", c.Prefix())
			}
			if other, dup := seen[c.String()]; dup {
				t.Errorf("same name as %q", other)
			}
			seen[c.String()] = tt.name
		})
	}
}

func TestRendezvousWindows(t *testing.T) {
	day := func(d int64, hms string) time.Time {
		base := time.Unix(d*86400, 0).UTC()
		off, err := time.ParseDuration(hms)
		if err != nil {
			t.Fatal(err)
		}
		return base.Add(off)
	}
	tests := []struct {
		name string
		now  time.Time
		want []int64
	}{
		{"midday", day(20000, "12h"), []int64{20000}},
		{"just after midnight", day(20000, "10m"), []int64{20000, 19999}},
		{"at midnight", day(20000, "0s"), []int64{20000, 19999}},
		{"an hour after midnight", day(20000, "1h"), []int64{20000}},
		{"an hour before midnight", day(20000, "23h"), []int64{20000, 20001}},
		{"just before midnight", day(20000, "23h59m59s"), []int64{20000, 20001}},
		{"other time zone, same instant", day(20000, "12h").In(time.FixedZone("X", 11*3600)), []int64{20000}},
		{"before 1970", day(-1, "12h"), []int64{-1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rendezvousWindows(tt.now)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

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
func startRendezvousNode(t *testing.T, h *home.Home, bootstrap []string, logw *syncLog) *Node {
	t.Helper()
	n, err := New(Config{
		Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-", Bootstrap: bootstrap,
		Logger: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	n.rdv.checkEvery, n.rdv.findEvery, n.rdv.provideEvery = 50*time.Millisecond, 50*time.Millisecond, time.Second
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
	ha, hb := pairHomes(t, dir)
	logA, logB, logC := &syncLog{}, &syncLog{}, &syncLog{}
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
	if _, _, err := InitVault(hc, filepath.Join(dir, "c", "folder"), time.Now()); err != nil {
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
		c.rdv.mu.Lock()
		d := c.rdv.dht
		c.rdv.mu.Unlock()
		if d == nil {
			return fmt.Errorf("C's DHT has not started")
		}
		for _, w := range rendezvousWindows(time.Now()) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := d.Provide(ctx, rendezvousName(va.rendezvousKey(), w), true)
			cancel()
			if err != nil {
				return fmt.Errorf("C providing A's name: %w", err)
			}
		}
		return nil
	})

	b := startRendezvousNode(t, hb, servers[2:], logB)
	if known := va.knownPeers(); len(known) != 0 {
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
	sa, sb := a.rdv.stats(), b.rdv.stats()
	if !sa.met[b.host.ID()] && !sb.met[a.host.ID()] {
		t.Errorf("got met A=%v B=%v, want A or B to have met the other through the DHT", sa.met, sb.met)
	}
	waitUntil(t, 10*time.Second, func() error {
		if len(va.knownPeers()[b.ID()]) == 0 {
			return fmt.Errorf("A remembers no address of B")
		}
		if len(b.vaultsNow()[0].knownPeers()[a.ID()]) == 0 {
			return fmt.Errorf("B remembers no address of A")
		}
		return nil
	})

	// C was found (whoever searched got its record) and ignored.
	waitUntil(t, 10*time.Second, func() error {
		if !a.rdv.stats().ignored[c.host.ID()] && !b.rdv.stats().ignored[c.host.ID()] {
			return fmt.Errorf("neither A nor B has seen C's provider record yet")
		}
		return nil
	})
	for _, n := range []*Node{a, b} {
		if got := n.host.Network().Connectedness(c.host.ID()); got == network.Connected {
			t.Errorf("%s is connected to C, a device of another vault", n.ID().Short())
		}
		if _, ok := n.vaultsNow()[0].knownPeers()[c.ID()]; ok {
			t.Errorf("%s remembers C, a device of another vault", n.ID().Short())
		}
		if n.rdv.stats().met[c.host.ID()] {
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
	logw := &syncLog{}
	n := startRendezvousNode(t, h, nil, logw)
	waitUntil(t, 10*time.Second, func() error {
		if st := n.rdv.stats(); st.steps < 5 {
			return fmt.Errorf("%d rendezvous steps, want 5", st.steps)
		}
		return nil
	})
	if n.rdv.stats().started {
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
	if st := n.rdv.stats(); st.started || st.steps != 0 {
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
	logw := &syncLog{}
	n := startRendezvousNode(t, h, nil, logw)
	waitUntil(t, 10*time.Second, func() error {
		if st := n.rdv.stats(); st.steps < 2 {
			return fmt.Errorf("%d rendezvous steps, want 2", st.steps)
		}
		return nil
	})
	if n.rdv.stats().started {
		t.Fatal("the DHT started before the vault had a relay")
	}
	if err := n.ChangeRelay(keys.VaultID{}, r.Addrs()[0], false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() error {
		if st := n.rdv.stats(); !st.started || st.provides == 0 {
			return fmt.Errorf("rendezvous %+v, want the DHT started and a name provided", st)
		}
		return nil
	})
	if !strings.Contains(logw.String(), `msg="DHT rendezvous on" mode=client bootstrap=1`) {
		t.Errorf("log lacks the start of the DHT in client mode with one bootstrap peer:\n%s", logw)
	}
}
