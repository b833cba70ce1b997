package engine

import "github.com/weftsync/weft/protocol"

// BytesToWrite estimates how many bytes carrying out paths writes to the
// folder: for each path, the largest file head the folder does not hold
// already (holds says which version the folder index has at a path).
// Status reports it beside the pending paths, for the bytes and the time
// left. It is an estimate: a merge writes other bytes, a conflict copy
// more, and a head the folder holds under another version writes none.
func BytesToWrite(g *protocol.Graph, paths []string, holds func(path string) (protocol.VersionID, bool)) int64 {
	var total int64
	for _, p := range paths {
		held, had := holds(p)
		var most uint64
		for _, h := range g.Heads(p) {
			if h.Kind == protocol.KindFile && !(had && h.ID == held) {
				most = max(most, h.Size)
			}
		}
		total += int64(min(most, 1<<62))
	}
	return total
}
