package keyring

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/seal"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// epochSet holds the keys of the epochs this device knows for one vault.
// It is safe for concurrent use.
type epochSet struct {
	mu     sync.RWMutex // guards the fields below
	keys   map[uint32]keys.EpochKeys
	newest uint32
}

// ErrUnknownEpoch means an entry or chunk is of a key epoch whose secret
// this device does not hold (it was revoked before that epoch began, or
// the membership record that carries the secret has not arrived yet).
var ErrUnknownEpoch = errors.New("key epoch not known to this device")

// set replaces the known epochs with secrets.
func (s *epochSet) set(secrets map[uint32]keys.EpochSecret) {
	ks := make(map[uint32]keys.EpochKeys, len(secrets))
	var newest uint32
	for e, sec := range secrets {
		ks[e] = sec.Keys(e)
		newest = max(newest, e)
	}
	s.mu.Lock()
	s.keys, s.newest = ks, newest
	s.mu.Unlock()
}

// get returns the keys of epoch e.
func (s *epochSet) get(e uint32) (keys.EpochKeys, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	k, ok := s.keys[e]
	if !ok {
		return keys.EpochKeys{}, fmt.Errorf("epoch %d: %w", e, ErrUnknownEpoch)
	}
	return k, nil
}

// current returns the keys of the newest known epoch.
func (s *epochSet) current() keys.EpochKeys {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.keys[s.newest]
}

// others returns the keys of every known epoch but the newest, newest
// first.
func (s *epochSet) others() []keys.EpochKeys {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]keys.EpochKeys, 0, len(s.keys))
	for e := s.newest; e > 0; e-- {
		if k, ok := s.keys[e-1]; ok {
			out = append(out, k)
		}
	}
	return out
}

// Ring opens and seals one vault's entries and chunks under the key
// epoch each carries, and remembers the plaintext identity of the chunks
// it opens or seals (seal.IDs), so they need not be sealed again to be
// recognised. It is safe for concurrent use (epochSet and seal.IDs have
// their own locks).
type Ring struct {
	eps *epochSet // the key epochs this device knows
	ids *seal.IDs // plaintext identities of chunks seen here (node/seal)
}

// New returns a ring that knows no epoch yet (Set teaches it).
func New() *Ring { return &Ring{eps: &epochSet{}, ids: seal.NewIDs()} }

// Set replaces the known epochs with secrets (the membership log's
// EpochSecrets, recomputed whenever a record arrives).
func (cr *Ring) Set(secrets map[uint32]keys.EpochSecret) { cr.eps.set(secrets) }

// Keys returns the keys of epoch e, or an error wrapping ErrUnknownEpoch.
func (cr *Ring) Keys(e uint32) (keys.EpochKeys, error) { return cr.eps.get(e) }

// IDs is what the ring remembers of the chunks it sealed or opened.
func (cr *Ring) IDs() *seal.IDs { return cr.ids }

// WriteKeys returns the keys new entries are sealed with: the newest epoch.
func (cr *Ring) WriteKeys() keys.EpochKeys { return cr.eps.current() }

// ChunkKeys returns the keys new chunks are sealed with: the newest epoch.
func (cr *Ring) ChunkKeys() chunk.Keys { return chunk.KeysFrom(cr.eps.current()) }

// OpenBody opens an entry's body with the keys of the entry's epoch.
func (cr *Ring) OpenBody(e *entry.Entry) (*entry.Body, error) {
	return cr.openBodyWith(e, entry.OpenBody)
}

// OpenStoredBody is OpenBody for an entry read back from this device's own
// log (entry.OpenStoredBody: no canonical re-encode of the body).
func (cr *Ring) OpenStoredBody(e *entry.Entry) (*entry.Body, error) {
	return cr.openBodyWith(e, entry.OpenStoredBody)
}

func (cr *Ring) openBodyWith(e *entry.Entry, open func(*entry.Entry, keys.EpochKeys) (*entry.Body, error)) (*entry.Body, error) {
	k, err := cr.eps.get(e.Epoch())
	if err != nil {
		return nil, fmt.Errorf("opening body of %s/%d: %w", e.Author(), e.Seq(), err)
	}
	return open(e, k)
}

