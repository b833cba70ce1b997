package heard

import (
	"slices"
	"strings"
	"sync"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
)

// Holdings is what each peer (member or relay) last said it holds of a
// vault's logs: its LogStatus vector, per author the highest entry it
// holds in full. It answers what status and the doctor ask of them: how
// much of this device's own log is held elsewhere, what a connected peer
// still lacks, who may hold a version. Safe for concurrent use; its lock
// is a leaf.
type Holdings struct {
	mu   sync.Mutex
	vecs map[keys.DeviceID]protocol.Vector
}

// Set records vec as what d holds and returns what d said before (had
// false when it had said nothing).
func (h *Holdings) Set(d keys.DeviceID, vec protocol.Vector) (prev protocol.Vector, had bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.vecs == nil {
		h.vecs = map[keys.DeviceID]protocol.Vector{}
	}
	prev, had = h.vecs[d]
	h.vecs[d] = vec
	return prev, had
}

// Has reports whether d has said what it holds.
func (h *Holdings) Has(d keys.DeviceID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.vecs[d]
	return ok
}

// Of is what d last said it holds (nil: nothing). The vector is shared:
// the caller must not change it.
func (h *Holdings) Of(d keys.DeviceID) protocol.Vector {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.vecs[d]
}

// HeldElsewhere is the highest entry of author's log any peer holds.
func (h *Holdings) HeldElsewhere(author keys.DeviceID) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var best uint64
	for _, vec := range h.vecs {
		best = max(best, vec[author])
	}
	return best
}

// Unsafe is how many of author's entries up to head no peer holds.
func (h *Holdings) Unsafe(author keys.DeviceID, head uint64) uint64 {
	if best := h.HeldElsewhere(author); best < head {
		return head - best
	}
	return 0
}

// ToUpload counts the entries of mine (this device's vector) that some
// connected peer lacks, as far as its last word says: per author, the
// largest shortfall over the connected peers.
func (h *Holdings) ToUpload(mine protocol.Vector, connected []keys.DeviceID) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n uint64
	for a, s := range mine {
		var short uint64
		for _, d := range connected {
			if got := h.vecs[d][a]; got < s {
				short = max(short, s-got)
			}
		}
		n += short
	}
	return int(n)
}

// Holders lists who may hold version id's content: its author first, then
// every peer whose last word includes the entry (it has the entry, and so
// has fetched or will fetch its chunks), by ID.
func (h *Holdings) Holders(id protocol.VersionID) []keys.DeviceID {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := []keys.DeviceID{id.Author}
	for d, vec := range h.vecs {
		if d != id.Author && vec[id.Author] >= id.Seq {
			out = append(out, d)
		}
	}
	slices.SortFunc(out[1:], func(a, b keys.DeviceID) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// Forget drops what d said (as a restart of this device does: what peers
// said lives in memory, beside the durable marks the vault keeps).
func (h *Holdings) Forget(d keys.DeviceID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.vecs, d)
}
