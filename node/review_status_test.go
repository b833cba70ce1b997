package node

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
)

// One remote version that cannot be applied (its chunks are not served)
// is one pending path. At the end of the pass that failed it, the path is
// both back in the engine's dirty set and among the pass's unsettled
// paths; status adding the two reported pending_apply 2 for one path (2N
// for N failing paths). engine.Engine.Pending counts it once.
func TestReviewPendingApplyCountsFailedPathsTwice(t *testing.T) {
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	v := n.vaultsNow()[0]
	writeScanned(t, v, folderPath, "keep.txt", []byte("x"))
	_, id := joinAsMember(t, n)
	content := bytes.Repeat([]byte("never served\n"), 800)
	e := reviewMemberEntry(t, v, id, []entry.Version{reviewChunkedVersion(t, v, "big.txt", content, time.Now().UnixNano())})

	// The end of the pass that fails big.txt is observed on the goroutine
	// that reconciles, before a next pass can empty dirty again, and the
	// state and status are read right there.
	type atEnd struct {
		dirty   bool
		toApply int
		failed  string
		st      api.FolderStatus
	}
	ended := make(chan atEnd, 1)
	var failedInPass atomic.Bool
	n.events.Observe(func(ev api.Event) []api.Event {
		switch {
		case ev.Folder != v.cfg.Folder:
		case ev.Type == api.EventError && ev.Kind == "" && ev.Path == "big.txt":
			failedInPass.Store(true)
		case ev.Type == api.EventReconciled && failedInPass.CompareAndSwap(true, false):
			var s atEnd
			v.engine.Do(func(e *engine.Engine) {
				s.dirty, s.toApply = e.IsDirty("big.txt"), e.Pending()
				s.failed, _ = e.Err("big.txt")
			})
			s.st = v.status()
			select {
			case ended <- s:
			default: // a later pass that failed it again
			}
		}
		return nil
	})
	if err := v.ingestEntry(e.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	var s atEnd
	select {
	case s = <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for a pass that fails to apply big.txt")
	}
	// The state the count must not double: the failed path is dirty and
	// counted in toApply at once.
	if !s.dirty || s.toApply != 1 || s.failed == "" {
		t.Fatalf("at the end of the failing pass: big.txt dirty %v, toApply %d, error %q; want dirty, 1, an error", s.dirty, s.toApply, s.failed)
	}
	if s.st.PendingApply != 1 || s.st.Pending != s.st.PendingApply+s.st.PendingFetch {
		t.Fatalf("one unapplied path: pending_apply = %d, pending = %d, pending_fetch = %d; want pending_apply 1", s.st.PendingApply, s.st.Pending, s.st.PendingFetch)
	}
}
