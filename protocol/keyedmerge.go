package protocol

import (
	"bytes"
	"slices"
)

// A keyed three-way merge, shared by the JSON and frontmatter drivers
// (mergedriver.go): a document is a list of members, each a key and the
// bytes of its value, and the two sides' changes are merged member by
// member instead of line by line, so two devices changing different keys
// on adjacent lines merge cleanly.

// member is one key of a keyed document and its value's bytes.
type member struct {
	key string
	val []byte
}

// keyedMerge merges the member lists x and y from base. A member changed
// (or added, or removed) by one side only takes that side's value; the
// same change on both sides is taken once; different changes conflict,
// unless sub merges the three values (nil when nothing nests). same says
// whether two values are the same (formatting aside). ok is false on a
// conflict, or when a list names a key twice.
//
// The result is the same with x and y swapped. Members keep base's order
// (a side that reordered base's members conflicts);
// a member added by one side goes after the base member it follows there
// (first when none does); members added at one place by both sides are
// ordered by key, and one side's additions there keep that side's order.
func keyedMerge(base, x, y []member, same func(a, b []byte) bool, sub func(b, x, y []byte) ([]byte, bool)) ([]member, bool) {
	bm, xm, ym := index(base), index(x), index(y)
	if bm == nil || xm == nil || ym == nil {
		return nil, false
	}
	// A side that reordered the members it kept (a canvas's nodes brought
	// to the front, frontmatter keys sorted) changed what base order
	// cannot carry: a conflict, left to the line merge.
	if reordered(base, x, xm) || reordered(base, y, ym) {
		return nil, false
	}
	// The value of one base key: absent (nil, false) when removed.
	merged := func(k string) ([]byte, bool, bool) {
		b := base[bm[k]].val
		xi, inX := xm[k]
		yi, inY := ym[k]
		switch {
		case !inX && !inY:
			return nil, false, true
		case !inX:
			return nil, false, same(y[yi].val, b)
		case !inY:
			return nil, false, same(x[xi].val, b)
		}
		xv, yv := x[xi].val, y[yi].val
		switch {
		case same(xv, yv), same(yv, b):
			return xv, true, true
		case same(xv, b):
			return yv, true, true
		case sub != nil:
			v, ok := sub(b, xv, yv)
			return v, true, ok
		}
		return nil, false, false
	}
	// Additions by anchor: the base key they follow ("" for the start,
	// which no key can be: keys of a list are checked unique and a JSON
	// or YAML key "" has no anchor role here, so the start is marked by
	// position -1).
	type addition struct {
		m    member
		side int
	}
	adds := map[int][]addition{}
	for side, list := range [][]member{x, y} {
		anchor := -1
		for _, m := range list {
			if i, ok := bm[m.key]; ok {
				anchor = i
				continue
			}
			adds[anchor] = append(adds[anchor], addition{m, side})
		}
	}
	var out []member
	emit := func(anchor int) bool {
		as := adds[anchor]
		if len(as) == 0 {
			return true
		}
		both := slices.ContainsFunc(as, func(a addition) bool { return a.side == 0 }) &&
			slices.ContainsFunc(as, func(a addition) bool { return a.side == 1 })
		if both {
			slices.SortStableFunc(as, func(a, b addition) int { return compareKeys(a.m.key, b.m.key) })
		}
		for i, a := range as {
			if i > 0 && as[i-1].m.key == a.m.key {
				if !same(as[i-1].m.val, a.m.val) {
					return false // added by both with different values
				}
				continue
			}
			out = append(out, a.m)
		}
		return true
	}
	// A key added at different places by the two sides is one addition
	// in two groups: refuse it unless both values agree, and keep it once.
	seen := map[string][]byte{}
	for _, as := range adds {
		for _, a := range as {
			if v, ok := seen[a.m.key]; ok && !same(v, a.m.val) {
				return nil, false
			}
			seen[a.m.key] = a.m.val
		}
	}
	if !emit(-1) {
		return nil, false
	}
	for i, m := range base {
		v, keep, ok := merged(m.key)
		if !ok {
			return nil, false
		}
		if keep {
			out = append(out, member{m.key, v})
		}
		if !emit(i) {
			return nil, false
		}
	}
	// A key added at two places appears twice: keep the first.
	dedup := out[:0]
	had := map[string]bool{}
	for _, m := range out {
		if !had[m.key] {
			had[m.key] = true
			dedup = append(dedup, m)
		}
	}
	return dedup, true
}

// reordered reports whether list (indexed by at) holds base's members it
// kept in another order than base.
func reordered(base, list []member, at map[string]int) bool {
	last := -1
	for _, m := range base {
		i, ok := at[m.key]
		if !ok {
			continue
		}
		if i < last {
			return true
		}
		last = i
	}
	return false
}

// index maps each key of list to its position, or is nil when a key
// appears twice.
func index(list []member) map[string]int {
	m := make(map[string]int, len(list))
	for i, e := range list {
		if _, dup := m[e.key]; dup {
			return nil
		}
		m[e.key] = i
	}
	return m
}

func compareKeys(a, b string) int { return bytes.Compare([]byte(a), []byte(b)) }
