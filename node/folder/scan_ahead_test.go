package folder

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatedFS is an FS whose ReadDir of the directories in gated waits until
// open is closed, and which tells when each ReadDir begins and how often
// each directory was read.
type gatedFS struct {
	FS
	gated map[string]bool
	open  chan struct{}

	mu      sync.Mutex
	reads   map[string]int
	started map[string]chan struct{}
}

func (g *gatedFS) begun(dir string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch, ok := g.started[dir]
	if !ok {
		ch = make(chan struct{})
		g.started[dir] = ch
	}
	return ch
}

func (g *gatedFS) ReadDir(dir string) ([]FileInfo, error) {
	ch := g.begun(dir)
	g.mu.Lock()
	g.reads[dir]++
	if g.reads[dir] == 1 {
		close(ch)
	}
	g.mu.Unlock()
	if g.gated[dir] {
		<-g.open
	}
	return g.FS.ReadDir(dir)
}

// TestScanReadsAhead: while the walk waits for one directory's listing,
// the directories after it are being read on the other slots (here d2,
// while d1's listing is held back): the walk does not list them one at a
// time itself. Every directory, nested ones too, is read once, and the
// result is the folder's.
func TestScanReadsAhead(t *testing.T) {
	m := NewMemFS(MemFSConfig{})
	var want strings.Builder
	for i := range 6 {
		d := fmt.Sprintf("d%d", i)
		put(t, m, d+"/f", "x")
		want.WriteString("added " + d + "\nadded " + d + "/f\n")
		if i == 3 {
			put(t, m, d+"/sub/g", "y")
			want.WriteString("added " + d + "/sub\nadded " + d + "/sub/g\n")
		}
	}
	g := &gatedFS{FS: m, gated: map[string]bool{"d1": true, "d2": true}, open: make(chan struct{}),
		reads: map[string]int{}, started: map[string]chan struct{}{}}
	s, err := NewScanner(ScannerConfig{FS: g, Index: MapIndex{}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := s.Scan(context.Background())
		done <- result{r, err}
	}()
	select {
	case <-g.begun("d2"):
	case <-time.After(10 * time.Second):
		t.Error("d2 was not read while the walk waited for d1's listing")
	}
	close(g.open)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if got := changes(res.r); got != want.String() {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want.String())
	}
	for _, d := range []string{"", "d0", "d1", "d2", "d3", "d3/sub", "d4", "d5"} {
		if n := g.reads[d]; n != 1 {
			t.Errorf("%q read %d times, want once", d, n)
		}
	}
}
