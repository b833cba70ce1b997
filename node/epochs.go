package node

import (
	"context"
	"io"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/relay"
)

// Key epochs (node/keyring): the ring learns every epoch secret this
// device may know from the membership log and its own key
// (member.State.EpochSecrets), at open and again whenever a membership
// record arrives. Nothing besides the log is stored.

// learnEpochs recomputes the known epochs from the membership log. A
// sealed secret that does not open is logged; the epochs that did open are
// still used.
func (v *vault) learnEpochs() {
	secrets, err := v.roster.EpochSecrets()
	if err != nil {
		v.log.Error("opening epoch secrets sealed to this device", "err", err)
	}
	v.crypt.Set(secrets)
}

// memberApplied does what follows a membership record this device stored
// and applied: learning any new epoch secret, telling the sessions that
// what is held here grew, forgetting what a device or relay that left said
// it holds, and, for a revocation, ending every connection
// with the revoked device (streams opened before it was revoked would
// otherwise keep serving it). v.mu must not be held.
func (v *vault) memberApplied(r member.Record) {
	v.learnEpochs()
	v.agent.wakeDial() // a relay or member added is dialled at once
	v.mu.Lock()
	v.grewLocked()
	v.mu.Unlock()
	// What a device or relay that left said it holds no longer makes this
	// device's entries safe (a restart would not load it either).
	switch r.Op {
	case member.OpRevoke:
		v.peers.Forget(r.Device)
	case member.OpRemoveRelay:
		if _, d, err := relay.ParseAddr(r.Relay); err == nil {
			v.peers.Forget(d)
		}
	}
	if r.Op != member.OpRevoke {
		return
	}
	if pid, err := PeerIDOf(r.Device); err == nil {
		// Closing runs disconnect notifications that take v.mu.
		v.agent.goRun(func(context.Context) { v.agent.closePeer(pid) })
	}
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
	return chunkHasher{keys: h.v.crypt.ChunkKeys(), ids: h.v.crypt.IDs(), prev: prev}.Hash(ctx, path, r, size)
}
