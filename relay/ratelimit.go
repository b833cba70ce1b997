package relay

import (
	"context"
	"io"
	"sync/atomic"

	"golang.org/x/time/rate"

	"github.com/weftsync/weft/protocol/keys"
)

// Rates bounds the bytes a relay moves on weft streams (log and chunk
// streams, both ways: what devices upload and what they download), each
// direction on its own bucket, per vault and in total. An operator of a
// relay for many vaults keeps one vault's first sync from taking the link
// (and the egress bill) of all the others. Zero means no limit.
type Rates struct {
	PerVault int64 // bytes per second, each direction, for each vault
	Total    int64 // bytes per second, each direction, all vaults together
}

// limiter is one rate in each direction.
type limiter struct{ in, out *rate.Limiter }

// newLimiter makes a limiter of bps bytes per second each way, or nil for
// no limit. A burst of a quarter second (at least 64 KiB, the largest
// write a stream's buffer makes at once) keeps the flow smooth.
func newLimiter(bps int64) *limiter {
	if bps <= 0 {
		return nil
	}
	burst := int(max(bps/4, 64<<10))
	return &limiter{in: rate.NewLimiter(rate.Limit(bps), burst), out: rate.NewLimiter(rate.Limit(bps), burst)}
}

// vaultLimiter returns vault id's limiter, made on first use; nil when
// there is no per-vault rate.
func (r *Relay) vaultLimiter(id keys.VaultID) *limiter {
	if r.cfg.Rates.PerVault <= 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.limiters[id]
	if l == nil {
		l = newLimiter(r.cfg.Rates.PerVault)
		r.limiters[id] = l
	}
	return l
}

// limitedStream paces a stream's reads and writes by the relay's total
// limiter and, once the stream's vault is known (after its Hello), the
// vault's.
type limitedStream struct {
	rw    io.ReadWriter
	ctx   context.Context
	total *limiter
	vault atomic.Pointer[limiter]
}

// limit wraps rw in the relay's rates; rw itself when it has none.
func (r *Relay) limit(rw io.ReadWriter) io.ReadWriter {
	if r.total == nil && r.cfg.Rates.PerVault <= 0 {
		return rw
	}
	ctx := r.context()
	if ctx == nil {
		ctx = context.Background()
	}
	return &limitedStream{rw: rw, ctx: ctx, total: r.total}
}

// setVault applies vault id's rate to rw, if limit wrapped it.
func (r *Relay) setVault(rw io.ReadWriter, id keys.VaultID) {
	if l, ok := rw.(*limitedStream); ok {
		if v := r.vaultLimiter(id); v != nil {
			l.vault.Store(v)
		}
	}
}

// limitVault is limit with vault id's rate applied: a stream the relay
// opens for a vault.
func (r *Relay) limitVault(rw io.ReadWriter, id keys.VaultID) io.ReadWriter {
	rw = r.limit(rw)
	r.setVault(rw, id)
	return rw
}

// wait takes n bytes from each limiter that applies, in pieces no larger
// than a burst. An error means the relay is stopping.
func (l *limitedStream) wait(n int, pick func(*limiter) *rate.Limiter) error {
	for _, lim := range []*limiter{l.total, l.vault.Load()} {
		if lim == nil {
			continue
		}
		rl := pick(lim)
		for left := n; left > 0; {
			k := min(left, rl.Burst())
			if err := rl.WaitN(l.ctx, k); err != nil {
				return err
			}
			left -= k
		}
	}
	return nil
}

func (l *limitedStream) Read(p []byte) (int, error) {
	n, err := l.rw.Read(p)
	if werr := l.wait(n, func(x *limiter) *rate.Limiter { return x.in }); werr != nil && err == nil {
		err = werr
	}
	return n, err
}

func (l *limitedStream) Write(p []byte) (int, error) {
	if err := l.wait(len(p), func(x *limiter) *rate.Limiter { return x.out }); err != nil {
		return 0, err
	}
	return l.rw.Write(p)
}
