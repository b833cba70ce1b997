package history

import (
	"errors"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

func TestParseAt(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, in string
		want     time.Time
		bad      bool
	}{
		{name: "rfc3339", in: "2026-11-30T06:00:00Z", want: time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)},
		{name: "rfc3339 offset", in: "2026-11-30T07:00:00+01:00", want: time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)},
		{name: "hours", in: "-2h", want: now.Add(-2 * time.Hour)},
		{name: "compound", in: "-1h30m", want: now.Add(-90 * time.Minute)},
		{name: "days", in: "-3d", want: now.Add(-72 * time.Hour)},
		{name: "no sign", in: "2h", bad: true},
		{name: "double minus", in: "--2h", bad: true},
		{name: "junk", in: "yesterday", bad: true},
		{name: "empty", in: "", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAt(tt.in, now)
			if tt.bad {
				if !errors.Is(err, ErrBadRestore) {
					t.Fatalf("got %v, %v; want an error wrapping ErrBadRestore", got, err)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// pv builds a Version of "f" for versionAt tests.
func pv(author byte, seq uint64, clock uint64, timeMs int64, kind entry.Kind, hash byte, supersedes ...*Version) Version {
	sup := make([]Version, len(supersedes))
	for i, s := range supersedes {
		sup[i] = *s
	}
	return at("f", author, seq, clock, timeMs, kind, hash, sup...)
}

func TestAt(t *testing.T) {
	v1 := pv(1, 1, 1, 100, entry.KindFile, 1)
	v2 := pv(1, 2, 2, 200, entry.KindFile, 2, &v1)
	del := pv(1, 3, 3, 300, entry.KindDeletion, 0, &v2)
	v4 := pv(1, 4, 4, 400, entry.KindFile, 4, &del)
	// A device with a slow clock edits on top of v2: its time claims
	// 150, before v2's 200.
	skew := pv(2, 1, 3, 150, entry.KindFile, 5, &v2)
	// Two concurrent edits of v1, both before 250; the later entry wins.
	c1 := pv(1, 2, 2, 210, entry.KindFile, 6, &v1)
	c2 := pv(2, 2, 2, 220, entry.KindFile, 7, &v1)
	chain := []Version{v4, del, v2, v1}
	tests := []struct {
		name string
		pvs  []Version
		at   int64
		want *Version // nil: absent
	}{
		{name: "before the first version", pvs: chain, at: 99, want: nil},
		{name: "at the first version", pvs: chain, at: 100, want: &v1},
		{name: "between", pvs: chain, at: 199, want: &v1},
		{name: "second", pvs: chain, at: 250, want: &v2},
		{name: "deleted then", pvs: chain, at: 300, want: nil},
		{name: "after re-creation", pvs: chain, at: 1000, want: &v4},
		{name: "skewed child pulls in its parent", pvs: []Version{v1, v2, skew}, at: 160, want: &skew},
		{name: "concurrent heads: the winner", pvs: []Version{v1, c1, c2}, at: 250, want: &c2},
		{name: "one of two concurrent edits written yet", pvs: []Version{v1, c1, c2}, at: 215, want: &c1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := At(tt.pvs, tt.at)
			switch {
			case tt.want == nil && ok:
				t.Fatalf("got %v, want absent", got.ID)
			case tt.want != nil && !ok:
				t.Fatalf("got absent, want %v", tt.want.ID)
			case tt.want != nil && got.ID != tt.want.ID:
				t.Fatalf("got %v, want %v", got.ID, tt.want.ID)
			}
		})
	}
}

func TestMatchID(t *testing.T) {
	id := entry.VersionID{Author: keys.DeviceID{7, 7, 7}, Seq: 12, Index: 3}
	tests := []struct {
		in   string
		want bool
	}{
		{IDString(id), true},
		{id.Author.String() + "/12/3", true},
		{id.Author.Short() + "/12/4", false},
		{id.Author.Short() + "/13/3", false},
		{"nobody/12/3", false},
		{id.Author.Short() + "/12", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := MatchID(tt.in, id); got != tt.want {
			t.Errorf("MatchID(%q): got %v, want %v", tt.in, got, tt.want)
		}
	}
}

// FuzzParseAt checks ParseAt never panics, and a relative time is never
// after now.
func FuzzParseAt(f *testing.F) {
	for _, s := range []string{"-2h", "-3d", "-1.5d", "2026-11-30T06:00:00Z", "-", "-d", "--1h", "-9999999999999d"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAt(s, now)
		if err == nil && len(s) > 0 && s[0] == '-' && got.After(now) {
			t.Fatalf("ParseAt(%q) = %v, after now %v", s, got, now)
		}
	})
}
