package chunk

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestEditResend measures benchmark B6 on the default bounds: how many bytes
// of new chunks a peer must be sent after a 1 MiB overwrite at an unaligned
// offset in the middle of a 64 MiB file, and after inserting 1 MiB or
// 1,000,000 bytes there. What is re-sent depends only on the bytes around
// the edit, so 64 MiB stands in for B6's 4 GiB. docs/protocol/chunks.md
// quotes this test's output (go test -run EditResend -v).
func TestEditResend(t *testing.T) {
	size, seeds := 64<<20, 8
	if testing.Short() || raceEnabled {
		size, seeds = 16<<20, 1
	}
	edits := []struct {
		name  string
		limit int // B6's bound
		edit  func(data []byte, off int, seed uint64) []byte
	}{
		{"overwrite 1 MiB", 3 << 19, func(d []byte, off int, s uint64) []byte { return overwrite(d, off, 1<<20, s) }},
		{"insert 1 MiB", 2 << 20, func(d []byte, off int, s uint64) []byte { return insert(d, off, 1<<20, s) }},
		{"insert 1000000 B", 2 << 20, func(d []byte, off int, s uint64) []byte { return insert(d, off, 1000000, s) }},
	}
	p := DefaultParams()
	worst := make([]int, len(edits))
	sum := make([]int, len(edits))
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		data := seeded(seed, size)
		old := chunkSet(p, data)
		off := size/2 + 1 + int(seed*7919)%65536 // unaligned
		for i, e := range edits {
			_, n := newChunks(p, old, e.edit(data, off, seed<<32))
			if n > e.limit {
				t.Errorf("seed %d, %s: got %d bytes re-sent, want <= %d", seed, e.name, n, e.limit)
			}
			worst[i] = max(worst[i], n)
			sum[i] += n
		}
	}
	for i, e := range edits {
		t.Logf("%s: re-sent mean %.3f MiB, worst %.3f MiB over %d seeds (limit %.1f MiB)",
			e.name, float64(sum[i])/float64(seeds)/(1<<20), float64(worst[i])/(1<<20), seeds, float64(e.limit)/(1<<20))
	}
}

// insertionNewChunks returns how many chunks of data with ins inserted at
// off are not chunks of data. Random data has no repeated chunks, so a chunk
// is old exactly when its boundaries map onto two consecutive old ones.
func insertionNewChunks(p Params, data []byte, off int, ins []byte) int {
	ob := append([]int{0}, p.Boundaries(data)...)
	isOld := func(a, b int) bool {
		i, ok := slices.BinarySearch(ob, a)
		return ok && i+1 < len(ob) && ob[i+1] == b
	}
	nb := append([]int{0}, p.Boundaries(insert(data, off, len(ins), 0))...)
	k := len(ins)
	n := 0
	for i := 1; i < len(nb); i++ {
		a, b := nb[i-1], nb[i]
		switch {
		case b <= off && isOld(a, b):
		case a >= off+k && isOld(a-k, b-k):
		default:
			n++
		}
	}
	return n
}

// TestSmallInsertionResync pins the resynchronisation the design delivers,
// measured over fixed cases so the test cannot flake: after inserting k
// bytes into a large random file, the chunk holding the insertion is
// usually the only new one. More happen when the insertion shifts the
// Min-byte skip zone of its chunk over a cut candidate (probability about
// k/(Avg-Min)): the new cut then starts a short cascade, each step
// continuing with probability below one half.
func TestSmallInsertionResync(t *testing.T) {
	cases := 600
	if testing.Short() || raceEnabled {
		cases = 20
	}
	p := DefaultParams()
	for _, tt := range []struct {
		maxK       int
		wantOneMin float64 // fraction of cases with exactly one new chunk
		wantMax    int
	}{
		{64, 0.98, 6},
		{4096, 0.9, 8},
	} {
		t.Run(fmt.Sprintf("k<=%d", tt.maxK), func(t *testing.T) {
			hist := map[int]int{}
			for i := range cases {
				data := seeded(uint64(i), 2<<20)
				r := seeded(uint64(i)+1<<40, 8)
				k := 1 + (int(r[0])|int(r[1])<<8)%tt.maxK
				off := (int(r[2]) | int(r[3])<<8 | int(r[4])<<16) % len(data)
				n := insertionNewChunks(p, data, off, seeded(uint64(i)+2<<40, k))
				hist[n]++
				if n > tt.wantMax || n < 1 {
					t.Errorf("case %d: k=%d at %d: got %d new chunks, want 1..%d", i, k, off, n, tt.wantMax)
				}
			}
			if got := float64(hist[1]) / float64(cases); got < tt.wantOneMin {
				t.Errorf("got %.3f of cases with one new chunk, want >= %.2f", got, tt.wantOneMin)
			}
			t.Logf("new-chunk histogram over %d cases: %v", cases, hist)
		})
	}
}

// TestInsertionProperties checks, for any insertion, what the design
// guarantees whatever the data: boundaries before the insertion do not
// move, the new chunks form one run around the insertion, and after the
// run every chunk is old. Small bounds keep each case fast.
func TestInsertionProperties(t *testing.T) {
	p := small
	rapid.Check(t, func(t *rapid.T) {
		data := seeded(rapid.Uint64().Draw(t, "seed"), rapid.IntRange(0, 64<<10).Draw(t, "size"))
		off := rapid.IntRange(0, len(data)).Draw(t, "off")
		ins := rapid.SliceOfN(rapid.Byte(), 1, 300).Draw(t, "ins")
		edited := insert(data, off, len(ins), 0)
		copy(edited[off:], ins)

		ob := append([]int{0}, p.Boundaries(data)...)
		nb := append([]int{0}, p.Boundaries(edited)...)
		for _, b := range ob[:len(ob)-1] { // the last is end of data, not a cut
			if b <= off && !slices.Contains(nb, b) {
				t.Fatalf("boundary %d before insertion at %d moved", b, off)
			}
		}
		old := chunkSet(p, data)
		// Chunks of edited, in order, as new (true) or old (false): the
		// pattern must be old* new* old*, with some new chunk covering the
		// insertion whenever the insertion changes the content.
		state := 0 // 0: leading old run, 1: new run, 2: trailing old run
		for i := 1; i < len(nb); i++ {
			c := chunkSet(p, edited[nb[i-1]:nb[i]])
			isNew := true
			for h := range c {
				isNew = !old[h]
			}
			switch {
			case isNew && state == 2:
				t.Fatalf("new chunk %d after the run of new chunks ended", i)
			case isNew:
				state = 1
			case state == 1:
				state = 2
			}
		}
	})
}
