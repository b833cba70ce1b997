package detsim

import (
	"bytes"
	"strings"
	"testing"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine/enginetest"
)

// seeds is how many seeds make test runs under the product's rules.
const seeds = 1000

// TestSeedsConverge runs seeds 1..1000 under the product's rules: every one
// must pass every check, and together they must exercise the rules (conflict
// copies, clean merges, history waits, adopted heads, restarts, mass-delete
// holds and the users' accepts and rejects of them, saves racing an apply
// and the apply-race rule taking them), or the checks prove nothing.
func TestSeedsConverge(t *testing.T) {
	sum := RunSeeds(Config{}, 1, seeds)
	for i, r := range sum.Failed {
		if i == 5 {
			break
		}
		t.Errorf("seed %d failed (replay: weft sim engine --seed %d --seeds 1 --trace FILE): %s", r.Seed, r.Seed, strings.Join(r.Failures, "; "))
	}
	tot := sum.Totals
	t.Logf("%d seeds: %d failed, %d entries, %d conflict copies, %d clean merges, %d history waits, %d adopted heads, %d restarts",
		seeds, len(sum.Failed), tot.Entries, tot.Conflicts, tot.Merges, tot.Waits, tot.Adoptions, tot.Restarts)
	t.Logf("mass-delete holds %d (accepted %d, rejected %d); racing saves %d, apply races taken %d",
		tot.Holds, tot.Accepts, tot.Rejects, tot.RacingSaves, tot.ApplyRaces)
	if tot.Conflicts == 0 || tot.Merges == 0 || tot.Waits == 0 || tot.Adoptions == 0 || tot.Restarts == 0 ||
		tot.Holds == 0 || tot.Accepts == 0 || tot.Rejects == 0 || tot.RacingSaves == 0 || tot.ApplyRaces == 0 {
		t.Fatalf("the schedules do not exercise every rule: %+v", tot)
	}
}

// stopSeeds is how many seeds make test runs with StopAnywhere.
const stopSeeds = 1000

// TestSeedsStopAnywhere runs seeds 1..1000 with devices that also stop and
// start between any two operations, holding entries they have not
// applied: a restart must reconcile what the last run left undone
// (engine.Engine.Reopened), and a rule that dropped such a path would
// leave a device behind for good. The default schedules never stop a
// device with work pending, so this is the only tier that checks it.
func TestSeedsStopAnywhere(t *testing.T) {
	sum := RunSeeds(Config{StopAnywhere: true}, 1, stopSeeds)
	for i, r := range sum.Failed {
		if i == 5 {
			break
		}
		t.Errorf("seed %d failed (replay: weft sim engine --stop-anywhere --seed %d --seeds 1 --trace FILE): %s", r.Seed, r.Seed, strings.Join(r.Failures, "; "))
	}
	if sum.Totals.Stops == 0 {
		t.Fatal("no device stopped between operations: the schedules do not exercise the rule")
	}
}

// pinnedSeeds are seeds past the first 1000 that once failed, each under
// the rules of its time, and pass now (docs/simulation.md).
var pinnedSeeds = []struct {
	seed uint64
	why  string
}{
	{3548, "finding 13: a conflict copy moved back onto its file, whose index still held an older version, was dropped as an outdated restatement"},
	{2166, "deterministic finding 3: a kill after a clean merge reached the disk; the restart scan recorded the merge as the device's edit (the check's mistake)"},
	{10805, "deterministic finding 3, again: the same shape on another path"},
	{27428, "deterministic finding 4: a put-back dropped by rule 7 after a concurrent identical copy was settled away"},
}

// TestPinnedSeeds runs pinnedSeeds under the product's rules.
func TestPinnedSeeds(t *testing.T) {
	for _, p := range pinnedSeeds {
		if r := Run(Config{Seed: p.seed}); len(r.Failures) > 0 {
			t.Errorf("seed %d (%s) failed: %s", p.seed, p.why, strings.Join(r.Failures, "; "))
		}
	}
}

// TestSeedReplays shows a seed is a complete description of a run: two
// runs give the same trace, byte for byte, and the same digest; another
// seed gives another.
func TestSeedReplays(t *testing.T) {
	var a, b bytes.Buffer
	ra := Run(Config{Seed: 42, Trace: &a})
	rb := Run(Config{Seed: 42, Trace: &b})
	if ra.Digest != rb.Digest || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("seed 42 ran twice gave digests %s and %s", ra.Digest, rb.Digest)
	}
	if a.Len() == 0 {
		t.Fatal("empty trace")
	}
	if rc := Run(Config{Seed: 43}); rc.Digest == ra.Digest {
		t.Fatal("seeds 42 and 43 gave the same digest: the seed does not drive the run")
	}
}

// strictGuard holds nearly every deletion: the users decide about most
// of them, so deletions they accepted reach the other devices' guards.
var strictGuard = protocol.MassDeletePolicy{Percent: 10, MinFiles: 1}

// TestBrokenRulesCaught shows the checks bite: each deliberately broken
// rule must fail some of the first 200 seeds, with the check it breaks.
// The sync rules are broken through engine.Rules; the apply-race rule
// and the guard are not in engine.Rules, so their cases break the
// simulated device instead (Config.TestOnly...): one that never asks its
// engine.RecentApplies, and one whose guard is never told a deletion was
// confirmed (so it holds deletions another user accepted, and its user
// may reject them).
func TestBrokenRulesCaught(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"keep local on conflict", Config{Rules: enginetest.KeepLocal()}, "did not converge"},
		{"overwrite unseen heads", Config{Rules: enginetest.OverwriteUnseen()}, "lost write"},
		{"save after an apply supersedes it", Config{TestOnlyNoApplyRace: true}, "lost write"},
		{"guard ignores confirmed deletions", Config{MassDelete: strictGuard, TestOnlyIgnoreConfirmed: true}, "accepted deletion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caught := 0
			for seed := uint64(1); seed <= 200; seed++ {
				cfg := tc.cfg
				cfg.Seed = seed
				r := Run(cfg)
				for _, f := range r.Failures {
					if strings.Contains(f, tc.want) {
						caught++
						if caught == 1 {
							t.Logf("seed %d: %s", seed, f)
						}
						break
					}
				}
			}
			if caught == 0 {
				t.Fatalf("no seed of 200 failed with %q under the broken rule", tc.want)
			}
			t.Logf("%d of 200 seeds caught it", caught)
		})
	}
}

// TestStrictGuardConverges runs seeds 1..200 with a guard that holds
// nearly every deletion (strictGuard, the control of the broken-guard
// case above): every seed must pass, the users deciding many holds.
func TestStrictGuardConverges(t *testing.T) {
	sum := RunSeeds(Config{MassDelete: strictGuard}, 1, 200)
	for i, r := range sum.Failed {
		if i == 5 {
			break
		}
		t.Errorf("seed %d failed under the strict guard: %s", r.Seed, strings.Join(r.Failures, "; "))
	}
	tot := sum.Totals
	t.Logf("200 seeds: %d failed; holds %d, accepted %d, rejected %d", len(sum.Failed), tot.Holds, tot.Accepts, tot.Rejects)
	if tot.Accepts == 0 || tot.Rejects == 0 {
		t.Fatalf("the strict guard's users decided nothing: %+v", tot)
	}
}
