package protocol

import "testing"

func TestConflictName(t *testing.T) {
	short := dev(2).Short()
	loser := fileV(2, 1, 1, 0, "x") // mtime 2026-11-30 05:46:57 UTC
	if want := "9xCm2jWj"; short != want {
		t.Fatalf("dev(2).Short(): got %q, want %q (the names below assume it)", short, want)
	}
	tests := []struct {
		path string
		n    int
		want string
	}{
		{"notes.md", 1, "notes.conflict-9xCm2jWj-20261130-054657.md"},
		{"notes.md", 0, "notes.conflict-9xCm2jWj-20261130-054657.md"},
		{"notes.md", 2, "notes.conflict-9xCm2jWj-20261130-054657-2.md"},
		{"dir/sub/todo.txt", 1, "dir/sub/todo.conflict-9xCm2jWj-20261130-054657.txt"},
		{"Makefile", 1, "Makefile.conflict-9xCm2jWj-20261130-054657"},
		{".bashrc", 1, ".bashrc.conflict-9xCm2jWj-20261130-054657"},
		{"a.tar.gz", 3, "a.tar.conflict-9xCm2jWj-20261130-054657-3.gz"},
		{"dir.d/file", 1, "dir.d/file.conflict-9xCm2jWj-20261130-054657"},
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
	if got, want := ConflictName("n.md", v, 1), "n.conflict-"+dev(2).Short()+"-19700101-000000.md"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestConflictCopiesDoNotCollide(t *testing.T) {
	// Two losers by one author in one second, and the first name taken in
	// the index: the counter makes every name distinct, in loser order.
	l1 := fileV(2, 1, 1, 0, "x")
	l2 := fileV(2, 2, 1, 0, "y")
	l2.MTime += 5e8 // same second
	taken := func(p string) bool { return p == ConflictName("n.md", l1, 1) }
	got := conflictCopies("n.md", []Version{l1, l2}, taken)
	want := []string{ConflictName("n.md", l1, 2), ConflictName("n.md", l1, 3)}
	if len(got) != 2 || got[0].Path != want[0] || got[1].Path != want[1] {
		t.Errorf("got %v, want paths %v", got, want)
	}
}
