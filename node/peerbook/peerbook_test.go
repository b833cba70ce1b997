package peerbook

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// TestPeerBook checks the remembered addresses: set replaces, learn adds
// only members this device knows no address for (never itself), and what
// was stored is read back by a book opened later on the same store.
func TestPeerBook(t *testing.T) {
	db := memStore{}
	self, a, b, stranger := keys.DeviceID{1}, keys.DeviceID{2}, keys.DeviceID{3}, keys.DeviceID{4}
	isMember := func(d keys.DeviceID) bool { return d != stranger }

	book := New(db)
	if got := book.All(); len(got) != 0 {
		t.Fatalf("a new vault's book holds %v, want nothing", got)
	}
	if err := book.Set(a, []string{"/ip4/127.0.0.1/tcp/1"}); err != nil {
		t.Fatal(err)
	}
	err := book.Learn(wire.Peers{Peers: []wire.PeerAddrs{
		{Device: a, Addrs: []string{"/ip4/127.0.0.1/tcp/9"}}, // known: kept as set
		{Device: b, Addrs: []string{"/ip4/127.0.0.1/tcp/2"}},
		{Device: self, Addrs: []string{"/ip4/127.0.0.1/tcp/3"}},
		{Device: stranger, Addrs: []string{"/ip4/127.0.0.1/tcp/4"}},
	}}, self, isMember)
	if err != nil {
		t.Fatal(err)
	}
	want := map[keys.DeviceID][]string{a: {"/ip4/127.0.0.1/tcp/1"}, b: {"/ip4/127.0.0.1/tcp/2"}}
	if diff := cmp.Diff(want, book.All()); diff != "" {
		t.Fatalf("after set and learn (-want +got):\n%s", diff)
	}
	got := book.All()
	got[a] = append(got[a], "/ip4/127.0.0.1/tcp/5") // the caller's map; clipped slices
	if diff := cmp.Diff(want, book.All()); diff != "" {
		t.Fatalf("a caller's append changed the book (-want +got):\n%s", diff)
	}
	ex := book.Exchange([]keys.DeviceID{self, a, b}, self, b)
	if diff := cmp.Diff([]wire.PeerAddrs{{Device: a, Addrs: want[a]}}, ex.Peers); diff != "" {
		t.Fatalf("exchange with b (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, New(db).All()); diff != "" {
		t.Fatalf("read back after reopening (-want +got):\n%s", diff)
	}
}

// memStore is a Store in memory.
type memStore map[string][]byte

func (m memStore) Meta(key string) ([]byte, bool, error) {
	b, ok := m[key]
	return b, ok, nil
}

func (m memStore) SetMeta(key string, raw []byte) error {
	m[key] = raw
	return nil
}

// failingStore refuses every write.
type failingStore struct{ memStore }

func (failingStore) SetMeta(string, []byte) error { return errors.New("disk full") }

// TestPeerBookKeepsNothingItCouldNotStore: a write the store refuses is
// an error, and the book in memory stays as it was.
func TestPeerBookKeepsNothingItCouldNotStore(t *testing.T) {
	book := New(failingStore{memStore{}})
	a := keys.DeviceID{2}
	if err := book.Set(a, []string{"/ip4/127.0.0.1/tcp/1"}); err == nil {
		t.Fatal("Set on a store that refuses writes: no error")
	}
	if got := book.All(); len(got) != 0 {
		t.Fatalf("the book holds %v after a refused write, want nothing", got)
	}
}
