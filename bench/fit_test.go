package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
)

func TestFit(t *testing.T) {
	const gib = int64(1 << 30)
	tests := []struct {
		name        string
		keep, cap   int64
		want, step  int64
		got         int64
		reduced     string // a substring of the recorded reduction; "" for none
		errContains string
	}{
		{name: "fits", keep: -1, want: 1 << 20, step: 1 << 20, got: 1 << 20},
		{name: "capped for time", keep: -1, cap: gib + gib/2, want: 4 * gib, step: gib / 4, got: gib + gib/2, reduced: "capped by --max-gib"},
		{name: "cap above want", keep: -1, cap: 8 * gib, want: 1 << 20, step: 1 << 20, got: 1 << 20},
		{name: "want below a step", keep: -1, want: 39 << 20, step: 256 << 20, got: 39 << 20},
		{name: "disk too small", keep: 1 << 62, want: 1 << 20, step: 1 << 20, errContains: "not even 1 MiB fits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &Config{KeepFree: tt.keep, MaxData: tt.cap}
			rc := newRunCtx(context.Background(), cfg, "B0", 0, t.TempDir())
			got, err := rc.fit("file", tt.want, 1, tt.step)
			if tt.errContains != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errContains) {
					t.Fatalf("got error %v, want one containing %q", err, tt.errContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.got {
				t.Errorf("got %d bytes, want %d", got, tt.got)
			}
			switch {
			case tt.reduced == "" && len(rc.reduced) != 0:
				t.Errorf("got reduction %q, want none", rc.reduced)
			case tt.reduced != "" && (len(rc.reduced) != 1 || !strings.Contains(rc.reduced[0], tt.reduced)):
				t.Errorf("got reductions %q, want one containing %q", rc.reduced, tt.reduced)
			}
		})
	}
}

func TestMixedVaultScaled(t *testing.T) {
	v := mixedVault{notes: 20000, images: 3000, imageSize: 2 << 20, archives: 64, archiveSize: 64 << 20}
	tests := []struct {
		f    float64
		want mixedVault
	}{
		{1, v},
		{1.5, v},
		{0.5, mixedVault{notes: 10000, images: 1500, imageSize: 2 << 20, archives: 32, archiveSize: 64 << 20}},
		{0.0001, mixedVault{notes: 2, images: 1, imageSize: 2 << 20, archives: 1, archiveSize: 64 << 20}},
	}
	for _, tt := range tests {
		if got := v.scaled(tt.f); got != tt.want {
			t.Errorf("scaled(%v): got %+v, want %+v", tt.f, got, tt.want)
		}
	}
}

func TestProfileArgs(t *testing.T) {
	rc := newRunCtx(context.Background(), &Config{}, "B3-relay", 1, t.TempDir())
	if got := rc.profileArgs("a"); got != nil {
		t.Errorf("without a profile directory: got %q, want none", got)
	}
	rc.cfg.ProfileDir = "/p"
	for i, want := range []string{"B3-relay-run2-relay-1.pprof", "B3-relay-run2-a-2.pprof"} {
		proc := []string{"relay", "a"}[i]
		got := rc.profileArgs(proc)
		if len(got) != 2 || got[0] != "--cpuprofile" || got[1] != filepath.Join("/p", want) {
			t.Errorf("launch %d: got %q, want --cpuprofile %s", i+1, got, filepath.Join("/p", want))
		}
	}
	rc.run = -1
	if got := rc.profileArgs("relay"); got[1] != "/p/B3-relay-fsync-relay-3.pprof" {
		t.Errorf("strace pass: got %q, want the fsync run's name", got[1])
	}
}

func TestStatusPoll(t *testing.T) {
	tests := []struct {
		files int
		poll  time.Duration
		want  time.Duration
	}{
		{0, 20 * time.Millisecond, 20 * time.Millisecond},
		{2000, 20 * time.Millisecond, 20 * time.Millisecond},
		{23000, 20 * time.Millisecond, 46 * time.Millisecond},
		{100000, 5 * time.Millisecond, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		st := api.Status{Folders: []api.FolderStatus{{Files: tt.files}}}
		if got := statusPoll(st, tt.poll); got != tt.want {
			t.Errorf("statusPoll(%d files, %s): got %s, want %s", tt.files, tt.poll, got, tt.want)
		}
	}
}

// TestMaxFileBytes: B4 now runs at the full 20 GiB (a large file's version
// lists pieces, so no frame bounds it).
func TestMaxFileBytes(t *testing.T) {
	got := maxFileBytes()
	limit := int64(entry.MaxFileChunks) * chunk.AvgSize
	if got <= 0 || got > limit*7/8 || got%(1<<30) != 0 {
		t.Errorf("maxFileBytes: got %d, want whole GiB, at most 7/8 of %d", got, limit)
	}
	if got < 20<<30 {
		t.Errorf("maxFileBytes: got %d, want at least B4's 20 GiB", got)
	}
}
