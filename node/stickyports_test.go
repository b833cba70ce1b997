package node

import (
	"context"
	"crypto/rand"
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/libp2p/go-libp2p/core/host"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/node/connect"
	"github.com/weftsync/weft/protocol/keys"
)

// TestRestartedDevicesReconnect: two devices that both stop and both start
// again, with no mDNS, relay or DHT to find each other, meet at the
// addresses they remembered of each other: each listens on the port of
// its last start (docs/connectivity.md, "Listen ports"). With a new port
// at each start both remembered addresses were stale and the second note
// never arrived.
func TestRestartedDevicesReconnect(t *testing.T) {
	ha, folderA := testHome(t)
	a, stopA := startNode(t, ha)
	hb, folderB, _ := joinHome(t, a)
	b, stopB := startNode(t, hb)
	writeFile(t, folderA, "before.md", []byte("before the restarts\n"))
	if err := a.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFile(t, folderB, "before.md", []byte("before the restarts\n"))
	addrsA, addrsB := a.Addrs(), b.Addrs()
	stopA()
	stopB()

	a2, _ := startNode(t, ha)
	b2, _ := startNode(t, hb)
	if got := a2.Addrs(); !slices.Equal(got, addrsA) {
		t.Fatalf("A listens on %v after its restart, want %v (the last start's)", got, addrsA)
	}
	if got := b2.Addrs(); !slices.Equal(got, addrsB) {
		t.Fatalf("B listens on %v after its restart, want %v (the last start's)", got, addrsB)
	}
	writeFile(t, folderA, "after.md", []byte("after the restarts\n"))
	if err := a2.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFile(t, folderB, "after.md", []byte("after the restarts\n"))
}

// portBook is a PortBook in memory; read fails the test when set to.
type portBook struct {
	t         *testing.T
	ports     map[string]int
	noRead    bool
	saved     map[string]int
	saveCalls int
}

func (b *portBook) ListenPorts() (map[string]int, error) {
	if b.noRead {
		b.t.Error("FreshPorts: the record was read")
	}
	return b.ports, nil
}

func (b *portBook) SetListenPorts(p map[string]int) error {
	b.saved, b.saveCalls = p, b.saveCalls+1
	return nil
}

// hostPort returns the TCP port h listens on.
func hostPort(t *testing.T, h host.Host) int {
	t.Helper()
	for _, a := range h.Network().ListenAddresses() {
		if v, err := a.ValueForProtocol(ma.P_TCP); err == nil {
			p, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no TCP listen address in %v", h.Network().ListenAddresses())
	return 0
}

// TestStickyPortTakenMoves: a recorded port that another socket holds
// (bound without SO_REUSEPORT, as any other program would) is not shared:
// the device listens on a port the system gives and records it. libp2p
// listens with SO_REUSEPORT, so without the check two weft processes of
// one user could both listen on it.
func TestStickyPortTakenMoves(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := l.Addr().(*net.TCPAddr).Port
	const addr = "/ip4/127.0.0.1/tcp/0"
	id, err := keys.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	book := &portBook{t: t, ports: map[string]int{addr: held}}
	h, err := connect.NewHost(connect.HostConfig{Identity: id, ListenAddrs: []string{addr}, Ports: book})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got := hostPort(t, h)
	if got == held {
		t.Fatalf("listens on %d, the port another socket holds", held)
	}
	if book.saved[addr] != got {
		t.Fatalf("recorded %v, want %s at %d", book.saved, addr, got)
	}
}

// TestStickyPortKeptAndFreshPorts: a free recorded port is taken back and
// the record left alone; with FreshPorts the record is not read at all
// and the port the system gives is recorded.
func TestStickyPortKeptAndFreshPorts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := l.Addr().(*net.TCPAddr).Port
	l.Close()
	const addr = "/ip4/127.0.0.1/tcp/0"
	id, err := keys.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	book := &portBook{t: t, ports: map[string]int{addr: free}}
	h, err := connect.NewHost(connect.HostConfig{Identity: id, ListenAddrs: []string{addr}, Ports: book})
	if err != nil {
		t.Fatal(err)
	}
	if got := hostPort(t, h); got != free {
		t.Fatalf("listens on %d, want the recorded %d", got, free)
	}
	h.Close()
	if book.saveCalls != 0 {
		t.Fatalf("record rewritten (%v) though nothing changed", book.saved)
	}
	fresh := &portBook{t: t, ports: map[string]int{addr: free}, noRead: true}
	h, err = connect.NewHost(connect.HostConfig{Identity: id, ListenAddrs: []string{addr}, Ports: fresh, FreshPorts: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got := hostPort(t, h); fresh.saved[addr] != got {
		t.Fatalf("recorded %v, want %s at %d", fresh.saved, addr, got)
	}
}
