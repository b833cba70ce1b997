package relay

import (
	"slices"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

func testCID(t *testing.T, i int) cid.Cid {
	h, err := multihash.Sum([]byte{byte(i), byte(i >> 8)}, multihash.BLAKE3, 32)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.Raw, h)
}

// TestWantSetOldestFirst: a fetch round takes the chunks in the order they
// were first wanted, skips what it is told to, never yields a chunk twice
// (one unwanted and wanted again goes to the back), and stays compact
// after most of it is unwanted.
func TestWantSetOldestFirst(t *testing.T) {
	w := newWantSet()
	var cs []cid.Cid
	for i := range 3000 {
		cs = append(cs, testCID(t, i))
		w.add(cs[i])
		w.add(cs[i]) // again: no second place
	}
	if got := w.oldest(4, func(cid.Cid) bool { return false }); !slices.Equal(got, cs[:4]) {
		t.Fatalf("oldest 4: %v, want the first four", got)
	}
	w.del(cs[1])
	w.del(cs[0])
	w.add(cs[0]) // back of the line
	got := w.oldest(3, func(c cid.Cid) bool { return c == cs[2] })
	if !slices.Equal(got, []cid.Cid{cs[3], cs[4], cs[5]}) {
		t.Fatalf("after del and skip: %v", got)
	}
	all := w.oldest(5000, func(cid.Cid) bool { return false })
	if len(all) != 2999 || all[len(all)-1] != cs[0] || all[0] != cs[2] {
		t.Fatalf("everything: %d CIDs, first %v, last %v; want 2999, cs[2] first, cs[0] last", len(all), all[0], all[len(all)-1])
	}
	for c := range w.all() {
		if c != cs[2999] {
			w.del(c)
		}
	}
	if w.len() != 1 {
		t.Fatalf("len %d after unwanting all but one", w.len())
	}
	if got := w.oldest(10, func(cid.Cid) bool { return false }); !slices.Equal(got, cs[2999:]) || len(w.order) > 1024+2 {
		t.Fatalf("after unwanting: %v, order of %d", got, len(w.order))
	}
}
