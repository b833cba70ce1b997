package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftsync/weft/simulation/detsim"
)

// runRoot runs the weft command tree in-process with args and returns
// standard output and the error.
func runRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestSimEngineCommand runs `weft sim engine` over a few seeds (passing,
// with the JSON summary) and traces one seed twice: the same seed must
// print the same trace and digest.
func TestSimEngineCommand(t *testing.T) {
	js := filepath.Join(t.TempDir(), "engine.json")
	out, err := runRoot(t, "sim", "engine", "--seed", "5", "--seeds", "20", "--json", js)
	if err != nil {
		t.Fatalf("weft sim engine: %v\n%s", err, out)
	}
	if !strings.Contains(out, "seeds failed     0") {
		t.Fatalf("output does not report 0 failed seeds:\n%s", out)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var sum detsim.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.First != 5 || sum.Seeds != 20 || sum.Totals.Entries == 0 {
		t.Fatalf("summary %+v, want seeds 5-24 with entries", sum)
	}

	trace := func() string {
		t.Helper()
		out, err := runRoot(t, "sim", "engine", "--seed", "9", "--seeds", "1", "--trace", "-")
		if err != nil {
			t.Fatalf("tracing seed 9: %v", err)
		}
		return out
	}
	if a, b := trace(), trace(); a != b || !strings.Contains(a, "digest ") {
		t.Fatalf("seed 9 traced twice differs (or has no digest)")
	}
	if _, err := runRoot(t, "sim", "engine", "--seeds", "3", "--trace", "-"); err == nil {
		t.Fatal("--trace with several seeds was accepted")
	}
}
