package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionFrom checks which source each field of `weft version` comes
// from: the linker's values win, the toolchain's VCS stamps fill what the
// linker left, and a module version from `go install module@v` replaces
// "dev".
func TestVersionFrom(t *testing.T) {
	vcs := &debug.BuildInfo{
		Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tt := range []struct {
		name                string
		bi                  *debug.BuildInfo
		ver, com, dt, mod   string
		wantVer, wantCommit string
		wantDate            string
		wantMod             bool
	}{
		{"plain build, no VCS", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", "unknown", "unknown", "", "dev", "unknown", "unknown", false},
		{"no build info", nil, "dev", "unknown", "unknown", "", "dev", "unknown", "unknown", false},
		{"go build in a checkout", vcs, "dev", "unknown", "unknown", "", "dev", "0123456789abcdef0123456789abcdef01234567", "2026-12-01T10:00:00Z", true},
		{"make build", vcs, "v0.3.0-2-gabc", "fedcba9876543210fedcba9876543210fedcba98", "2026-12-02T03:00:00Z", "false", "v0.3.0-2-gabc", "fedcba9876543210fedcba9876543210fedcba98", "2026-12-02T03:00:00Z", false},
		{"go install module@v", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "dev", "unknown", "unknown", "", "v0.4.0", "unknown", "unknown", false},
	} {
		v := versionFrom(tt.bi, tt.ver, tt.com, tt.dt, tt.mod)
		if v.Version != tt.wantVer || v.Commit != tt.wantCommit || v.Date != tt.wantDate || v.Modified != tt.wantMod || !strings.HasPrefix(v.Go, "go") {
			t.Errorf("%s: got %+v, want version %q commit %q date %q modified %v", tt.name, v, tt.wantVer, tt.wantCommit, tt.wantDate, tt.wantMod)
		}
	}
}

// TestMakeBuildStampsCommit runs `make build` in this checkout and checks
// that the binary's `weft version --json` names the commit checked out,
// its date, and whether the tree has uncommitted changes, as git reports
// them. It needs make and a git checkout; without either it is skipped,
// saying which.
func TestMakeBuildStampsCommit(t *testing.T) {
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			t.Skipf("git %s: %v (not a git checkout?)", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	head := git("rev-parse", "HEAD")
	when := git("log", "-1", "--format=%cI")
	dirty := git("status", "--porcelain") != ""

	bin := filepath.Join(t.TempDir(), "weft")
	cmd := exec.Command("make", "-C", root, "build", "OUT="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("weft version --json: %v", err)
	}
	var v versionInfo
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("weft version --json: %v\n%s", err, out)
	}
	if v.Commit != head || v.Date != when || v.Modified != dirty || v.Version == "dev" || v.Version == "" {
		t.Fatalf("weft version --json of a make build: got %+v; want commit %s, date %s, modified %v and a git-described version", v, head, when, dirty)
	}
}
