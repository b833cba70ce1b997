package simulation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weftsync/weft/node/folder"
)

// conflictMark is what every conflict copy's name contains.
const conflictMark = ".conflict-"

// tempFiles lists the applier's temporary files (names starting with
// folder.TempPrefix) in a tree, sorted. After settling none may be left: an
// apply that failed or raced must remove its temp file, and one a crash
// left is removed when the node starts.
func tempFiles(tree map[string]Item) []string {
	var out []string
	for p, it := range tree {
		if !it.Dir && strings.HasPrefix(baseName(p), folder.TempPrefix) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// copyProblems reports what the conflict copies of a settled tree must
// never show (docs/sync.md, "Concurrent resolutions"), one message per
// problem, sorted:
//   - a copy of a copy: a path containing conflictMark twice;
//   - one content held by two or more conflict copies of the same path:
//     every loser of a path is copied once, under a name derived from its
//     content. (One content lost at two different paths, say before and
//     after a rename, is copied once for each path: that is not a
//     problem.)
func copyProblems(tree map[string]Item) []string {
	type key struct {
		origin string // the copied path's directory and stem
		hash   [32]byte
	}
	var out []string
	byKey := map[key][]string{}
	for p, it := range tree {
		if it.Dir || !strings.Contains(p, conflictMark) {
			continue
		}
		if strings.Count(p, conflictMark) > 1 {
			out = append(out, fmt.Sprintf("copy of a conflict copy: %s", p))
		}
		k := key{p[:strings.Index(p, conflictMark)], it.Hash}
		byKey[k] = append(byKey[k], p)
	}
	for _, ps := range byKey {
		if len(ps) > 1 {
			slices.Sort(ps)
			out = append(out, fmt.Sprintf("one content in %d conflict copies: %s", len(ps), strings.Join(ps, ", ")))
		}
	}
	slices.Sort(out)
	return out
}

func baseName(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}
