package chunk

// Cut returns the length of the first chunk of data, assuming data is the
// rest of the stream from a chunk boundary: or, when len(data) >= p.Max,
// any prefix of it at least p.Max long. It returns len(data) when data is
// at most p.Min long, and otherwise the smallest n in [p.Min, min(len,
// p.Max)] at which the cut predicate holds, or min(len(data), p.Max) if it
// holds nowhere.
//
// The cut predicate at n looks only at data[n-64:n]: the gear hash of those
// 64 bytes is below the threshold. So whether a position is a cut candidate
// does not depend on where the chunk started; only the Min skip and the Max
// cap do. That is what lets boundaries resynchronise right after an edit.
// Cut panics if p was not made by NewParams or DefaultParams.
func (p Params) Cut(data []byte) int {
	if !p.valid() {
		panic("chunk: invariant: Params not made by NewParams")
	}
	n := len(data)
	if n <= p.Min {
		return n
	}
	end := min(n, p.Max)
	thr := p.thr
	// Warm up on the 63 bytes before the first candidate end p.Min, so that
	// the hash at every candidate covers exactly its 64-byte window.
	var fp uint64
	for _, b := range data[p.Min-window : p.Min-1] {
		fp = fp<<1 + gear[b]
	}
	// Two bytes per step: fp after both is fp*4 + (2*g1 + g2), one LEA on
	// the dependency chain instead of a shift and an add per byte, which
	// nearly doubles the speed. The hash after the first byte is computed
	// off the chain for its own check, so the result is exactly that of
	// the byte-at-a-time rule.
	pos := p.Min - 1 // data[pos] completes the hash of candidate pos+1
	s := data[pos:end]
	for len(s) >= 2 {
		g1, g2 := gear[s[0]], gear[s[1]]
		f1 := fp<<1 + g1
		fp = fp<<2 + (g1<<1 + g2)
		if f1 < thr {
			return pos + 1
		}
		if fp < thr {
			return pos + 2
		}
		s = s[2:]
		pos += 2
	}
	if len(s) == 1 && fp<<1+gear[s[0]] < thr {
		return pos + 1
	}
	return end
}

// Boundaries returns the end offsets of the chunks of data under
// DefaultParams: strictly increasing, the last equal to len(data), and empty
// for empty data. Chunk i is data[b[i-1]:b[i]] with b[-1] = 0.
func Boundaries(data []byte) []int { return DefaultParams().Boundaries(data) }

// Boundaries is Boundaries under p.
func (p Params) Boundaries(data []byte) []int {
	var out []int
	if len(data) > 0 {
		out = make([]int, 0, len(data)/p.Avg+1)
	}
	for off := 0; off < len(data); {
		off += p.Cut(data[off:])
		out = append(out, off)
	}
	return out
}
