package protocol

import (
	"strings"
	"testing"
)

// render writes a diff as " line", "-line", "+line".
func render(ops []LineOp) string {
	var b strings.Builder
	for _, op := range ops {
		b.WriteByte(" -+"[op.Kind])
		b.WriteString(op.Line)
	}
	return b.String()
}

func TestDiffLines(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{"one\ntwo\nthree\n", "one\ntwo\nthree\n", " one\n two\n three\n"},
		{"one\ntwo\nthree\n", "one\n2\nthree\n", " one\n-two\n+2\n three\n"},
		{"a\nb\n", "a\nb\nc\n", " a\n b\n+c\n"},
		{"x\na\n", "a\n", "-x\n a\n"},
		{"", "new\n", "+new\n"},
		{"last", "last\n", "-last+last\n"},
	} {
		ops, ok := DiffLines([]byte(c.a), []byte(c.b))
		if !ok {
			t.Fatalf("%q -> %q: not diffed", c.a, c.b)
		}
		if got := render(ops); got != c.want {
			t.Errorf("%q -> %q:\n%s\nwant:\n%s", c.a, c.b, got, c.want)
		}
		// Both texts come back from the diff.
		var old, new strings.Builder
		for _, op := range ops {
			if op.Kind != LineNew {
				old.WriteString(op.Line)
			}
			if op.Kind != LineOld {
				new.WriteString(op.Line)
			}
		}
		if old.String() != c.a || new.String() != c.b {
			t.Errorf("%q -> %q: the diff gives back %q and %q", c.a, c.b, old.String(), new.String())
		}
	}
	if _, ok := DiffLines([]byte("a\x00b"), []byte("a")); ok {
		t.Error("a binary text was diffed")
	}
}
