package protocol

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/weftsync/weft/protocol/keys"
)

func TestConflictName(t *testing.T) {
	short := dev(2).Short()
	loser := fileV(2, 1, 1, 0, "x") // mtime 2026-11-30 05:46:57 UTC
	if want := "9xCm2jWj"; short != want {
		t.Fatalf("dev(2).Short(): got %q, want %q (the names below assume it)", short, want)
	}
	if got, want := hashHex("x"), "2d7116"; got != want {
		t.Fatalf("content hash of %q: got %s, want %s (the names below assume it)", "x", got, want)
	}
	tests := []struct {
		path string
		n    int
		want string
	}{
		{"notes.md", 1, "notes.conflict-9xCm2jWj-20261130-054657-2d7116.md"},
		{"notes.md", 0, "notes.conflict-9xCm2jWj-20261130-054657-2d7116.md"},
		{"notes.md", 2, "notes.conflict-9xCm2jWj-20261130-054657-2d7116-2.md"},
		{"dir/sub/todo.txt", 1, "dir/sub/todo.conflict-9xCm2jWj-20261130-054657-2d7116.txt"},
		{"Makefile", 1, "Makefile.conflict-9xCm2jWj-20261130-054657-2d7116"},
		{".bashrc", 1, ".bashrc.conflict-9xCm2jWj-20261130-054657-2d7116"},
		{"a.tar.gz", 3, "a.tar.conflict-9xCm2jWj-20261130-054657-2d7116-3.gz"},
		{"dir.d/file", 1, "dir.d/file.conflict-9xCm2jWj-20261130-054657-2d7116"},
	}
	for _, tt := range tests {
		if got := ConflictName(tt.path, loser, tt.n); got != tt.want {
			t.Errorf("ConflictName(%q, n=%d): got %q, want %q", tt.path, tt.n, got, tt.want)
		}
	}
}

func TestConflictNameUsesUTCOfRecordedMTime(t *testing.T) {
	v := fileV(2, 1, 1, 0, "x")
	v.MTime = 0 // the epoch, whatever the local zone is
	if got, want := ConflictName("n.md", v, 1), "n.conflict-"+dev(2).Short()+"-19700101-000000-2d7116.md"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestConflictCopiesOneAuthorOneSecond(t *testing.T) {
	// Two losers by one author in one second get distinct names from their
	// contents, with no counter, whichever order they come in.
	l1 := fileV(2, 1, 1, 0, "x")
	l2 := fileV(2, 2, 1, 0, "y")
	l2.MTime += 5e8 // same second
	for _, losers := range [][]Version{{l1, l2}, {l2, l1}} {
		got, _ := conflictCopies("n.md", losers, nil, nil, nil, nil)
		want := map[VersionID]string{l1.ID: "n.conflict-9xCm2jWj-20261130-054657-2d7116.md", l2.ID: "n.conflict-9xCm2jWj-20261130-054657-a1fce4.md"}
		if len(got) != 2 || got[0].Path != want[got[0].Version.ID] || got[1].Path != want[got[1].Version.ID] {
			t.Errorf("got %v, want paths %v", got, want)
		}
	}
}

func TestConflictCopiesNameUse(t *testing.T) {
	l := fileV(2, 1, 1, 0, "x")
	first, second := ConflictName("n.md", l, 1), ConflictName("n.md", l, 2)
	tests := []struct {
		name       string
		use        map[string]NameUse
		wantPath   string
		wantExists bool
	}{
		{"free", nil, first, false},
		{"already holds this content: reused", map[string]NameUse{first: NameHolds}, first, true},
		{"taken by other content: counter", map[string]NameUse{first: NameTaken}, second, false},
		{"taken, and the next one holds it", map[string]NameUse{first: NameTaken, second: NameHolds}, second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := conflictCopies("n.md", []Version{l}, nil, nil, nil, func(name string, _ Version) NameUse { return tt.use[name] })
			if len(got) != 1 || got[0].Path != tt.wantPath || got[0].Exists != tt.wantExists {
				t.Errorf("got %+v, want path %s exists %v", got, tt.wantPath, tt.wantExists)
			}
		})
	}
}

