package protocol

import (
	"bytes"
	"strings"
)

// Markdown frontmatter merge (mergedriver.go): a note that starts with a
// YAML frontmatter block ("---" lines around it, as Obsidian writes it) is
// merged in two parts: the frontmatter key by key (keyedMerge), the body
// line by line (Merge3). Each top-level key is its key line with the lines
// that continue it (indented lines, and "- " items of a list at its
// level); comment and blank lines go with the key after them. A value
// changed by both sides differently conflicts, as one line would. No YAML
// is parsed: keys are compared as the bytes of their lines, so the merge
// cannot change how anything is written.

// splitFrontmatter cuts a note into its frontmatter (the lines between the
// delimiters, each ending in '\n') and its body (after the closing
// delimiter's line). ok is false when the note has no frontmatter.
func splitFrontmatter(b []byte) (fm, body []byte, ok bool) {
	if !bytes.HasPrefix(b, []byte("---\n")) {
		return nil, nil, false
	}
	rest := b[4:]
	if bytes.HasPrefix(rest, []byte("---\n")) {
		return rest[:0], rest[4:], true
	}
	i := bytes.Index(rest, []byte("\n---\n"))
	if i < 0 {
		if bytes.HasSuffix(rest, []byte("\n---")) {
			return rest[:len(rest)-3], nil, true
		}
		return nil, nil, false
	}
	return rest[:i+1], rest[i+5:], true
}

// frontmatterMembers lists the frontmatter's top-level keys, each with its
// lines; ok is false for lines that are not key blocks (text before the
// first key that is not a comment or blank).
func frontmatterMembers(fm []byte) ([]member, bool) {
	var out []member
	var pending []byte // comments and blank lines, for the next key
	for len(fm) > 0 {
		n := bytes.IndexByte(fm, '\n') + 1
		if n == 0 {
			n = len(fm)
		}
		line := fm[:n]
		fm = fm[n:]
		trimmed := strings.TrimSpace(string(line))
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			pending = append(pending, line...)
		case line[0] == ' ' || line[0] == '\t' || line[0] == '-':
			if len(out) == 0 {
				return nil, false
			}
			last := &out[len(out)-1]
			last.val = append(append(last.val, pending...), line...)
			pending = nil
		default:
			key, _, found := strings.Cut(string(line), ":")
			if !found {
				return nil, false
			}
			val := append(append([]byte(nil), pending...), line...)
			out = append(out, member{key: strings.TrimSpace(key), val: val})
			pending = nil
		}
	}
	if len(pending) > 0 {
		out = append(out, member{key: "\x00trailing", val: pending})
	}
	return out, true
}

// mergeFrontmatter merges a and b from base when all three have
// frontmatter; handled is false when one does not (the caller merges
// lines instead).
func mergeFrontmatter(base, a, b []byte) (merged []byte, clean, handled bool, err error) {
	bf, bb, okb := splitFrontmatter(base)
	af, ab, oka := splitFrontmatter(a)
	yf, yb, oky := splitFrontmatter(b)
	if !okb || !oka || !oky {
		return nil, false, false, nil
	}
	bm, ok1 := frontmatterMembers(bf)
	am, ok2 := frontmatterMembers(af)
	ym, ok3 := frontmatterMembers(yf)
	if !ok1 || !ok2 || !ok3 {
		return nil, false, false, nil
	}
	fm, ok := keyedMerge(bm, am, ym, bytes.Equal, nil)
	if !ok {
		return nil, false, true, nil
	}
	body, clean, err := Merge3(bb, ab, yb)
	if err != nil || !clean {
		return nil, false, true, err
	}
	out := []byte("---\n")
	for _, m := range fm {
		out = append(out, m.val...)
	}
	if len(out) > 4 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, "---\n"...)
	return append(out, body...), true, true, nil
}
