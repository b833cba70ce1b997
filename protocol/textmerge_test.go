package protocol

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestMerge3(t *testing.T) {
	const base = "a\nb\nc\nd\ne\n"
	tests := []struct {
		name      string
		base, x   string
		y         string
		want      string
		wantClean bool
	}{
		{"no change", base, base, base, base, true},
		{"one side", base, "a\nB\nc\nd\ne\n", base, "a\nB\nc\nd\ne\n", true},
		{"other side", base, base, "a\nb\nc\nD\ne\n", "a\nb\nc\nD\ne\n", true},
		{"different lines", base, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n", "A\nb\nc\nd\nE\n", true},
		{"same change both sides", base, "a\nb\nX\nd\ne\n", "a\nb\nX\nd\ne\n", "a\nb\nX\nd\ne\n", true},
		{"same change plus another", base, "a\nb\nX\nd\ne\n", "A\nb\nX\nd\ne\n", "A\nb\nX\nd\ne\n", true},
		{"same line differently", base, "a\nb\nX\nd\ne\n", "a\nb\nY\nd\ne\n", "", false},
		{"adjacent lines conflict", base, "a\nB\nc\nd\ne\n", "a\nb\nC\nd\ne\n", "", false},
		{"insertions apart", base, "a\nnew1\nb\nc\nd\ne\n", "a\nb\nc\nd\nnew2\ne\n", "a\nnew1\nb\nc\nd\nnew2\ne\n", true},
		{"different insertions at one place", base, "a\nb\nx\nc\nd\ne\n", "a\nb\ny\nc\nd\ne\n", "", false},
		{"delete vs edit elsewhere", base, "a\nc\nd\ne\n", "a\nb\nc\nd\nE\n", "a\nc\nd\nE\n", true},
		{"delete vs edit of the same line", base, "a\nc\nd\ne\n", "a\nB\nc\nd\ne\n", "", false},
		{"both delete one line", base, "a\nc\nd\ne\n", "a\nc\nd\ne\n", "a\nc\nd\ne\n", true},
		{"append at end both differently", "a\n", "a\nx\n", "a\ny\n", "a\nx\ny\n", true},
		{"appends in byte order, not side order", "a\n", "a\nz\nz2\n", "a\ny\n", "a\ny\nz\nz2\n", true},
		{"one append begins the other", "a\n", "a\nx\n", "a\nx\ny\n", "a\nx\ny\n", true},
		{"append without a final newline goes last", "a\n", "a\nx", "a\ny\n", "a\ny\nx", true},
		{"two appends without a final newline", "a\n", "a\nx", "a\ny", "", false},
		{"append and an edit of the last line", "a\nb\n", "a\nB\nx\n", "a\nb\ny\n", "", false},
		{"append after a last line without newline", "a", "a\nx\n", "a\ny\n", "", false},
		{"appends and an edit apart", "a\nb\nc\n", "A\nb\nc\nx\n", "a\nb\nc\ny\n", "A\nb\nc\nx\ny\n", true},
		{"missing final newline", "a\nm\nb", "A\nm\nb", "a\nm\nb\n", "A\nm\nb\n", true},
		{"empty base, both add", "", "x\n", "y\n", "", false},
		{"empty base, one adds", "", "x\n", "", "x\n", true},
		{"everything deleted vs untouched", base, "", base, "", true},
		{"crlf lines", "a\r\nb\r\nc\r\n", "A\r\nb\r\nc\r\n", "a\r\nb\r\nC\r\n", "A\r\nb\r\nC\r\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, swap := range []bool{false, true} {
				x, y := tt.x, tt.y
				if swap {
					x, y = y, x
				}
				got, clean, err := Merge3([]byte(tt.base), []byte(x), []byte(y))
				if err != nil {
					t.Fatalf("Merge3 (swapped %v): %v", swap, err)
				}
				if clean != tt.wantClean {
					t.Errorf("clean (swapped %v): got %v, want %v", swap, clean, tt.wantClean)
				}
				if clean && string(got) != tt.want {
					t.Errorf("merged (swapped %v): got %q, want %q", swap, got, tt.want)
				}
				if !clean && got != nil {
					t.Errorf("merged when not clean: got %q, want nil", got)
				}
			}
		})
	}
}

func TestMerge3Refuses(t *testing.T) {
	big := bytes.Repeat([]byte("x"), MaxMergeBytes+1)
	manyLines := []byte(strings.Repeat("\n", MaxMergeLines+1))
	var rewrite, rewrite2 strings.Builder
	for i := range MaxMergeEdits {
		rewrite.WriteString(strings.Repeat("r", i%7+1) + "\n")
		rewrite2.WriteString(strings.Repeat("s", i%5+1) + "\n")
	}
	tests := []struct {
		name       string
		base, a, b []byte
		want       error
	}{
		{"too many bytes", []byte("x"), big, []byte("y"), ErrMergeTooLarge},
		{"too many lines", []byte("x"), manyLines, []byte("y"), ErrMergeTooLarge},
		{"too many edits", []byte("base\n"), []byte(rewrite.String()), []byte(rewrite2.String()), ErrMergeTooLarge},
		{"NUL byte", []byte("x"), []byte("a\x00"), []byte("y"), ErrNotText},
		{"invalid UTF-8", []byte("\xff"), []byte("a"), []byte("y"), ErrNotText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, clean, err := Merge3(tt.base, tt.a, tt.b)
			if !errors.Is(err, tt.want) || clean {
				t.Errorf("got clean=%v err=%v, want %v", clean, err, tt.want)
			}
		})
	}
}