// OpenChunk opens a chunk envelope with the keys of the epoch in its
// header. Failures are chunk.Open's, the CID check first (so a chunk
// altered in transit reads as a CID mismatch, not as a bad header); an
// epoch this device does not know is ErrUnknownEpoch. The header is read
// before the CID is checked only to pick the keys: chunk.Open checks the
// CID before using anything else.
func (cr *Ring) OpenChunk(c cid.Cid, env []byte) ([]byte, error) {
	h, herr := chunk.ParseHeader(env)
	if herr == nil {
		if k, err := cr.eps.get(h.Epoch); err == nil {
			return chunk.Open(chunk.KeysFrom(k), c, env)
		}
	}
	if err := chunk.VerifyCID(c, env); err != nil {
		return nil, fmt.Errorf("opening chunk: %w", err)
	}
	if herr != nil {
		return nil, fmt.Errorf("opening chunk %v: %w", c, herr)
	}
	return nil, fmt.Errorf("opening chunk %v: epoch %d: %w", c, h.Epoch, ErrUnknownEpoch)
}

// OpenVerifiedChunk is OpenChunk for an envelope fetchChunks has verified
// against c as it arrived (chunk.OpenVerifiedInto: every check but that
// one), writing the plaintext into buf's array when it has room.
func (cr *Ring) OpenVerifiedChunk(buf []byte, c cid.Cid, env []byte) ([]byte, error) {
	h, err := chunk.ParseHeader(env)
	if err != nil {
		return nil, fmt.Errorf("opening chunk %v: %w", c, err)
	}
	k, err := cr.eps.get(h.Epoch)
	if err != nil {
		return nil, fmt.Errorf("opening chunk %v: epoch %d: %w", c, h.Epoch, ErrUnknownEpoch)
	}
	plain, err := chunk.OpenVerifiedInto(buf, chunk.KeysFrom(k), c, env)
	if err == nil {
		// Open checked the plaintext against the header's identity, and
		// the fetch checked the envelope against c. Its shape is not
		// recorded: a member holding the keys may seal otherwise than
		// this device would (another compression), and only this
		// device's own sealing may stand in for a CID check
		// (folderChunks.chunkAt).
		cr.ids.Add(c, h.Epoch, h.ID, false, seal.Shape{})
	}
	return plain, err
}

// SealLocalAppend re-creates chunk c from plaintext read out of the
// folder, appending its envelope to dst. The chunk may belong to a version
// written in any epoch, and the CID does not say which, so it seals under
// the newest epoch first (where new chunks are) and then under each older
// one, newest first, until the CID matches. It returns dst with the
// envelope appended and true when one did; dst unchanged and false when
// none did (the plaintext is not chunk c).
func (cr *Ring) SealLocalAppend(dst []byte, c cid.Cid, plain []byte) ([]byte, bool, error) {
	// Grown once up front, so every attempt seals in place and the
	// envelope follows dst's bytes in the same array.
	dst = slices.Grow(dst, chunk.Overhead+len(plain))
	cur := cr.ChunkKeys()
	s, err := chunk.AppendSeal(dst, cur, plain)
	if err != nil {
		return dst, false, err
	}
	if s.CID.Equals(c) {
		cr.ids.Add(c, cur.Epoch, s.ID, true, seal.ShapeOf(s.Envelope))
		return dst[:len(dst)+len(s.Envelope)], true, nil
	}
	for _, ek := range cr.eps.others() {
		k := chunk.KeysFrom(ek)
		s, err := chunk.AppendSeal(dst, k, plain)
		if err == nil && s.CID.Equals(c) {
			cr.ids.Add(c, k.Epoch, s.ID, true, seal.ShapeOf(s.Envelope))
			return dst[:len(dst)+len(s.Envelope)], true, nil
		}
	}
	return dst, false, nil
}
