package engine

import (
	"cmp"
	"slices"
	"time"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
)

// IsDeletion reports whether path's winner is a deletion: every head is
// one (a deletion loses to any concurrent edit).
func IsDeletion(g *protocol.Graph, path string) bool {
	hs := g.Heads(path)
	for _, h := range hs {
		if h.Kind != protocol.KindDeletion {
			return false
		}
	}
	return len(hs) > 0
}

// Plan is the order in which a batch of dirty paths is carried out.
type Plan struct {
	// Adds are the paths whose winner is not a deletion, parents before
	// children: a file that moved is copied from its old place (by chunk,
	// no transfer) before the old place goes.
	Adds []string
	// Deletions come next, children before parents, so a directory is
	// empty when its own deletion is applied.
	Deletions []string
	// AfterDeletions are non-deletions whose name folds onto a path
	// deleted in this batch (a case-only rename on a case-insensitive file
	// system): they wait until the deletion has freed the name.
	AfterDeletions []string
}

// Arriving maps a content hash to a path in paths whose heads bring that
// file content: what tells a mass-delete guard that a deletion elsewhere
// in the batch is a move.
func Arriving(g *protocol.Graph, paths []string) map[[32]byte]string {
	out := map[[32]byte]string{}
	for _, p := range paths {
		if IsDeletion(g, p) {
			continue
		}
		for _, h := range g.Heads(p) {
			if h.Kind == protocol.KindFile {
				out[h.ContentHash] = p
			}
		}
	}
	return out
}

// Deletions returns, in sorted order, the paths among paths whose winner
// is a deletion (IsDeletion).
func Deletions(g *protocol.Graph, paths []string) []string {
	var out []string
	for _, p := range paths {
		if IsDeletion(g, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Order plans a batch of dirty paths (see Plan). deletions are the paths
// among them whose winner is a deletion (Deletions); apply are those of
// them to carry out now: the others (a mass-delete guard holds them) are
// left out of the plan.
// fold maps a path to the key under which the folder's file system
// compares names (identity on a case-sensitive one). Order is a function
// of its arguments only, so the graph need not be held while a guard
// decides what apply is.
func Order(paths, deletions, apply []string, fold func(string) string) Plan {
	var plan Plan
	isDel := make(map[string]bool, len(deletions)) // a set: batches reach 100,000 paths
	for _, p := range deletions {
		isDel[p] = true
	}
	deleted := map[string]bool{}
	for _, p := range apply {
		if isDel[p] {
			deleted[fold(p)] = true
			plan.Deletions = append(plan.Deletions, p)
		}
	}
	paths = slices.Clone(paths)
	slices.Sort(paths)
	for _, p := range paths {
		switch {
		case isDel[p]:
		case deleted[fold(p)]:
			plan.AfterDeletions = append(plan.AfterDeletions, p)
		default:
			plan.Adds = append(plan.Adds, p)
		}
	}
	slices.SortFunc(plan.Deletions, func(a, b string) int { return -cmp.Compare(a, b) })
	return plan
}

// AuthorOrder orders the versions of one entry for authoring: deletions
// first (children before parents), then the rest with parents before
// children, as the applier's ordering obligation asks
// (docs/protocol/entries.md).
func AuthorOrder(vs []entry.Version) {
	slices.SortStableFunc(vs, func(a, b entry.Version) int {
		ad, bd := a.Kind == entry.KindDeletion, b.Kind == entry.KindDeletion
		if ad != bd {
			if ad {
				return -1
			}
			return 1
		}
		if ad {
			return -cmp.Compare(a.Path, b.Path)
		}
		return cmp.Compare(a.Path, b.Path)
	})
}

// DanglingWait is how long a path whose heads supersede versions this
// device has not seen yet waits for them before it is resolved anyway: a
// missing version can still link two heads (sequential edits, not
// concurrent ones), and resolving too early writes a false conflict copy.
const DanglingWait = 10 * time.Second

// AwaitsHistory reports whether path's decision must wait for versions its
// heads supersede: it has several heads and some of them name a version
// the graph lacks.
func AwaitsHistory(g *protocol.Graph, path string) bool {
	return len(g.Heads(path)) > 1 && len(g.Dangling(path)) > 0
}

// WaitOver reports whether a path that has awaited history since since is
// resolved anyway at now. A clock that went back (now before since) does
// not end the wait early; it keeps waiting until the clock passes since +
// DanglingWait.
func WaitOver(since, now time.Time) bool {
	return now.Sub(since) >= DanglingWait
}
