package protocol

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

// TestMergeDriverGolden runs testdata/merge/*.txtar: each names a path
// (a "path:" line in its comment) and holds base, a and b, and want (the
// merge) or no want (a conflict). Every case is also merged with the sides
// swapped, which must give the same result.
func TestMergeDriverGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/merge/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden merges: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ar, err := txtar.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var p string
			for _, line := range strings.Split(string(ar.Comment), "\n") {
				if v, ok := strings.CutPrefix(line, "path: "); ok {
					p = v
				}
			}
			parts := map[string][]byte{}
			for _, af := range ar.Files {
				parts[af.Name] = af.Data
			}
			if p == "" || parts["base"] == nil || parts["a"] == nil || parts["b"] == nil {
				t.Fatal("want a path: line and base, a, b")
			}
			want, wantClean := parts["want"]
			for _, swap := range []bool{false, true} {
				a, b := parts["a"], parts["b"]
				if swap {
					a, b = b, a
				}
				got, clean, err := MergeFile(p, parts["base"], [][]byte{a, b})
				if err != nil {
					t.Fatalf("swap %v: %v", swap, err)
				}
				if clean != wantClean {
					t.Fatalf("swap %v: clean %v, want %v; got\n%s", swap, clean, wantClean, got)
				}
				if clean && string(got) != string(want) {
					t.Errorf("swap %v: got\n%s\nwant\n%s", swap, got, want)
				}
			}
		})
	}
}

// TestMergeDriverChoice: the driver follows the extension, in any case,
// and other files merge by lines.
func TestMergeDriverChoice(t *testing.T) {
	base := []byte("{\n  \"a\": 1,\n  \"b\": 2\n}\n")
	a := []byte("{\n  \"a\": 10,\n  \"b\": 2\n}\n")
	b := []byte("{\n  \"a\": 1,\n  \"b\": 20\n}\n")
	for _, p := range []string{"x.json", "X.JSON", "dir/y.Json"} {
		if got, clean, err := MergeFile(p, base, [][]byte{a, b}); err != nil || !clean || !json.Valid(got) {
			t.Errorf("%s: clean %v, %v: %s", p, clean, err, got)
		}
	}
	if _, clean, err := MergeFile("x.txt", base, [][]byte{a, b}); err != nil || clean {
		t.Errorf("x.txt: adjacent lines merged as JSON (clean %v, %v)", clean, err)
	}
	// Three sides: pairwise, like MergeAll.
	c := []byte("{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}\n")
	got, clean, err := MergeFile("x.json", base, [][]byte{a, b, c})
	if err != nil || !clean || string(got) != "{\n  \"a\": 10,\n  \"b\": 20,\n  \"c\": 3\n}\n" {
		t.Errorf("three sides: %v %v\n%s", clean, err, got)
	}
}

// FuzzMergeJSON: the JSON driver never fails on any input, gives the same
// answer with the sides swapped, and a clean merge of three JSON documents
// is JSON.
func FuzzMergeJSON(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":2}`), []byte(`{"a":3,"b":2}`), []byte(`{"a":1,"b":4}`))
	f.Add([]byte(`{"nodes":[{"id":"x"}]}`), []byte(`{"nodes":[{"id":"x","y":1}]}`), []byte(`{"nodes":[{"id":"x"},{"id":"z"}]}`))
	f.Add([]byte("[1,\n2]\n"), []byte("[0,\n2]\n"), []byte("[1,\n3]\n"))
	f.Add([]byte(`{"a":{"b":{}}}`), []byte(`{"a":{"b":{"c":1}}}`), []byte(`{"a":{"b":{"d":2}},"a2":[]}`))
	f.Add([]byte(`{"a":1,"a":2}`), []byte(`{"a":1}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, base, a, b []byte) {
		for _, p := range []string{"f.json", "f.canvas"} {
			x, cx, ex := MergeFile(p, base, [][]byte{a, b})
			y, cy, ey := MergeFile(p, base, [][]byte{b, a})
			if cx != cy || (ex == nil) != (ey == nil) || string(x) != string(y) {
				t.Fatalf("%s: not symmetric: %v %v %q / %v %v %q", p, cx, ex, x, cy, ey, y)
			}
			if cx && json.Valid(base) && json.Valid(a) && json.Valid(b) && !json.Valid(x) {
				t.Fatalf("%s: merged JSON is not JSON: %q", p, x)
			}
			if z, cz, ez := MergeFile(p, base, [][]byte{a, a}); ez == nil && (!cz || string(z) != string(a)) {
				t.Fatalf("%s: a merge of a with itself is not a: %v %q", p, cz, z)
			}
		}
	})
}

// FuzzMergeFrontmatter: the frontmatter driver never fails on any input
// and gives the same answer with the sides swapped.
func FuzzMergeFrontmatter(f *testing.F) {
	f.Add([]byte("---\na: 1\nb: 2\n---\nbody\n"), []byte("---\na: 3\nb: 2\n---\nbody\n"), []byte("---\na: 1\nb: 4\n---\nbody\n"))
	f.Add([]byte("---\n---\n"), []byte("---\nx: 1\n---\n"), []byte("---\n# c\ny: 2\n---"))
	f.Add([]byte("---\nt:\n- a\n---\n"), []byte("---\nt:\n- a\n- b\n---\n"), []byte("---\n t: x\n---\n"))
	f.Fuzz(func(t *testing.T, base, a, b []byte) {
		x, cx, ex := MergeFile("n.md", base, [][]byte{a, b})
		y, cy, ey := MergeFile("n.md", base, [][]byte{b, a})
		if cx != cy || (ex == nil) != (ey == nil) || string(x) != string(y) {
			t.Fatalf("not symmetric: %v %v %q / %v %v %q", cx, ex, x, cy, ey, y)
		}
		if z, cz, ez := MergeFile("n.md", base, [][]byte{a, a}); ez == nil && (!cz || string(z) != string(a)) {
			t.Fatalf("a merge of a with itself is not a: %v %q", cz, z)
		}
	})
}

// TestJSONDepthBounded: a document nested deeper than maxJSONDepth is
// merged by lines (the keyed merge would re-read each level below it),
// and the depth count skips brackets inside strings.
func TestJSONDepthBounded(t *testing.T) {
	if d := jsonDepth([]byte(`{"a":["[[{",{"b":"\"]"}]}`)); d != 3 {
		t.Errorf("depth %d, want 3", d)
	}
	deep := func(key string) []byte {
		return []byte(strings.Repeat(`{"x":`, maxJSONDepth+1) + `{"` + key + `":1}` + strings.Repeat("}", maxJSONDepth+1) + "\n")
	}
	if _, _, err := mergeJSON(deep("a"), deep("b"), deep("a"), false); err != errNotJSON {
		t.Errorf("too deep: %v, want errNotJSON (merged by lines)", err)
	}
	if got, clean, err := MergeFile("d.json", deep("a"), [][]byte{deep("b"), deep("a")}); err != nil || !clean || string(got) != string(deep("b")) {
		t.Errorf("too deep, by lines: %v %v %q", clean, err, got)
	}
}
