package protocol

import (
	"errors"
	"testing"
)

func TestWinnerOrder(t *testing.T) {
	base := fileV(1, 1, 5, 10, "x")
	tests := []struct {
		name string
		a, b Version
		want int
	}{
		{"later time wins", fileV(1, 1, 5, 11, "x"), fileV(2, 1, 9, 10, "y"), +1},
		{"earlier time loses", fileV(2, 1, 9, 10, "y"), fileV(1, 1, 5, 11, "x"), -1},
		{"same time: higher clock wins", fileV(1, 1, 6, 10, "x"), fileV(2, 1, 5, 10, "y"), +1},
		{"same time and clock: greater author wins", fileV(2, 1, 5, 10, "x"), fileV(1, 1, 5, 10, "y"), +1},
		// A device 48 h slow records mtimes 48 h early; its entry time
		// (kept in step with its peers) is what counts.
		{"mtime plays no part", skewedMTime(fileV(1, 1, 5, 11, "x"), -48*3600), fileV(2, 1, 9, 10, "y"), +1},
		{"a fast mtime does not win", skewedMTime(fileV(2, 1, 9, 10, "y"), +48*3600), fileV(1, 1, 5, 11, "x"), -1},
		{"then higher seq", fileV(1, 2, 5, 10, "x"), fileV(1, 1, 5, 10, "y"), +1},
		{"then higher index", func() Version { v := base; v.ID.Index = 1; return v }(), base, +1},
		{"equal IDs", base, base, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WinnerOrder(tt.a, tt.b); got != tt.want {
				t.Errorf("WinnerOrder: got %d, want %d", got, tt.want)
			}
			if got := WinnerOrder(tt.b, tt.a); got != -tt.want {
				t.Errorf("WinnerOrder reversed: got %d, want %d", got, -tt.want)
			}
		})
	}
}

// skewedMTime moves v's file mtime by sec seconds, as a skewed clock
// would, leaving its entry time alone.
func skewedMTime(v Version, sec int64) Version {
	v.MTime += sec * 1e9
	return v
}

func TestVersionValidate(t *testing.T) {
	ok := fileV(1, 1, 1, 0, "x")
	tests := []struct {
		name    string
		v       Version
		wantErr bool
	}{
		{"file", ok, false},
		{"dir", withKind(ok, KindDir), false},
		{"symlink", withKind(ok, KindSymlink), false},
		{"deletion", withKind(ok, KindDeletion), false},
		{"empty path", func() Version { v := ok; v.Path = ""; return v }(), true},
		{"unknown kind", func() Version { v := ok; v.Kind = 9; return v }(), true},
		{"zero kind", func() Version { v := ok; v.Kind = 0; return v }(), true},
		{"deletion with content", func() Version { v := ok; v.Kind = KindDeletion; return v }(), true},
		{"dir with content", func() Version { v := ok; v.Kind = KindDir; return v }(), true},
		{"supersedes itself", func() Version { v := ok; v.Supersedes = []VersionID{v.ID}; return v }(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.v.Validate()
			if tt.wantErr && !errors.Is(err, ErrInvalidVersion) {
				t.Errorf("got %v, want ErrInvalidVersion", err)
			}
			if !tt.wantErr && err != nil {
				t.Errorf("got %v, want nil", err)
			}
		})
	}
}

func TestVersionIDCompare(t *testing.T) {
	tests := []struct {
		a, b VersionID
		want int
	}{
		{vid(1, 5), vid(2, 1), -1},
		{vid(2, 1), vid(1, 5), +1},
		{vid(1, 1), vid(1, 2), -1},
		{VersionID{Author: dev(1), Seq: 1, Index: 3}, VersionID{Author: dev(1), Seq: 1, Index: 2}, +1},
		{vid(1, 1), vid(1, 1), 0},
	}
	for _, tt := range tests {
		if got := tt.a.Compare(tt.b); got != tt.want {
			t.Errorf("%v.Compare(%v): got %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
