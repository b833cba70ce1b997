package engine

import "github.com/weftsync/weft/protocol"

// ResolveFunc decides path's concurrent heads in g for a device whose
// folder index holds d at path (had: it holds anything there); use says
// what a conflict-copy name holds (nil: g.NameUse). The product's rules do
// not look at d: every device decides alike whatever it holds. A broken
// rule may, which is what makes it diverge.
type ResolveFunc func(g *protocol.Graph, path string, d Disk, had bool, use protocol.NameUseFunc) (protocol.Decision, error)

// Rules are the decision functions a device runs. The zero value means
// Default().
type Rules struct {
	Resolve ResolveFunc
	// Supersedes is what a local change supersedes (LocalSupersedes).
	Supersedes func(g *protocol.Graph, path string, d Disk, had bool) []protocol.VersionID
}

// Default returns the product's rules: protocol's conflict rules.
func Default() Rules {
	return Rules{Resolve: func(g *protocol.Graph, path string, _ Disk, _ bool, use protocol.NameUseFunc) (protocol.Decision, error) {
		return g.Resolve(path, use)
	}, Supersedes: LocalSupersedes}
}

// OrDefault returns r with every unset function taken from Default.
func (r Rules) OrDefault() Rules {
	if r.Resolve == nil {
		r.Resolve = Default().Resolve
	}
	if r.Supersedes == nil {
		r.Supersedes = LocalSupersedes
	}
	return r
}
