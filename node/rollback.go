package node

import (
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/claims"
	"github.com/weftsync/weft/protocol/keys"
)

// claims is the checker of what this vault's peers say they hold against
// what they said before and what they sent (node/claims: a relay rolling
// back, a peer withholding entries), over the vault's database, its peer
// holdings and its log view.
func (v *vault) claims() *claims.Checker {
	return &claims.Checker{
		Folder: v.cfg.Folder, Store: v.db, Heard: &v.peers, Log: v.log,
		Publish: v.events.Publish, Now: v.now,
		FirstAhead: func(author keys.DeviceID, after, upto uint64) uint64 {
			v.mu.Lock()
			defer v.mu.Unlock()
			return v.view.FirstAhead(author, after, upto)
		},
		IsRelay: v.isRelay,
		Relays: func() []keys.DeviceID {
			var out []keys.DeviceID
			for _, r := range v.relays() {
				out = append(out, r.dev)
			}
			return out
		},
	}
}

// RelayRollbacks lists, for every vault on this device, the last time each
// of its relays reported an older state than before (claims.Checker).
func (n *Node) RelayRollbacks() []api.RelayRollback {
	out := []api.RelayRollback{}
	for _, v := range n.vaultsNow() {
		out = append(out, v.claims().Rollbacks()...)
	}
	return out
}
