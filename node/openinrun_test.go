package node

import (
	"context"
	"io"
	"log/slog"
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