// Conflict names fit 255 bytes (and 4096 for the path), cut at a UTF-8
// boundary, the same on every device; a short name is left alone.
func TestConflictNameFitsLimits(t *testing.T) {
	loser := fileV(2, 1, 1, 0, "x")
	suffix := ".conflict-9xCm2jWj-20261130-054657-2d7116"
	long := strings.Repeat("a", 246) + ".md" // 249 bytes: a fine name, too long with the suffix
	got := ConflictName("notes/"+long, loser, 1)
	if want := "notes/" + strings.Repeat("a", 255-len(suffix)-3) + suffix + ".md"; got != want {
		t.Fatalf("long name: got %q (%d bytes), want %q", got, len(got), want)
	}
	// Two-byte characters are never split.
	accented := strings.Repeat("é", 120) + ".md"
	got = ConflictName(accented, loser, 2)
	if len(got) > 255 || !utf8.ValidString(got) || !strings.HasSuffix(got, suffix+"-2.md") {
		t.Fatalf("accented name: got %q (%d bytes, valid UTF-8 %v)", got, len(got), utf8.ValidString(got))
	}
	// An extension too long to keep is cut as part of the stem.
	got = ConflictName("x."+strings.Repeat("e", 240), loser, 1)
	if len(got) != 255 || !strings.HasSuffix(got, suffix) || !strings.HasPrefix(got, "x.eee") {
		t.Fatalf("long extension: got %q (%d bytes)", got, len(got))
	}
	// The path limit too.
	dir := strings.Repeat("d/", 2000) // 4000 bytes
	got = ConflictName(dir+"note.md", loser, 1)
	if len(got) > 4096 || !strings.HasPrefix(got, dir) || !strings.HasSuffix(got, suffix+".md") {
		t.Fatalf("deep path: %d bytes, %q", len(got), got[len(dir):])
	}
}

// TestParseConflictName: every name ConflictName makes reads back to its
// path, author and time; other names do not parse.
func TestParseConflictName(t *testing.T) {
	author := keys.DeviceID{9, 8, 7}
	mtime := time.Date(2026, 11, 30, 5, 46, 57, 0, time.UTC)
	loser := Version{ID: VersionID{Author: author, Seq: 1}, MTime: mtime.UnixNano() + 123, ContentHash: [32]byte{0x1a, 0x2b, 0x3c}}
	for _, path := range []string{"notes/todo.md", "Makefile", ".bashrc", "a.tar.gz", "dir.with.dots/file", "ü/é.txt"} {
		for _, n := range []int{1, 2, 11} {
			name := ConflictName(path, loser, n)
			o, ok := ParseConflictName(name)
			if !ok || o.Of != path || o.Author != author.Short() || !o.MTime.Equal(mtime) {
				t.Errorf("%s (n %d) -> %s -> %+v, %v; want %s by %s at %v", path, n, name, o, ok, path, author.Short(), mtime)
			}
		}
	}
	// A copy of a copy reads as a copy of the first copy.
	first := ConflictName("a.md", loser, 1)
	if o, ok := ParseConflictName(ConflictName(first, loser, 1)); !ok || o.Of != first {
		t.Errorf("copy of a copy: %+v, %v; want of %s", o, ok, first)
	}
	// A shortened name cannot say what it is a copy of.
	long := strings.Repeat("x", 300) + ".md"
	if o, ok := ParseConflictName(ConflictName(long, loser, 1)); !ok || o.Of != "" || o.Author != author.Short() {
		t.Errorf("a shortened name: %+v, %v; want no path, the author", o, ok)
	}
	for _, not := range []string{"a.md", "a.conflict.md", ".conflict-AbCdEfGh-20261130-054657-1a2b3c.md", "a.conflict-AbCdEfGh-2026113-054657-1a2b3c.md",
		"a.conflict-AbCdEfGh-20261130-054657-zzzzzz.md", "a.conflict-AbCdEfGh-20261130-054657-1a2b3cx.md", "a.conflict-AbCdEfGh-20261130-054657-1a2b3c-.md"} {
		if o, ok := ParseConflictName(not); ok {
			t.Errorf("%s parsed as %+v", not, o)
		}
	}
}

