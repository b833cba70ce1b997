package pack

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
)

// The crash test runs a writer in a child process (this test binary again,
// selected by crashChildEnv), kills it with SIGKILL at a random moment
// while it is putting chunks from many goroutines, reopens the store and
// checks that every chunk the child acknowledged (printed to stdout after
// Put returned) is there and intact, and that the index and the packs
// agree. The store directory carries over from one kill to the next (25
// at a time), so later rounds also recover stores that earlier recoveries
// produced.
//
// WEFT_CRASH_KILLS sets the number of kill points (default 50; `make crash`
// runs 1,000); WEFT_CRASH_SEED fixes the seed (printed at the start).
const (
	crashChildEnv = "WEFT_PACK_CRASH_CHILD" // the store directory, in the child
	crashSeedEnv  = "WEFT_PACK_CRASH_CHILD_SEED"
)

func TestCrash(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("in the crash child")
	}
	t.Parallel()
	kills := 50
	if v := os.Getenv("WEFT_CRASH_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("WEFT_CRASH_KILLS=%q: want a positive number", v)
		}
		kills = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("WEFT_CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("WEFT_CRASH_SEED=%q: %v", v, err)
		}
		seed = n
	}
	t.Logf("crash test: %d kill points, WEFT_CRASH_SEED=%d", kills, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var dir string
	var acked map[cid.Cid]bool
	for k := range kills {
		if k%crashRoundsPerDir == 0 {
			dir = t.TempDir()
			acked = make(map[cid.Cid]bool)
		}
		childSeed := rng.Uint64()
		// Kill after the child acknowledged this many chunks, or after
		// a random delay, whichever comes first; both vary so that kills
		// land in every phase of a group commit.
		afterAcks := rng.IntN(400)
		delay := time.Duration(rng.IntN(100)) * time.Millisecond
		got, err := runCrashChild(dir, childSeed, afterAcks, delay)
		if err != nil {
			t.Fatalf("kill %d (seed %d): %v", k, seed, err)
		}
		for _, c := range got {
			acked[c] = true
		}
		s, err := Open(Config{Dir: dir, PackSize: crashPackSize})
		if err != nil {
			t.Fatalf("kill %d (seed %d): reopening: %v", k, seed, err)
		}
		for c := range acked {
			if _, err := s.Get(c); err != nil {
				s.Close()
				t.Fatalf("kill %d (seed %d): acknowledged chunk %s: %v", k, seed, c, err)
			}
		}
		rep, err := s.Verify()
		if err == nil && len(rep.Problems) > 0 {
			err = fmt.Errorf("%d problems, first: %s", len(rep.Problems), rep.Problems[0])
		}
		if err == nil && rep.Chunks < len(acked) {
			err = fmt.Errorf("index holds %d chunks, %d were acknowledged", rep.Chunks, len(acked))
		}
		s.Close()
		if err != nil {
			t.Fatalf("kill %d (seed %d): index and packs disagree: %v", k, seed, err)
		}
	}
	t.Logf("%d kills, every acknowledged chunk intact", kills)
}

// crashRoundsPerDir is how many kills one store directory goes through
// before the test starts afresh, so that the checks after each kill (which
// read everything) stay short however many kills are asked for.
const crashRoundsPerDir = 25

// crashPackSize is small so that the child rotates packs often.
const crashPackSize = 1 << 20

// runCrashChild starts a writer on dir, kills it after afterAcks
// acknowledgements or delay, and returns the CIDs it acknowledged.
func runCrashChild(dir string, seed uint64, afterAcks int, delay time.Duration) ([]cid.Cid, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashSeedEnv+"="+strconv.FormatUint(seed, 10))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var got []cid.Cid
	var parseErr error
	readDone := make(chan struct{})
	started := make(chan struct{})
	enough := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			line := sc.Text()
			if line == "started" {
				close(started)
				continue
			}
			c, err := cid.Decode(line)
			if err != nil {
				// A line cut by the kill cannot happen (each ack is
				// one write of a whole line), so this is a bug.
				mu.Lock()
				parseErr = fmt.Errorf("child printed %q: %v", line, err)
				mu.Unlock()
				continue
			}
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
			if n++; n == afterAcks {
				close(enough)
			}
		}
	}()
	select {
	case <-started:
	case <-readDone:
		cmd.Wait()
		return nil, fmt.Errorf("child exited before starting")
	}
	select {
	case <-enough:
	case <-time.After(delay):
	case <-readDone:
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-readDone
	werr := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		return nil, fmt.Errorf("child was not killed: %v", werr)
	}
	mu.Lock()
	defer mu.Unlock()
	return got, parseErr
}

// TestCrashChild is the writer the crash test kills. It only runs in the
// child.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("only runs as the crash test's child")
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	s, err := Open(Config{Dir: dir, PackSize: crashPackSize})
	if err != nil {
		fmt.Fprintf(os.Stderr, "crash child: open: %v\n", err)
		os.Exit(2)
	}
	os.Stdout.WriteString("started\n")
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for {
				n := 512 + rng.IntN(8<<10)
				if rng.IntN(40) == 0 {
					n = 256<<10 + rng.IntN(512<<10)
				}
				c, data := randChunk(t, rng, n)
				if err := s.Put(c, data); err != nil {
					fmt.Fprintf(os.Stderr, "crash child: put: %v\n", err)
					os.Exit(2)
				}
				// One write per line, unbuffered: the parent sees an
				// ack only after Put returned, and never half of one.
				mu.Lock()
				os.Stdout.WriteString(c.String() + "\n")
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
