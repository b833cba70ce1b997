package versions

import (
	"cmp"
	"slices"
	"time"

	"github.com/ipfs/go-cid"
)

// Policy says which kept versions a device retains.
//
// Every version is kept for KeepAll after this device kept it; after that,
// of the versions of one path that are no longer current, the newest of
// each day (UTC, by the time they were kept) is retained and the rest go.
// Then, while the chunks of what is retained take more than Budget bytes,
// the version kept longest ago goes (whether it is still current or not:
// the copy of a file nobody touched for months is worth less than the
// version before yesterday's edit).
type Policy struct {
	KeepAll time.Duration // zero means DefaultKeepAll
	Budget  int64         // bytes of chunks; <= 0 keeps nothing
}

// DefaultKeepAll is how long every version is retained before the daily
// thinning: 30 days.
const DefaultKeepAll = 30 * 24 * time.Hour

// Entry is what the retention plan needs of one kept version.
type Entry struct {
	ID      []byte // the catalog key
	Path    string
	KeptAt  time.Time
	Current bool // the folder holds this version now
	Chunks  []ChunkRef
}

// ChunkRef is one chunk of a kept version.
type ChunkRef struct {
	CID  cid.Cid
	Size uint32
}

// Plan returns the indexes (into es) of the versions to drop under p at
// now, and the chunk bytes what remains takes (each chunk counted once,
// however many versions share it). Plan is pure.
func Plan(es []Entry, now time.Time, p Policy) (drop []int, bytes int64) {
	keepAll := p.KeepAll
	if keepAll <= 0 {
		keepAll = DefaultKeepAll
	}
	dropped := make([]bool, len(es))
	// Daily thinning of old versions that are no longer current.
	type dayKey struct {
		path string
		day  int64
	}
	newest := map[dayKey]int{}
	for i, e := range es {
		if e.Current || now.Sub(e.KeptAt) <= keepAll {
			continue
		}
		k := dayKey{e.Path, e.KeptAt.UTC().Unix() / 86400}
		j, ok := newest[k]
		switch {
		case !ok:
			newest[k] = i
		case es[j].KeptAt.Before(e.KeptAt) || (es[j].KeptAt.Equal(e.KeptAt) && string(es[j].ID) < string(e.ID)):
			dropped[j] = true
			newest[k] = i
		default:
			dropped[i] = true
		}
	}
	// The budget: count each chunk once over what is retained.
	refs := map[cid.Cid]int{}
	for i, e := range es {
		if dropped[i] {
			continue
		}
		for _, c := range e.Chunks {
			if refs[c.CID] == 0 {
				bytes += int64(c.Size)
			}
			refs[c.CID]++
		}
	}
	if bytes > p.Budget {
		order := make([]int, 0, len(es))
		for i := range es {
			if !dropped[i] {
				order = append(order, i)
			}
		}
		slices.SortFunc(order, func(a, b int) int {
			if c := es[a].KeptAt.Compare(es[b].KeptAt); c != 0 {
				return c
			}
			return cmp.Compare(string(es[a].ID), string(es[b].ID))
		})
		for _, i := range order {
			if bytes <= p.Budget {
				break
			}
			dropped[i] = true
			for _, c := range es[i].Chunks {
				refs[c.CID]--
				if refs[c.CID] == 0 {
					bytes -= int64(c.Size)
				}
			}
		}
	}
	for i, d := range dropped {
		if d {
			drop = append(drop, i)
		}
	}
	return drop, bytes
}
