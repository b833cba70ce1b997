package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/seal"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// Key epochs. A vault starts in epoch 0, whose secret derives from the
// root secret; each revocation starts the next epoch with a random secret
// sealed to every remaining member in the revocation record, and an add
// record carries every later epoch's secret sealed to the new device. So a
// device recovers all the epoch secrets it may know from the membership
// log and its own key (member.State.EpochSecrets): at open, and again
// whenever a membership record arrives. Nothing besides the log is stored.
//
// New entries and new chunks are written under the newest epoch this
// device knows; an entry's body and a chunk's envelope are opened with the
// keys of the epoch they carry. A revoked device never learns the secret of
// the epoch its revocation starts, so it cannot read what is written after.

// epochSet holds the keys of the epochs this device knows for one vault.
// It is safe for concurrent use.
type epochSet struct {
	mu     sync.RWMutex // guards the fields below
	keys   map[uint32]keys.EpochKeys
	newest uint32
}

// errUnknownEpoch means an entry or chunk is of a key epoch whose secret
// this device does not hold (it was revoked before that epoch began, or
// the membership record that carries the secret has not arrived yet).
var errUnknownEpoch = errors.New("key epoch not known to this device")

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
		return keys.EpochKeys{}, fmt.Errorf("epoch %d: %w", e, errUnknownEpoch)
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

// learnEpochs recomputes the known epochs from the membership log. A
// sealed secret that does not open is logged; the epochs that did open are
// still used.
func (v *vault) learnEpochs() {
	secrets, err := v.roster.EpochSecrets()
	if err != nil {
		v.log.Error("opening epoch secrets sealed to this device", "err", err)
	}
	v.crypt.eps.set(secrets)
}

// memberApplied does what follows a membership record this device stored
// and applied: learning any new epoch secret, telling the sessions that
// what is held here grew, and, for a revocation, ending every connection
// with the revoked device (streams opened before it was revoked would
// otherwise keep serving it). v.mu must not be held.
func (v *vault) memberApplied(r member.Record) {
	v.learnEpochs()
	v.mu.Lock()
	v.grewLocked()
	v.mu.Unlock()
	if r.Op != member.OpRevoke {
		return
	}
	if pid, err := PeerIDOf(r.Device); err == nil && v.n.host != nil {
		// Closing runs disconnect notifications that take v.mu.
		v.n.goRun(func(context.Context) { _ = v.n.host.Network().ClosePeer(pid) })
	}
}

// crypt opens and seals one vault's entries and chunks under the key
// epoch each carries, and remembers the plaintext identity of the chunks
// it opens or seals (seal.IDs), so they need not be sealed again to be
// recognised. It is safe for concurrent use (epochSet and seal.IDs have
// their own locks).
type crypt struct {
	eps *epochSet // the key epochs this device knows
	ids *seal.IDs // plaintext identities of chunks seen here (node/seal)
}

// writeKeys returns the keys new entries are sealed with: the newest epoch.
func (cr *crypt) writeKeys() keys.EpochKeys { return cr.eps.current() }

// chunkKeys returns the keys new chunks are sealed with: the newest epoch.
func (cr *crypt) chunkKeys() chunk.Keys { return chunk.KeysFrom(cr.eps.current()) }

// openBody opens an entry's body with the keys of the entry's epoch.
func (cr *crypt) openBody(e *entry.Entry) (*entry.Body, error) {
	return cr.openBodyWith(e, entry.OpenBody)
}

// openStoredBody is openBody for an entry read back from this device's own
// log (entry.OpenStoredBody: no canonical re-encode of the body).
func (cr *crypt) openStoredBody(e *entry.Entry) (*entry.Body, error) {
	return cr.openBodyWith(e, entry.OpenStoredBody)
}

func (cr *crypt) openBodyWith(e *entry.Entry, open func(*entry.Entry, keys.EpochKeys) (*entry.Body, error)) (*entry.Body, error) {
	k, err := cr.eps.get(e.Epoch())
	if err != nil {
		return nil, fmt.Errorf("opening body of %s/%d: %w", e.Author(), e.Seq(), err)
	}
	return open(e, k)
}

// openChunk opens a chunk envelope with the keys of the epoch in its
// header. Failures are chunk.Open's, the CID check first (so a chunk
// altered in transit reads as a CID mismatch, not as a bad header); an
// epoch this device does not know is errUnknownEpoch. The header is read
// before the CID is checked only to pick the keys: chunk.Open checks the
// CID before using anything else.
func (cr *crypt) openChunk(c cid.Cid, env []byte) ([]byte, error) {
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
	return nil, fmt.Errorf("opening chunk %v: epoch %d: %w", c, h.Epoch, errUnknownEpoch)
}

// openVerifiedChunk is openChunk for an envelope fetchChunks has verified
// against c as it arrived (chunk.OpenVerifiedInto: every check but that
// one), writing the plaintext into buf's array when it has room.
func (cr *crypt) openVerifiedChunk(buf []byte, c cid.Cid, env []byte) ([]byte, error) {
	h, err := chunk.ParseHeader(env)
	if err != nil {
		return nil, fmt.Errorf("opening chunk %v: %w", c, err)
	}
	k, err := cr.eps.get(h.Epoch)
	if err != nil {
		return nil, fmt.Errorf("opening chunk %v: epoch %d: %w", c, h.Epoch, errUnknownEpoch)
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

// sealLocalAppend re-creates chunk c from plaintext read out of the
// folder, appending its envelope to dst. The chunk may belong to a version
// written in any epoch, and the CID does not say which, so it seals under
// the newest epoch first (where new chunks are) and then under each older
// one, newest first, until the CID matches. It returns dst with the
// envelope appended and true when one did; dst unchanged and false when
// none did (the plaintext is not chunk c).
func (cr *crypt) sealLocalAppend(dst []byte, c cid.Cid, plain []byte) ([]byte, bool, error) {
	// Grown once up front, so every attempt seals in place and the
	// envelope follows dst's bytes in the same array.
	dst = slices.Grow(dst, chunk.Overhead+len(plain))
	cur := cr.chunkKeys()
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

// epochHasher is the scanner's Hasher: it chunks and seals with the keys of
// the newest epoch at the time each file is hashed, so versions recorded
// after a revocation reference chunks of the new epoch.
// It hands the hasher the chunks the index records for the path, so that
// those of an edited file the edit left alone are not sealed again.
type epochHasher struct{ v *vault }

// Hash implements folder.Hasher.
func (h epochHasher) Hash(ctx context.Context, path string, r io.Reader, size int64) (folder.HashResult, error) {
	var prev []entry.ChunkRef
	if size > entry.InlineLimit {
		h.v.mu.Lock()
		prev = h.v.index.Rec(path).Chunks
		h.v.mu.Unlock()
	}
	return chunkHasher{keys: h.v.crypt.chunkKeys(), ids: h.v.crypt.ids, prev: prev}.Hash(ctx, path, r, size)
}
