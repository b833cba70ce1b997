package relay

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

// TestRatesBoundStreams checks the lower bounds a rate sets, which no
// load can break: 6 MiB written through a total of 8 MiB/s (a burst of
// 2 MiB) takes at least 0.5 s; two streams of one vault share its
// per-vault rate; reads are paced like writes.
func TestRatesBoundStreams(t *testing.T) {
	const rate = 8 << 20
	atLeast := func(what string, d time.Duration, bytes int64) {
		t.Helper()
		min := time.Duration(float64(bytes-rate/4) / rate * float64(time.Second))
		if d < min {
			t.Errorf("%s: %d bytes in %s, want at least %s at %d B/s", what, bytes, d, min, rate)
		}
	}
	payload := make([]byte, 6<<20)

	r := &Relay{cfg: Config{Rates: Rates{Total: rate}}, total: newLimiter(rate), limiters: map[keys.VaultID]*limiter{}}
	var sink bytes.Buffer
	w := r.limit(&sink)
	t0 := time.Now()
	for off := 0; off < len(payload); off += 64 << 10 {
		if _, err := w.Write(payload[off : off+64<<10]); err != nil {
			t.Fatal(err)
		}
	}
	atLeast("total, writes", time.Since(t0), int64(len(payload)))

	rd := r.limit(struct {
		io.Reader
		io.Writer
	}{bytes.NewReader(payload), io.Discard})
	t0 = time.Now()
	if n, err := io.Copy(io.Discard, rd); err != nil || n != int64(len(payload)) {
		t.Fatalf("read %d: %v", n, err)
	}
	atLeast("total, reads", time.Since(t0), int64(len(payload)))

	v := &Relay{cfg: Config{Rates: Rates{PerVault: rate}}, limiters: map[keys.VaultID]*limiter{}}
	var vault keys.VaultID
	vault[0] = 7
	var wg sync.WaitGroup
	t0 = time.Now()
	for range 2 {
		wg.Go(func() {
			s := v.limitVault(&bytes.Buffer{}, vault)
			for off := 0; off < 3<<20; off += 64 << 10 {
				if _, err := s.Write(payload[off : off+64<<10]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	atLeast("one vault, two streams", time.Since(t0), 6<<20)

	// A stopping relay ends the waits.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ls := &limitedStream{rw: &bytes.Buffer{}, ctx: ctx, total: newLimiter(1)}
	if _, err := ls.Write(make([]byte, 1<<20)); err == nil {
		t.Error("a write after the relay stopped did not fail")
	}
}
