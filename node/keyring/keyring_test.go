package keyring

import (
	"bytes"
	"errors"
	"testing"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/keys"
)

// TestRingEpochs: new chunks are sealed under the newest epoch known; a
// chunk of an epoch the ring does not know is refused with
// ErrUnknownEpoch (after its CID is checked), and opens once the epoch is
// learned; a folder chunk of an older epoch is re-created under that
// epoch, its identity remembered as sealed here.
func TestRingEpochs(t *testing.T) {
	s0, s1 := keys.EpochSecret{1}, keys.EpochSecret{2}
	r := New()
	r.Set(map[uint32]keys.EpochSecret{0: s0})
	if got := r.ChunkKeys().Epoch; got != 0 {
		t.Fatalf("writing under epoch %d, want 0", got)
	}
	plain := []byte("a chunk written after the revocation")
	later, err := chunk.Seal(chunk.KeysFrom(s1.Keys(1)), plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.OpenChunk(later.CID, later.Envelope); !errors.Is(err, ErrUnknownEpoch) {
		t.Fatalf("opening a chunk of an unknown epoch: got %v, want ErrUnknownEpoch", err)
	}
	altered := bytes.Clone(later.Envelope)
	altered[len(altered)-1] ^= 1
	if _, err := r.OpenChunk(later.CID, altered); errors.Is(err, ErrUnknownEpoch) || err == nil {
		t.Fatalf("an altered chunk of an unknown epoch: got %v, want the CID check's error", err)
	}
	r.Set(map[uint32]keys.EpochSecret{0: s0, 1: s1})
	if got := r.WriteKeys().Epoch; got != 1 {
		t.Fatalf("after learning epoch 1, writing under %d", got)
	}
	got, err := r.OpenChunk(later.CID, later.Envelope)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("opening after learning the epoch: %q, %v", got, err)
	}
	old, err := chunk.Seal(chunk.KeysFrom(s0.Keys(0)), plain)
	if err != nil {
		t.Fatal(err)
	}
	env, ok, err := r.SealLocalAppend(nil, old.CID, plain)
	if err != nil || !ok || !bytes.Equal(env, old.Envelope) {
		t.Fatalf("re-creating an epoch-0 chunk: ok %v, err %v, same envelope %v", ok, err, bytes.Equal(env, old.Envelope))
	}
	if k, known := r.IDs().Get(old.CID); !known || !k.Sealed || k.Epoch != 0 {
		t.Fatalf("the re-created chunk's identity: %+v known %v, want sealed here under epoch 0", k, known)
	}
	if _, ok, err := r.SealLocalAppend(nil, old.CID, []byte("other bytes")); ok || err != nil {
		t.Fatalf("re-creating from other bytes: ok %v, err %v; want not the chunk", ok, err)
	}
}
