package node

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// TestFirstAfterMatchesSort: the scrub slice's pick (a bounded heap over
// the index) is the first n accepted paths after the cursor in order, as
// sorting the whole index gave, and says when paths were left out.
func TestFirstAfterMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		index := map[string]vaultdb.Record{}
		for i := range r.IntN(300) {
			kind := entry.KindFile
			if r.IntN(5) == 0 {
				kind = entry.KindDir
			}
			index[fmt.Sprintf("d%d/f%03d", r.IntN(4), i)] = vaultdb.Record{Kind: kind}
		}
		cursor := fmt.Sprintf("d%d/f%03d", r.IntN(4), r.IntN(300))
		if round%10 == 0 {
			cursor = ""
		}
		n := r.IntN(80) - 5
		keep := func(_ string, rec vaultdb.Record) bool { return rec.Kind == entry.KindFile }
		var want []string
		for p, rec := range index {
			if p > cursor && keep(p, rec) {
				want = append(want, p)
			}
		}
		slices.Sort(want)
		wantMore := false
		if n > 0 && len(want) > n {
			want, wantMore = want[:n], true
		}
		got, more := firstAfter(index, cursor, n, keep)
		if !slices.Equal(got, want) || more != wantMore {
			t.Fatalf("round %d (n %d, cursor %q): got %v more %v, want %v more %v", round, n, cursor, got, more, want, wantMore)
		}
	}
}
