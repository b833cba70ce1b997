package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tokenRaceSeconds is how long each device appends in TestTokenRace:
// WEFT_TOKEN_RACE_SECONDS, else 15 (make test; the full length is
// 60).
func tokenRaceSeconds(t *testing.T) time.Duration {
	if s := os.Getenv("WEFT_TOKEN_RACE_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("WEFT_TOKEN_RACE_SECONDS=%q", s)
		}
		return time.Duration(n) * time.Second
	}
	return 15 * time.Second
}

// Two devices append unique tokens to the same 50 files at once, the way
// an editor saves (read, append, write a temporary file, rename over),
// with both agents syncing: no token may be lost. Each must end in the
// file or in a conflict copy of it, on both devices. Three seeds.
//
// It runs in make test, 15 s per seed (WEFT_TOKEN_RACE_SECONDS=60 for the
// issue's full length). Before the last fix one seed run in about 15 lost
// a token; since, none in the runs docs/sync.md "Saves racing an apply"
// counts. TestSaveRightAfterApplyKeepsBoth and
// TestSaveAfterApplyAndRestatementKeepsBoth (node) pin the mechanisms it
// found, deterministically. On a loss it logs both devices' history of the
// file (with the version graph, --json) and their log lines about it;
// WEFT_TOKEN_RACE_KEEP=DIR keeps the agents' whole debug logs.
func TestTokenRace(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { tokenRace(t, seed) })
	}
}

func tokenRace(t *testing.T, seed uint64) {
	a, b := pair(t)
	// WEFT_TOKEN_RACE_KEEP=DIR keeps both agents' debug logs there (the
	// test's own go away with its temporary directory), whether the run
	// passed or failed. Registered after pair's cleanups, it runs before
	// them, while the logs still exist.
	if keep := os.Getenv("WEFT_TOKEN_RACE_KEEP"); keep != "" {
		t.Cleanup(func() {
			_ = os.MkdirAll(keep, 0o755)
			for _, d := range []*device{a, b} {
				logb, _ := os.ReadFile(filepath.Join(filepath.Dir(d.home), d.name+".log"))
				_ = os.WriteFile(filepath.Join(keep, fmt.Sprintf("seed%d-%s.log", seed, d.name)), logb, 0o644)
			}
		})
	}
	const files = 50
	for i := range files {
		a.writeAtomic(fmt.Sprintf("f%02d.md", i), []byte(fmt.Sprintf("# file %d\n", i)))
	}
	b.up()
	waitSame(t, a, b, time.Minute, filesIn(files))

	limit := tokenRaceSeconds(t)
	var wg sync.WaitGroup
	written := make([][]string, 2)
	where := make([]map[string]string, 2) // token -> file
	for k := range where {
		where[k] = map[string]string{}
	}
	for k, d := range []*device{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(k)))
			deadline := time.Now().Add(limit)
			for n := 0; n < 5000 && time.Now().Before(deadline); n++ {
				rel := fmt.Sprintf("f%02d.md", r.IntN(files))
				p := filepath.Join(d.folder, rel)
				old, err := os.ReadFile(p)
				if err != nil {
					continue // between weft's rename and its directory update, or a conflict rename: skip this round
				}
				tok := fmt.Sprintf("token-%s-%d-%d", d.name, seed, n)
				tmp := filepath.Join(filepath.Dir(d.home), "save-"+d.name)
				if err := os.WriteFile(tmp, append(old, []byte(tok+"\n")...), 0o644); err != nil {
					t.Error(err)
					return
				}
				if err := os.Rename(tmp, p); err != nil {
					t.Error(err)
					return
				}
				written[k] = append(written[k], tok)
				where[k][tok] = rel
				time.Sleep(time.Duration(5+r.IntN(20)) * time.Millisecond) // an editor's pace, not a busy loop
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	waitSame(t, a, b, 2*time.Minute, nil)
	waitInSync(t, a, b)
	final := waitSame(t, a, b, time.Minute, nil)
	var all strings.Builder
	for _, v := range final {
		all.WriteString(v)
	}
	text := all.String()
	lost := 0
	total := 0
	for k := range written {
		for _, tok := range written[k] {
			total++
			if !strings.Contains(text, tok+"\n") {
				lost++
				if lost <= 3 {
					rel := where[k][tok]
					t.Errorf("token %s (written to %s) is in no file and no conflict copy", tok, rel)
					for _, d := range []*device{a, b} {
						h, _ := d.run("history", filepath.Join(d.folder, rel))
						t.Logf("%s history of %s:\n%s", d.name, rel, h)
						hj, _ := d.run("history", "--json", filepath.Join(d.folder, rel))
						t.Logf("%s history of %s, with the version graph:\n%s", d.name, rel, hj)
						logb, _ := os.ReadFile(filepath.Join(filepath.Dir(d.home), d.name+".log"))
						for _, line := range strings.Split(string(logb), "\n") {
							if strings.Contains(line, rel) && !strings.Contains(line, `msg="local change"`) {
								t.Logf("%s log: %s", d.name, line)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("seed %d: %d tokens written over %s, %d lost, %d files and conflict copies", seed, total, limit, lost, len(final))
}
