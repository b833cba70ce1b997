package node

import (
	"github.com/weftsync/weft/internal/testhook"
	"github.com/weftsync/weft/protocol"
)

// resolveLocked decides path's heads by the sync core's rules
// (protocol.Graph.Resolve). Caller holds v.mu.
//
// With testhook.KeepLocalOnConflict set (tests only) it applies a
// deliberately broken rule instead whenever the path has concurrent heads
// and the folder already holds one of them: keep that one, copy nothing,
// record nothing. See package testhook for why this exists.
func (v *vault) resolveLocked(path string) (protocol.Decision, error) {
	dec, err := v.graph.Resolve(path, v.takenLocked)
	if err != nil || !testhook.KeepLocalOnConflict.Load() || len(dec.Superseded) <= 1 {
		return dec, err
	}
	cur, ok := v.index[path]
	if !ok {
		return dec, nil
	}
	for _, h := range v.graph.Heads(path) {
		if h.ID == cur.Version {
			return protocol.Decision{Path: path, Outcome: protocol.OutcomeIdentical, Winner: h, Superseded: dec.Superseded}, nil
		}
	}
	return dec, nil
}
