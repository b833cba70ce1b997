package protocol

// LineOp is one line of a line diff: a line both texts share, or one only
// the first (Old) or only the second (New) has.
type LineOp struct {
	Kind LineKind
	Line string // with its '\n', when it has one
}

// LineKind says which text a diff line belongs to.
type LineKind uint8

const (
	LineSame LineKind = iota // in both
	LineOld                  // only in the first text (removed)
	LineNew                  // only in the second text (added)
)

// DiffLines is the line diff from a to b, for showing a person two
// versions side by side: lines of a longest common subsequence are
// LineSame, the rest LineOld (from a) and LineNew (from b), each run of
// removals before the additions that replace it. It is the merge's own
// Myers diff (matchLines), bounded the same way: ok is false when the
// texts are not text (IsText), larger than MaxMergeBytes, or differ by
// more than MaxMergeEdits lines, and the caller shows them whole instead.
func DiffLines(a, b []byte) (ops []LineOp, ok bool) {
	if len(a) > MaxMergeBytes || len(b) > MaxMergeBytes || !IsText(a) || !IsText(b) {
		return nil, false
	}
	la, lb := splitLines(a), splitLines(b)
	ids := map[string]int{}
	xa, xb := intern(ids, la), intern(ids, lb)
	match, ok := matchLines(xa, xb, MaxMergeEdits)
	if !ok {
		return nil, false
	}
	j := 0
	for i, m := range match {
		if m < 0 {
			ops = append(ops, LineOp{LineOld, string(la[i])})
			continue
		}
		for ; j < m; j++ {
			ops = append(ops, LineOp{LineNew, string(lb[j])})
		}
		ops = append(ops, LineOp{LineSame, string(la[i])})
		j = m + 1
	}
	for ; j < len(lb); j++ {
		ops = append(ops, LineOp{LineNew, string(lb[j])})
	}
	return ops, true
}
