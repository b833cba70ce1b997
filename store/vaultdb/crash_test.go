package vaultdb

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// The crash test re-executes this test binary as a child (TestCrashChild
// with crashChildEnv set) that appends entries from several goroutines and
// prints a line for each Append once it returned. The parent SIGKILLs the
// child after a random number of acknowledgements, reopens the DB and
// checks that every acknowledged entry, and the folder record committed
// with it, is there and valid. One directory serves crashDirKills kills in
// a row, so recovery also runs on top of earlier recoveries.

const (
	crashChildEnv   = "WEFT_VAULTDB_CRASH_DIR"
	crashAuthors    = 4
	crashDirKills   = 5
	crashMaxAcks    = 30
	crashSegmentMax = 16 << 10
)

func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestCrash")
	}
	f := newFixture()
	db, rep, err := OpenConfig(Config{Dir: dir, Vault: f.vault, SegmentSize: crashSegmentMax})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex // serialises stdout lines
	out := bufio.NewWriter(os.Stdout)
	if rep.Rebuilt {
		// The parent must know: a rebuild keeps every entry but not the
		// folder records committed with them (a rescan recreates those).
		fmt.Fprintln(out, "rebuilt")
		out.Flush()
	}
	var wg sync.WaitGroup
	for i := range crashAuthors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := identity(t, byte(i+1))
			head := db.Head(id.ID())
			for n := 0; ; n++ {
				batch := 1 + n%3*(i%2) // odd authors append 1-3 entries at once
				es := make([]*entry.Entry, batch)
				var u Update
				for j := range es {
					es[j] = f.next(t, id, head, "c")
					head = es[j].Head()
					u.PutIndex(crashPath(i, head.Seq), Record{Kind: entry.KindDir, Version: entry.VersionID{Author: id.ID(), Seq: head.Seq}})
				}
				if err := db.AppendWith(&u, es...); err != nil {
					fmt.Fprintln(os.Stderr, "child append:", err)
					os.Exit(3)
				}
				mu.Lock()
				for _, e := range es {
					fmt.Fprintf(out, "ack %d %d %s\n", i, e.Seq(), e.CID())
				}
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func crashPath(author int, seq uint64) string { return fmt.Sprintf("crash/%d/%d", author, seq) }

func TestCrash(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("in the child")
	}
	kills := 50
	if s := os.Getenv("WEFT_CRASH_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("WEFT_CRASH_KILLS=%q: %v", s, err)
		}
		kills = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("WEFT_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (rerun with WEFT_CRASH_SEED=%d), %d kills", seed, seed, kills)
	rng := rand.New(rand.NewPCG(seed, 0))
	f := newFixture()
	ids := make([]keys.DeviceID, crashAuthors)
	for i := range ids {
		ids[i] = identity(t, byte(i+1)).ID()
	}
	var dir string
	acked := map[entryKey]cid.Cid{}
	// withRecord: the acknowledged entries whose folder record must be
	// there. A rebuilt index holds every entry but none of the folder
	// records (the node rescans); SIGKILL can force one when it tears
	// goleveldb's journal mid-record, which the strict open refuses.
	withRecord := map[entryKey]bool{}
	rebuilds := 0
	for k := 0; k < kills; k++ {
		if k%crashDirKills == 0 {
			dir = t.TempDir()
			acked = map[entryKey]cid.Cid{}
			withRecord = map[entryKey]bool{}
		}
		want := 1 + rng.IntN(crashMaxAcks)
		lines, stderr := runCrashChild(t, dir, want)
		got := 0
		for _, l := range lines {
			if l == "rebuilt" {
				rebuilds++
				clear(withRecord)
				continue
			}
			var i int
			var seq uint64
			var cs string
			if _, err := fmt.Sscanf(l, "ack %d %d %s", &i, &seq, &cs); err != nil {
				t.Fatalf("kill %d: child line %q: %v", k, l, err)
			}
			c, err := cid.Decode(cs)
			if err != nil {
				t.Fatal(err)
			}
			acked[entryKey{ids[i], seq}] = c
			withRecord[entryKey{ids[i], seq}] = true
			got++
		}
		if got < want {
			t.Fatalf("kill %d (seed %d): child stopped after %d acks, want %d; stderr:\n%s", k, seed, got, want, stderr)
		}
		if checkCrashDir(t, k, seed, dir, f, ids, acked, withRecord) {
			rebuilds++
			clear(withRecord)
		}
	}
	t.Logf("%d kills, %d index rebuilds", kills, rebuilds)
}

// runCrashChild starts the child on dir, kills it after want acks and
// returns every ack line it printed. It fails the test unless the child
// died of that SIGKILL.
func runCrashChild(t *testing.T, dir string, want int) ([]string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var lines []string
	acks, killed := 0, false
	for sc.Scan() {
		switch l := sc.Text(); {
		case strings.HasPrefix(l, "ack "):
			lines = append(lines, l)
			acks++
		case l == "rebuilt":
			lines = append(lines, l)
		}
		if !killed && acks >= want {
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	io.Copy(io.Discard, stdout)
	if !killed {
		cmd.Process.Signal(syscall.SIGKILL)
	}
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed by SIGKILL (%v); stderr:\n%s", cmd.ProcessState, stderr.String())
	}
	return lines, stderr.String()
}

// checkCrashDir reopens dir and checks every acknowledged entry, and the
// folder record of those in withRecord. It reports whether the index was
// rebuilt.
func checkCrashDir(t *testing.T, k int, seed uint64, dir string, f fixture, ids []keys.DeviceID, acked map[entryKey]cid.Cid, withRecord map[entryKey]bool) bool {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("kill %d (seed %d): %s", k, seed, fmt.Sprintf(format, args...))
	}
	db, rep, err := Open(dir, f.vault)
	if err != nil {
		fail("Open: %v", err)
	}
	defer db.Close()
	if rep.Dropped != 0 || len(rep.Damage) != 0 {
		fail("report %+v: a kill must not damage the log", rep)
	}
	for ek, c := range acked {
		e, err := db.Get(ek.author, ek.seq)
		if err != nil {
			fail("acknowledged entry %s seq %d: %v", ek.author.Short(), ek.seq, err)
		}
		if !e.CID().Equals(c) {
			fail("entry %s seq %d: got CID %s, want %s", ek.author.Short(), ek.seq, e.CID(), c)
		}
		if h := db.Head(ek.author); h.Seq < ek.seq {
			fail("head of %s at %d, below acknowledged %d", ek.author.Short(), h.Seq, ek.seq)
		}
		if !rep.Rebuilt && withRecord[ek] {
			i := 0
			for ids[i] != ek.author {
				i++
			}
			if _, ok, err := db.IndexGet(crashPath(i, ek.seq)); !ok || err != nil {
				fail("folder record committed with %s seq %d: %v %v", ek.author.Short(), ek.seq, ok, err)
			}
		}
	}
	for a, h := range db.Heads() {
		var prev entry.Head
		// Open validated every entry; here check that Range walks the
		// chain from 1 to the head.
		err := db.Range(a, 1, h.Seq, func(e *entry.Entry) error {
			if e.Seq() != prev.Seq+1 || (prev.Seq > 0 && !e.Prev().Equals(prev.CID)) {
				return fmt.Errorf("seq %d does not follow %d", e.Seq(), prev.Seq)
			}
			prev = e.Head()
			return nil
		})
		if err != nil || prev != h {
			fail("log of %s does not chain to its head: %v", a.Short(), err)
		}
	}
	return rep.Rebuilt
}
