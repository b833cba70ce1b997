package protocol

import (
	"fmt"
	"strings"
	"testing"
)

// mergeInputs builds a base of n lines and two sides that each change
// edits lines spread evenly through it (a at even positions, b at odd).
func mergeInputs(n, edits int) (base, a, b []byte) {
	var bb, ab, bbb strings.Builder
	step := max(n/edits, 2)
	for i := range n {
		line := fmt.Sprintf("line %d of the note, some words to make it typical\n", i)
		bb.WriteString(line)
		switch {
		case i%step == 0 && (i/step)%2 == 0:
			ab.WriteString("changed by a: " + line)
			bbb.WriteString(line)
		case i%step == 0:
			ab.WriteString(line)
			bbb.WriteString("changed by b: " + line)
		default:
			ab.WriteString(line)
			bbb.WriteString(line)
		}
	}
	return []byte(bb.String()), []byte(ab.String()), []byte(bbb.String())
}

func BenchmarkMerge3(b *testing.B) {
	for _, c := range []struct{ lines, edits int }{{1000, 10}, {10_000, 100}, {60_000, 1800}} {
		base, x, y := mergeInputs(c.lines, c.edits)
		b.Run(fmt.Sprintf("lines=%d/edits=%d", c.lines, c.edits), func(b *testing.B) {
			b.SetBytes(int64(len(base)))
			for b.Loop() {
				if _, clean, err := Merge3(base, x, y); err != nil || !clean {
					b.Fatalf("clean=%v err=%v", clean, err)
				}
			}
		})
	}
}