// FuzzParseConflictName: any synced path parses or not without panicking,
// and a parsed origin names a path in the same directory.
func FuzzParseConflictName(f *testing.F) {
	f.Add("notes/todo.conflict-AbCdEfGh-20261130-054657-1a2b3c.md")
	f.Add("a.tar.conflict-AbCdEfGh-20261130-054657-1a2b3c-2.gz")
	f.Add(".conflict-")
	f.Add("x.conflict-a-b-c-d")
	f.Add("notes/todo.conflict-Zoë_s_phone-AbCdEfGh-20261130-054657-1a2b3c.md")
	f.Fuzz(func(t *testing.T, p string) {
		o, ok := ParseConflictName(p)
		if !ok || o.Of == "" {
			return
		}
		dir := ""
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			dir = p[:i+1]
		}
		if !strings.HasPrefix(o.Of, dir) || strings.Contains(o.Of[len(dir):], "/") {
			t.Fatalf("%q: origin %q is not beside it", p, o.Of)
		}
	})
}

// TestConflictNameCarriesTheAuthorsName (issue 18): a loser whose entry
// named its author gets a copy named for the device, in a form every file
// system takes, and the name reads back; a digit-only short ID still reads.
func TestConflictNameCarriesTheAuthorsName(t *testing.T) {
	loser := fileV(2, 1, 1, 0, "x")
	for _, c := range []struct{ name, tag string }{
		{"laptop", "laptop"},
		{"Zoë's phone", "Zoë_s_phone"},
		{"Zoe\u0308's phone", "Zoë_s_phone"}, // NFD in, NFC out: one tag for one name
		{"  work/PC -- 2 ", "work_PC_2"},
		{"a.b-c", "a_b_c"},
		{"机器一号", "机器一号"},
		{"!!!", ""},
		{strings.Repeat("é", 30), strings.Repeat("é", 12)},
		{strings.Repeat("a", 23) + " b", strings.Repeat("a", 23)},
	} {
		loser.AuthorName = c.name
		got := ConflictName("notes/todo.md", loser, 1)
		want := "notes/todo.conflict-9xCm2jWj-20261130-054657-2d7116.md"
		if c.tag != "" {
			want = "notes/todo.conflict-" + c.tag + "-9xCm2jWj-20261130-054657-2d7116.md"
		}
		if got != want {
			t.Errorf("author %q: got %q, want %q", c.name, got, want)
			continue
		}
		o, ok := ParseConflictName(got)
		if !ok || o.Of != "notes/todo.md" || o.Name != c.tag || o.Author != "9xCm2jWj" {
			t.Errorf("author %q: %s parsed as %+v, %v", c.name, got, o, ok)
		}
	}
	// A short ID of digits only looks like a date; both forms still read.
	for _, name := range []string{"n.conflict-12345678-20261130-054657-2d7116.md", "n.conflict-phone-12345678-20261130-054657-2d7116.md"} {
		o, ok := ParseConflictName(name)
		if !ok || o.Author != "12345678" || o.Of != "n.md" {
			t.Errorf("%s parsed as %+v, %v", name, o, ok)
		}
	}
	for _, not := range []string{"a.conflict--AbCdEfGh-20261130-054657-1a2b3c.md", "a.conflict-x-y-AbCdEfGh-20261130-054657-1a2b3c.md"} {
		if o, ok := ParseConflictName(not); ok {
			t.Errorf("%s parsed as %+v", not, o)
		}
	}
}
