package protocol

// This file is a line-level Myers diff (E. W. Myers, "An O(ND) Difference
// Algorithm and Its Variations", 1986), written here rather than imported so
// that its output is pinned by our tests and identical on every machine:
// libraries with a time budget (diff-match-patch's DiffTimeout) give
// machine-dependent diffs, and a merge that differs between devices would
// fork the folder. The work is bounded by an edit count instead of a clock.

// matchLines returns, for each index of x, the index of y it is matched to
// in a longest common subsequence found by Myers' greedy algorithm, or -1.
// Matches are strictly increasing in both indexes. ok is false when x and y
// differ by more than maxEdits inserted plus deleted lines; the work and
// memory are then bounded by O((len(x)+len(y))·maxEdits) and O(maxEdits²).
func matchLines(x, y []int, maxEdits int) (match []int, ok bool) {
	match = make([]int, len(x))
	for i := range match {
		match[i] = -1
	}
	// Trim the common prefix and suffix: most edits are local, and this
	// keeps Myers' work proportional to the changed region.
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		match[pre] = pre
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		match[len(x)-1-suf] = len(y) - 1 - suf
		suf++
	}
	xs, ys := x[pre:len(x)-suf], y[pre:len(y)-suf]
	pairs, ok := myers(xs, ys, maxEdits)
	if !ok {
		return nil, false
	}
	for _, p := range pairs {
		match[pre+p[0]] = pre + p[1]
	}
	return match, true
}

// myers returns the matched index pairs of an LCS of a and b, in increasing
// order, or ok == false if the edit distance exceeds maxEdits.
func myers(a, b []int, maxEdits int) (pairs [][2]int, ok bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return nil, n+m <= maxEdits
	}
	maxD := min(n+m, maxEdits)
	off := maxD + 1
	v := make([]int32, 2*maxD+3)
	// trace[d] is v[-d..d] after step d, for walking back.
	var trace [][]int32
	end := -1
	for d := 0; d <= maxD && end < 0; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = int(v[off+k+1]) // down: insertion from b
			} else {
				x = int(v[off+k-1]) + 1 // right: deletion from a
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = int32(x)
			if x >= n && y >= m {
				end = d
				break
			}
		}
		trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
	}
	if end < 0 {
		return nil, false
	}
	x, y := n, m
	for d := end; d > 0; d-- {
		prev := trace[d-1] // index k+(d-1)
		k := x - y
		var pk, xs int
		if k == -d || (k != d && prev[k-1+d-1] < prev[k+1+d-1]) {
			pk = k + 1
			xs = int(prev[pk+d-1])
		} else {
			pk = k - 1
			xs = int(prev[pk+d-1]) + 1
		}
		for x > xs {
			x--
			y--
			pairs = append(pairs, [2]int{x, y})
		}
		x = int(prev[pk+d-1])
		y = x - pk
	}
	for x > 0 {
		x--
		y--
		pairs = append(pairs, [2]int{x, y})
	}
	for i, j := 0, len(pairs)-1; i < j; i, j = i+1, j-1 {
		pairs[i], pairs[j] = pairs[j], pairs[i]
	}
	return pairs, true
}
