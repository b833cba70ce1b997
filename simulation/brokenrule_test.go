package simulation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/engine/enginetest"
)

// TestBrokenMergeRuleCaught shows that the end-of-run checks bite: with a
// deliberately broken conflict rule (enginetest.KeepLocal: each
// device keeps whichever concurrent version it already holds) a schedule
// of concurrent edits must fail the convergence check, and the same
// schedule under the real rules must pass it.
func TestBrokenMergeRuleCaught(t *testing.T) {
	cfg := Config{Scenario: "S1", Seed: 11, Devices: 2, Steps: 6, Duration: time.Second,
		Probs: Probs{Concurrent: 1}}

	t.Run("real rules converge", func(t *testing.T) {
		c := cfg
		c.Dir, c.Settle = simDir(t), 60*time.Second
		res, err := Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK() {
			t.Fatalf("got failures %q under the real rules, want none", res.Failures)
		}
		if res.ConflictFiles == 0 {
			t.Fatalf("got no conflict copy from %d concurrent edits, want some: the schedule does not exercise the rule", c.Steps)
		}
	})

	t.Run("broken rule is caught", func(t *testing.T) {
		c := cfg
		c.Dir, c.Settle, c.Rules = simDir(t), 5*time.Second, enginetest.KeepLocal()
		res, err := Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if res.OK() {
			t.Fatal("got a passing run with the broken conflict rule, want the convergence check to fail it")
		}
		found := false
		for _, f := range res.Failures {
			found = found || strings.Contains(f, "did not converge") || strings.Contains(f, "trees differ")
		}
		if !found {
			t.Fatalf("got failures %q, want one from the convergence check", res.Failures)
		}
		t.Logf("caught: %s", res.Failures[0])
	})
}
