package node

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestOpenInRun: with Config.OpenInRun, New opens no vault and status
// shows the home's folder "opening" (never in sync, never missing); Run
// opens it, and once Ready the folder has a real state and no longer
// shows as opening.
func TestOpenInRun(t *testing.T) {
	h, folderPath := testHome(t)
	n, err := New(Config{Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-",
		NoWatcher: true, NoDHT: true, OpenInRun: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.vaultsNow()) != 0 {
		t.Fatal("New opened a vault with OpenInRun set")
	}
	st := n.Status()
	if len(st.Folders) != 1 || st.Folders[0].Path != folderPath || st.Folders[0].State != "opening" || st.Folders[0].Errors == nil {
		t.Fatalf("status before Run: %+v, want %s opening (with an empty errors list)", st.Folders, folderPath)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	<-n.Ready()
	select {
	case <-n.opened:
	default:
		t.Fatal("ready before the vaults were open")
	}
	st = n.Status()
	if len(st.Folders) != 1 || st.Folders[0].State == "opening" || st.Folders[0].Vault != n.vaultsNow()[0].id.String() {
		t.Fatalf("status once ready: %+v, want the one folder open", st.Folders)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestAPIWaitsForOpen: while the vaults open, the API answers status, the
// event stream and metrics at once and holds every other call (here one
// whose client gives up: it is refused, not answered as if the folder did
// not exist); once the vaults are open every call goes through.
func TestAPIWaitsForOpen(t *testing.T) {
	n := &Node{opened: make(chan struct{})}
	a := &apiServer{n: n}
	var reached []string
	h := a.waitOpen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = append(reached, r.URL.Path) }))
	call := func(path string, ctx context.Context) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil))
		return rec.Code
	}
	gaveUp, cancel := context.WithCancel(context.Background())
	cancel()
	for _, p := range []string{"/v1/status", "/v1/events", "/metrics"} {
		if code := call(p, gaveUp); code != http.StatusOK {
			t.Errorf("%s while opening: %d, want it answered", p, code)
		}
	}
	if code := call("/v1/doctor", gaveUp); code != http.StatusServiceUnavailable {
		t.Errorf("/v1/doctor while opening, client gone: %d, want 503", code)
	}
	if len(reached) != 3 {
		t.Fatalf("reached %v while opening, want only status, events and metrics", reached)
	}
	close(n.opened)
	if code := call("/v1/doctor", context.Background()); code != http.StatusOK || len(reached) != 4 {
		t.Fatalf("/v1/doctor once open: %d, reached %v", code, reached)
	}
}
