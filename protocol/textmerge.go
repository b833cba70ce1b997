package protocol

import (
	"bytes"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Merge limits. A merge over a limit is refused with ErrMergeTooLarge and the
// caller falls back to a conflict copy; the limits bound the work so that a
// merge takes well under a second and the same answer comes out everywhere.
const (
	// MaxMergeBytes is the largest input (base or side) Merge3 accepts.
	// Resolve plans no merge for a version whose Size is larger.
	MaxMergeBytes = 4 << 20
	// MaxMergeLines is the most lines an input may have.
	MaxMergeLines = 100_000
	// MaxMergeEdits is the most lines one side may differ from the base by
	// (inserted plus deleted lines, after trimming the common prefix and
	// suffix). It bounds the diff to O(lines × MaxMergeEdits) steps and
	// O(MaxMergeEdits²) memory (16 MiB).
	MaxMergeEdits = 2000
)

// IsText reports whether content counts as text for merging: valid UTF-8
// with no NUL byte. It looks at the content only, so every device that
// holds the same bytes gets the same answer.
func IsText(content []byte) bool {
	return bytes.IndexByte(content, 0) < 0 && utf8.Valid(content)
}

// Merge3 merges the line-level changes from base to a and from base to b
// (diff3). A line is everything up to and including '\n'; a last line
// without one is a line too, so a changed final newline is a change to the
// last line.
//
// The merge is clean when no region of base was changed differently by the
// two sides; identical changes on both sides are clean, and so are changes
// to different regions. Changes that touch or abut one region (including
// different insertions at the same place) are a conflict, except that
// different lines appended at the end of a base that is not empty are all
// kept (appendBoth: the order depends on the appends, not on the sides). When clean,
// merged is the result and Merge3(base, a, b) equals Merge3(base, b, a).
// When not clean, merged is nil.
//
// It returns an error wrapping ErrMergeTooLarge or ErrNotText when it
// refuses the inputs (see the limits above and IsText). It does not modify
// its inputs; merged may share memory with a or b.
func Merge3(base, a, b []byte) (merged []byte, clean bool, err error) {
	for _, in := range []struct {
		name string
		b    []byte
	}{{"base", base}, {"first side", a}, {"second side", b}} {
		if len(in.b) > MaxMergeBytes {
			return nil, false, fmt.Errorf("merging: %s is %d bytes, limit %d: %w", in.name, len(in.b), MaxMergeBytes, ErrMergeTooLarge)
		}
		if !IsText(in.b) {
			return nil, false, fmt.Errorf("merging: %s: %w", in.name, ErrNotText)
		}
	}
	switch {
	case bytes.Equal(a, b), bytes.Equal(base, b):
		return a, true, nil
	case bytes.Equal(base, a):
		return b, true, nil
	}

	lb, la, lbb := splitLines(base), splitLines(a), splitLines(b)
	if n := max(len(lb), len(la), len(lbb)); n > MaxMergeLines {
		return nil, false, fmt.Errorf("merging: %d lines, limit %d: %w", n, MaxMergeLines, ErrMergeTooLarge)
	}
	ids := make(map[string]int)
	xb, xa, xbb := intern(ids, lb), intern(ids, la), intern(ids, lbb)
	ma, ok := matchLines(xb, xa, MaxMergeEdits)
	if !ok {
		return nil, false, fmt.Errorf("merging: first side differs from base by over %d lines: %w", MaxMergeEdits, ErrMergeTooLarge)
	}
	mb, ok := matchLines(xb, xbb, MaxMergeEdits)
	if !ok {
		return nil, false, fmt.Errorf("merging: second side differs from base by over %d lines: %w", MaxMergeEdits, ErrMergeTooLarge)
	}

	out := make([]byte, 0, max(len(a), len(b)))
	i, j, k := 0, 0, 0
	for {
		// A stable run: lines of base kept by both sides.
		for i < len(xb) && ma[i] == j && mb[i] == k {
			out = append(out, lb[i]...)
			i, j, k = i+1, j+1, k+1
		}
		// The next line of base both sides keep ends the unstable chunk.
		i2 := i
		for i2 < len(xb) && (ma[i2] < 0 || mb[i2] < 0) {
			i2++
		}
		j2, k2 := len(xa), len(xbb)
		if i2 < len(xb) {
			j2, k2 = ma[i2], mb[i2]
		}
		if i == i2 && j == j2 && k == k2 {
			break // only at the end: otherwise the stable run would have advanced
		}
		cb, ca, cbb := xb[i:i2], xa[j:j2], xbb[k:k2]
		switch {
		case slices.Equal(cb, ca):
			out = appendLines(out, lbb[k:k2])
		case slices.Equal(cb, cbb), slices.Equal(ca, cbb):
			out = appendLines(out, la[j:j2])
		case len(cb) == 0 && i == len(xb) && len(xb) > 0:
			// Both sides only appended at the end of the base (a note two
			// devices each added a line to): both appends are kept.
			m, ok := appendBoth(out, la[j:j2], lbb[k:k2], ca, cbb)
			if !ok {
				return nil, false, nil
			}
			return m, true, nil
		default:
			return nil, false, nil
		}
		i, j, k = i2, j2, k2
	}
	return out, true, nil
}

// appendBoth appends two sides' different appends to out, in an order
// that depends only on the two appends, so that every device merges to the
// same bytes whichever side it holds as its own: when one append's lines
// begin the other's, the longer alone (it holds the shorter); otherwise
// the one that sorts first bytewise, then the other. An append whose last
// line has no newline goes last, so that no two lines run together; two
// such appends are not merged (ok false).
func appendBoth(out []byte, x, y [][]byte, xIDs, yIDs []int) ([]byte, bool) {
	switch {
	case len(xIDs) <= len(yIDs) && slices.Equal(xIDs, yIDs[:len(xIDs)]):
		return appendLines(out, y), true
	case len(yIDs) < len(xIDs) && slices.Equal(yIDs, xIDs[:len(yIDs)]):
		return appendLines(out, x), true
	}
	bx, by := bytes.Join(x, nil), bytes.Join(y, nil)
	if bytes.Compare(by, bx) < 0 {
		bx, by = by, bx
	}
	if !bytes.HasSuffix(bx, []byte("\n")) {
		bx, by = by, bx
	}
	if !bytes.HasSuffix(bx, []byte("\n")) {
		return nil, false
	}
	return append(append(out, bx...), by...), true
}

// MergeAll merges two or more sides from one base, pairwise in the order
// given (a MergePlan's Sides): ((s0+s1)+s2)+..., each step Merge3 from base.
// It stops at the first step that is not clean or refused. With two sides it
// is Merge3(base, sides[0], sides[1]).
func MergeAll(base []byte, sides [][]byte) (merged []byte, clean bool, err error) {
	if len(sides) == 0 {
		return base, true, nil
	}
	acc := sides[0]
	for _, s := range sides[1:] {
		acc, clean, err = Merge3(base, acc, s)
		if err != nil || !clean {
			return nil, false, err
		}
	}
	if len(sides) == 1 {
		if !IsText(acc) {
			return nil, false, fmt.Errorf("merging: %w", ErrNotText)
		}
	}
	return acc, true, nil
}

// splitLines splits b after each '\n'. The lines share b's memory.
func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

// intern maps each distinct line to a small integer, shared across calls
// with the same map, so lines compare as ints.
func intern(ids map[string]int, lines [][]byte) []int {
	out := make([]int, len(lines))
	for i, l := range lines {
		id, ok := ids[string(l)]
		if !ok {
			id = len(ids)
			ids[string(l)] = id
		}
		out[i] = id
	}
	return out
}

func appendLines(out []byte, lines [][]byte) []byte {
	for _, l := range lines {
		out = append(out, l...)
	}
	return out
}
