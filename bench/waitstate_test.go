package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// statusServer answers GET /v1/status with an in-sync folder from the
// inSyncFrom'th request on (1-based), and counts the requests.
func statusServer(t *testing.T, inSyncFrom int64) (*device, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		st := api.Status{Folders: []api.FolderStatus{{State: "syncing", Files: 3}}}
		if n >= inSyncFrom {
			st.Folders[0].State, st.Folders[0].InitialScanDone = "in-sync", true
		}
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	d := &device{name: "t", http: srv.Client(), api: apiInfo{Addr: strings.TrimPrefix(srv.URL, "http://"), Token: "x"}}
	return d, &calls
}

// TestWaitStateEventsWakesOnEvent: with a poll interval no test would
// wait out, an event makes waitStateEvents ask again and see the state.
func TestWaitStateEventsWakesOnEvent(t *testing.T) {
	d, calls := statusServer(t, 2)
	wake := make(chan api.Event, 1)
	wake <- api.Event{Type: api.EventReconciled}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := d.waitStateEvents(ctx, time.Minute, time.Hour, wake, inSync(3)); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("status asked %d times, want 2 (once, then once on the event)", got)
	}
}

// TestWaitStateEventsPollsWithoutStream: once the event stream ends, the
// poll alone goes on until the state is reached.
func TestWaitStateEventsPollsWithoutStream(t *testing.T) {
	d, calls := statusServer(t, 4)
	wake := make(chan api.Event)
	close(wake)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := d.waitStateEvents(ctx, time.Minute, time.Millisecond, wake, inSync(3)); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 4 {
		t.Fatalf("status asked %d times, want 4", got)
	}
}
