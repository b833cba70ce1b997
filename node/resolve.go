package node

import "github.com/weftsync/weft/protocol"

// resolveLocked decides path's heads by the node's rules (Config.Rules;
// the product's are protocol.Graph.Resolve), naming conflict copies from
// the replicated graph. v.mu must be held.
func (v *vault) resolveLocked(path string) (protocol.Decision, error) {
	cur, had := v.index.Get(path)
	return v.n.rules.Resolve(v.graph, path, diskOf(cur), had, v.takenLocked)
}
