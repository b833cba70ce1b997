package heard

import (
	"slices"
	"testing"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
)

// TestHoldings: what peers said answers how much of a log is held
// elsewhere and unsafe, what connected peers lack, and who may hold a
// version; Set returns the word it replaces.
func TestHoldings(t *testing.T) {
	var h Holdings
	self, p, q, r := keys.DeviceID{1}, keys.DeviceID{2}, keys.DeviceID{3}, keys.DeviceID{4}
	if h.Unsafe(self, 5) != 5 || h.HeldElsewhere(self) != 0 || h.Has(p) {
		t.Fatal("an empty record holds something")
	}
	if _, had := h.Set(p, protocol.Vector{self: 3, q: 7}); had {
		t.Error("a first word replaced one")
	}
	prev, had := h.Set(p, protocol.Vector{self: 4, q: 7})
	if !had || prev[self] != 3 {
		t.Errorf("Set returned %v, %v; want the earlier word", prev, had)
	}
	h.Set(q, protocol.Vector{self: 2, q: 9})
	if got := h.HeldElsewhere(self); got != 4 {
		t.Errorf("held elsewhere %d, want 4", got)
	}
	if got := h.Unsafe(self, 6); got != 2 {
		t.Errorf("unsafe %d, want 2", got)
	}
	if got := h.Unsafe(self, 4); got != 0 {
		t.Errorf("unsafe %d with everything held, want 0", got)
	}
	mine := protocol.Vector{self: 6, q: 9}
	// p lacks 2 of self and 2 of q; q lacks 4 of self: per author the
	// largest shortfall, 4 + 2.
	if got := h.ToUpload(mine, []keys.DeviceID{p, q}); got != 6 {
		t.Errorf("to upload %d, want 6", got)
	}
	if got := h.ToUpload(mine, []keys.DeviceID{r}); got != 15 {
		t.Errorf("to upload to a peer that said nothing: %d, want 15", got)
	}
	if got := h.Holders(protocol.VersionID{Author: q, Seq: 8}); !slices.Equal(got, []keys.DeviceID{q}) {
		t.Errorf("holders of q/8: %v", got)
	}
	if got := h.Holders(protocol.VersionID{Author: self, Seq: 3}); len(got) != 2 || got[0] != self || got[1] != p {
		t.Errorf("holders of self/3: %v, want self then p", got)
	}
	h.Forget(p)
	if h.Has(p) || h.HeldElsewhere(self) != 2 {
		t.Errorf("after forgetting p: has %v, held elsewhere %d (want q's 2)", h.Has(p), h.HeldElsewhere(self))
	}
}