func TestIsText(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", true}, {"hello\n", true}, {"héllo wörld ✓\n", true}, {"tab\tand\r\n", true},
		{"nul\x00", false}, {"\xff\xfe", false}, {"\xe2\x82", false},
	}
	for _, tt := range tests {
		if got := IsText([]byte(tt.in)); got != tt.want {
			t.Errorf("IsText(%q): got %v, want %v", tt.in, got, tt.want)
		}
	}
}

// lcsLen is the textbook dynamic-programming LCS length, to check Myers.
func lcsLen(x, y []int) int {
	prev := make([]int, len(y)+1)
	for i := range x {
		cur := make([]int, len(y)+1)
		for j := range y {
			if x[i] == y[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev = cur
	}
	return prev[len(y)]
}

// TestMatchLinesIsLCS: the matching is a common subsequence of maximal
// length.
func TestMatchLinesIsLCS(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := rapid.SliceOfN(rapid.IntRange(0, 4), 0, 30).Draw(t, "x")
		y := rapid.SliceOfN(rapid.IntRange(0, 4), 0, 30).Draw(t, "y")
		m, ok := matchLines(x, y, 1000)
		if !ok {
			t.Fatalf("matchLines refused within budget")
		}
		n, last := 0, -1
		for i, j := range m {
			if j < 0 {
				continue
			}
			if j <= last || x[i] != y[j] {
				t.Fatalf("match %d->%d: not an increasing match of equal lines", i, j)
			}
			last = j
			n++
		}
		if want := lcsLen(x, y); n != want {
			t.Fatalf("matched %d lines, want LCS length %d", n, want)
		}
	})
}

func genText(t *rapid.T, label string) []byte {
	lines := rapid.SliceOfN(rapid.SampledFrom([]string{"a\n", "b\n", "c\n", "d\n", "e", "\n"}), 0, 12).Draw(t, label)
	return []byte(strings.Join(lines, ""))
}

// edited derives a side from base by random line edits, so sides share
// history the way real edits do.
func edited(t *rapid.T, base []byte, label string) []byte {
	lines := splitLines(base)
	var out [][]byte
	for i, l := range lines {
		switch rapid.IntRange(0, 5).Draw(t, label+" op") {
		case 0: // delete
		case 1:
			out = append(out, []byte(label+"\n"))
		case 2:
			out = append(out, l, []byte(label+string(rune('0'+i%10))+"\n"))
		default:
			out = append(out, l)
		}
	}
	return bytes.Join(out, nil)
}

// TestMerge3Symmetric: merge(base, a, b) and merge(base, b, a) agree on
// cleanness and, when clean, on the result; a clean result keeps each
// side's change when the other side left that text alone.
func TestMerge3Symmetric(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := genText(t, "base")
		a, b := edited(t, base, "A"), edited(t, base, "B")
		if rapid.Bool().Draw(t, "unrelated") {
			b = genText(t, "b")
		}
		m1, c1, err1 := Merge3(base, a, b)
		m2, c2, err2 := Merge3(base, b, a)
		if err1 != nil || err2 != nil {
			t.Fatalf("errors: %v, %v", err1, err2)
		}
		if c1 != c2 || !bytes.Equal(m1, m2) {
			t.Fatalf("asymmetric: clean %v/%v, %q vs %q", c1, c2, m1, m2)
		}
		// Merging with an unchanged side gives the other side.
		if m, c, _ := Merge3(base, a, base); !c || !bytes.Equal(m, a) {
			t.Fatalf("merge with unchanged side: got %q clean=%v, want %q", m, c, a)
		}
		if m, c, _ := Merge3(base, a, a); !c || !bytes.Equal(m, a) {
			t.Fatalf("merge of identical sides: got %q clean=%v, want %q", m, c, a)
		}
	})
}

// FuzzMerge3: never panics; clean merges are symmetric.
func FuzzMerge3(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("A\nb\nc\n"), []byte("a\nb\nC\n"))
	f.Add([]byte(""), []byte("x"), []byte("y"))
	f.Add([]byte("a\nb"), []byte("a\n"), []byte("b"))
	f.Fuzz(func(t *testing.T, base, a, b []byte) {
		m1, c1, err1 := Merge3(base, a, b)
		m2, c2, err2 := Merge3(base, b, a)
		if (err1 == nil) != (err2 == nil) || c1 != c2 || !bytes.Equal(m1, m2) {
			t.Fatalf("asymmetric: %v/%v clean %v/%v, %q vs %q", err1, err2, c1, c2, m1, m2)
		}
	})
}
