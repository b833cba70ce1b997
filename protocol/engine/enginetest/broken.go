package enginetest

import (
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
)

// KeepLocal returns rules with a deliberately broken conflict rule, for
// tests that show a convergence check bites: a device that already holds
// one of a path's concurrent versions keeps it, writes no conflict copy
// and records no resolution. Which version a device keeps then depends on
// the order it saw them in, so devices end with different trees.
func KeepLocal() engine.Rules {
	return engine.Rules{Resolve: func(g *protocol.Graph, path string, d engine.Disk, had bool, use protocol.NameUseFunc) (protocol.Decision, error) {
		dec, err := g.Resolve(path, use)
		if err != nil || !had || len(dec.Superseded) <= 1 {
			return dec, err
		}
		for _, h := range g.Heads(path) {
			if h.ID == d.Version {
				return protocol.Decision{Path: path, Outcome: protocol.OutcomeIdentical, Winner: h, Superseded: dec.Superseded}, nil
			}
		}
		return dec, nil
	}}
}

// OverwriteUnseen returns rules whose local change supersedes every head of
// its path, applied here or not: a remote edit that arrived but was not
// written to disk yet is then silently overwritten instead of meeting the
// local edit as a concurrent version. A check for lost writes must catch it.
func OverwriteUnseen() engine.Rules {
	return engine.Rules{Supersedes: func(g *protocol.Graph, path string, d engine.Disk, had bool) []protocol.VersionID {
		return engine.HeadIDs(g, path)
	}}
}
