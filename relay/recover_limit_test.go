package relay

import (
	"bytes"
	"testing"

	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// TestRecoveryAttemptsLimited: a stranger's recovery attempts are limited
// per identity as a device limits pairing: after refusal.AttemptsPerPeerBurst
// failed proofs, the next is refused before anything is read; another
// identity still gets its own.
func TestRecoveryAttemptsLimited(t *testing.T) {
	r := runRelay(t)
	var vault keys.VaultID // served nowhere: every proof fails
	vault[0] = 7
	// limited reports whether the relay refused the attempt as over the
	// limit (an Error first), rather than answering its Hello and then
	// failing the proof.
	limited := func(d *testDevice) bool {
		a := open(t, d, r, ProtoRecover, hello(t, vault), frame(t, wire.MsgRecoverProof, wire.RecoverProof{Proof: bytes.Repeat([]byte{1}, 64)}))
		switch {
		case a.typ == wire.MsgError && a.err.Code == wire.CodeRateLimited:
			return true
		case a.typ == wire.MsgHello && len(a.rest) > 0 && a.rest[0] == wire.MsgError:
			return false
		}
		t.Fatalf("got %s then %v, want a rate-limit Error, or a Hello and an Error", a.typ, a.rest)
		return false
	}
	d := newTestDevice(t)
	d.connect(t, r)
	for i := range refusal.AttemptsPerPeerBurst {
		if limited(d) {
			t.Fatalf("attempt %d refused as rate-limited", i+1)
		}
	}
	if !limited(d) {
		t.Fatalf("attempt %d not refused as rate-limited", refusal.AttemptsPerPeerBurst+1)
	}
	other := newTestDevice(t)
	other.connect(t, r)
	if limited(other) {
		t.Fatal("another identity refused as rate-limited")
	}
}
