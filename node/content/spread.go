package content

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ipfs/go-cid"
)

// FetchFunc asks one peer for cids and returns those it did not send, with
// why when it failed.
type FetchFunc func(ctx context.Context, cids []cid.Cid) (missing []cid.Cid, err error)

// Peer is a connected peer chunks can be fetched from.
type Peer struct {
	// Name says which peer failed, in errors.
	Name  string
	Fetch FetchFunc
}

// Spread fetches cids from peers. Each peer first gets a share (every
// len(peers)-th chunk), all fetched at once; whatever is still missing
// after that (a peer lacked it, or failed) is asked of every peer in turn,
// until none is missing. With no peer, or a chunk no peer sent, the error
// wraps ErrChunkMissing and says what each failing peer said. A context
// that ends is returned as its error.
func Spread(ctx context.Context, peers []Peer, cids []cid.Cid) error {
	if len(peers) == 0 {
		return fmt.Errorf("%w (%d chunks): no member of the vault is connected", ErrChunkMissing, len(cids))
	}
	var (
		mu      sync.Mutex
		missing = map[cid.Cid]bool{}
		errs    []string
		wg      sync.WaitGroup
	)
	shares := make([][]cid.Cid, len(peers))
	for i, c := range cids {
		shares[i%len(peers)] = append(shares[i%len(peers)], c)
	}
	for i, p := range peers {
		if len(shares[i]) == 0 {
			continue
		}
		wg.Go(func() {
			miss, err := p.Fetch(ctx, shares[i])
			mu.Lock()
			defer mu.Unlock()
			for _, c := range miss {
				missing[c] = true
			}
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", p.Name, err))
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	var need []cid.Cid
	for _, c := range cids {
		if missing[c] {
			need = append(need, c)
		}
	}
	for _, p := range peers {
		if len(need) == 0 || len(peers) == 1 {
			break
		}
		miss, err := p.Fetch(ctx, need)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", p.Name, err))
		}
		need = miss
	}
	if len(need) > 0 {
		if len(errs) > 0 {
			return fmt.Errorf("%w (%d chunks): %s", ErrChunkMissing, len(need), strings.Join(errs, "; "))
		}
		return fmt.Errorf("%w (%d chunks)", ErrChunkMissing, len(need))
	}
	return nil
}
