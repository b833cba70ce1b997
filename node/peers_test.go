package node

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/store/vaultdb"
)

// TestPeerBook checks the remembered addresses: set replaces, learn adds
// only members this device knows no address for (never itself), and what
// was stored is read back by a book opened later on the same database.
func TestPeerBook(t *testing.T) {
	dir := t.TempDir()
	var vid keys.VaultID
	db, _, err := vaultdb.Open(dir, vid)
	if err != nil {
		t.Fatal(err)
	}
	self, a, b, stranger := keys.DeviceID{1}, keys.DeviceID{2}, keys.DeviceID{3}, keys.DeviceID{4}
	isMember := func(d keys.DeviceID) bool { return d != stranger }

	book := newPeerBook(db)
	if got := book.all(); len(got) != 0 {
		t.Fatalf("a new vault's book holds %v, want nothing", got)
	}
	if err := book.set(a, []string{"/ip4/127.0.0.1/tcp/1"}); err != nil {
		t.Fatal(err)
	}
	err = book.learn(wire.Peers{Peers: []wire.PeerAddrs{
		{Device: a, Addrs: []string{"/ip4/127.0.0.1/tcp/9"}}, // known: kept as set
		{Device: b, Addrs: []string{"/ip4/127.0.0.1/tcp/2"}},
		{Device: self, Addrs: []string{"/ip4/127.0.0.1/tcp/3"}},
		{Device: stranger, Addrs: []string{"/ip4/127.0.0.1/tcp/4"}},
	}}, self, isMember)
	if err != nil {
		t.Fatal(err)
	}
	want := map[keys.DeviceID][]string{a: {"/ip4/127.0.0.1/tcp/1"}, b: {"/ip4/127.0.0.1/tcp/2"}}
	if diff := cmp.Diff(want, book.all()); diff != "" {
		t.Fatalf("after set and learn (-want +got):\n%s", diff)
	}
	got := book.all()
	got[a] = append(got[a], "/ip4/127.0.0.1/tcp/5") // the caller's map; clipped slices
	if diff := cmp.Diff(want, book.all()); diff != "" {
		t.Fatalf("a caller's append changed the book (-want +got):\n%s", diff)
	}
	ex := book.exchange([]keys.DeviceID{self, a, b}, self, b)
	if diff := cmp.Diff([]wire.PeerAddrs{{Device: a, Addrs: want[a]}}, ex.Peers); diff != "" {
		t.Fatalf("exchange with b (-want +got):\n%s", diff)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, _, err = vaultdb.Open(dir, vid)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if diff := cmp.Diff(want, newPeerBook(db).all()); diff != "" {
		t.Fatalf("read back after reopening (-want +got):\n%s", diff)
	}
}
