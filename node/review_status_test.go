package node

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/entry"
)

// One remote version that cannot be applied (its chunks are not served)
// is one pending path. reconcile sets pending.toApply = len(dirty) at its
// end while the failed path also stays in dirty, and status() adds both:
// pending_apply reports 2 for one path (2N for N failing paths).
func TestReviewPendingApplyCountsFailedPathsTwice(t *testing.T) {
	n, folderPath := testNode(t)
	v := n.vaultsNow()[0]
	if err := os.WriteFile(filepath.Join(folderPath, "keep.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	_, id := joinAsMember(t, n)
	content := bytes.Repeat([]byte("never served\n"), 800)
	e := reviewMemberEntry(t, v, id, []entry.Version{reviewChunkedVersion(t, v, "big.txt", content, time.Now().UnixNano())})
	if err := v.ingestEntry(e.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		v.mu.Lock()
		failed := v.errs["big.txt"] != ""
		v.mu.Unlock()
		if failed {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // reconcile's pass has ended
	st := v.status()
	if st.PendingApply != 1 || st.Pending != st.PendingApply+st.PendingFetch {
		t.Fatalf("one unapplied path: pending_apply = %d, pending = %d, pending_fetch = %d; want pending_apply 1", st.PendingApply, st.Pending, st.PendingFetch)
	}
}
