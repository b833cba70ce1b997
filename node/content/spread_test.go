package content

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/chunk"
)

// holder is a peer holding some chunks; fail makes each of its fetches
// fail after sending what it holds of the first half.
type holder struct {
	name  string
	holds map[cid.Cid]bool
	fail  bool

	mu    sync.Mutex
	asked [][]cid.Cid
	sent  []cid.Cid
}

func (h *holder) peer() Peer {
	return Peer{Name: h.name, Fetch: func(_ context.Context, cids []cid.Cid) ([]cid.Cid, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.asked = append(h.asked, slices.Clone(cids))
		var missing []cid.Cid
		for i, c := range cids {
			if h.holds[c] && (!h.fail || i < len(cids)/2) {
				h.sent = append(h.sent, c)
			} else {
				missing = append(missing, c)
			}
		}
		if h.fail {
			return missing, errors.New("stream reset")
		}
		return missing, nil
	}}
}

func cids(n int) []cid.Cid {
	var out []cid.Cid
	for i := range n {
		out = append(out, chunk.SumCID(fmt.Appendf(nil, "chunk %d", i)))
	}
	return out
}

// TestSpreadShares: with every chunk on every peer, each peer is asked
// for its share once and nothing twice.
func TestSpreadShares(t *testing.T) {
	all := cids(10)
	var hs []*holder
	var peers []Peer
	for i := range 3 {
		h := &holder{name: fmt.Sprint("p", i), holds: map[cid.Cid]bool{}}
		for _, c := range all {
			h.holds[c] = true
		}
		hs, peers = append(hs, h), append(peers, h.peer())
	}
	if err := Spread(context.Background(), peers, all); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, h := range hs {
		if len(h.asked) != 1 {
			t.Errorf("%s asked %d times, want once", h.name, len(h.asked))
		}
		total += len(h.sent)
	}
	if total != len(all) {
		t.Errorf("%d chunks sent in all, want %d", total, len(all))
	}
}

// TestSpreadAsksOthers: what one peer lacks, or fails to send, is asked of
// the others; a chunk no peer holds is an error wrapping ErrChunkMissing
// that names the failing peer.
func TestSpreadAsksOthers(t *testing.T) {
	all := cids(8)
	a := &holder{name: "a", holds: map[cid.Cid]bool{}, fail: true}
	b := &holder{name: "b", holds: map[cid.Cid]bool{}}
	for i, c := range all {
		a.holds[c] = true
		if i != 7 {
			b.holds[c] = true
		}
	}
	// Chunk 7 is only on a, which fails the second half of each request.
	err := Spread(context.Background(), []Peer{a.peer(), b.peer()}, all)
	got := map[cid.Cid]bool{}
	for _, c := range append(a.sent, b.sent...) {
		got[c] = true
	}
	if got[all[7]] || !errors.Is(err, ErrChunkMissing) || !strings.Contains(err.Error(), "a: stream reset") {
		t.Errorf("chunk 7 fetched %v, error %v: want it missing, and ErrChunkMissing naming a's failure", got[all[7]], err)
	}
	for i, c := range all[:7] {
		if !got[c] {
			t.Errorf("chunk %d, on b, was not fetched", i)
		}
	}

	if err := Spread(context.Background(), nil, all); !errors.Is(err, ErrChunkMissing) {
		t.Errorf("no peer: %v", err)
	}
	lonely := &holder{name: "c", holds: map[cid.Cid]bool{}}
	if err := Spread(context.Background(), []Peer{lonely.peer()}, all); !errors.Is(err, ErrChunkMissing) || len(lonely.asked) != 1 {
		t.Errorf("one peer holding nothing: %v, asked %d times (want once: nobody else to ask)", err, len(lonely.asked))
	}
}
