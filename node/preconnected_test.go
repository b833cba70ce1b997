package node

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftsync/weft/node/enrol"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/store/home"
)

// TestSyncsWithPeerConnectedBeforeRun: a connection that opens after New
// built the host but before Run subscribed to connection events (a peer
// dialling in during startup; in the simulation, a host handed in with
// connections already open) must still be synced over. Before the fix
// the new node never opened a log stream to such a peer, so it received
// nothing from it until the connection dropped and came back: S2 with
// 200 devices, built by pairing, left the edit on the admin while every
// neighbour of it had connected early.
func TestSyncsWithPeerConnectedBeforeRun(t *testing.T) {
	a, folderA := testNode(t)
	inv, err := a.Members().Invite([32]byte{}, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hb, err := home.Open(filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	folderB := filepath.Join(dir, "folder")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := enrol.JoinVault(ctx, hb, inv.String(), folderB, "", nil); err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Home: hb, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// A dials B between New and Run.
	if err := a.host.Connect(ctx, peer.AddrInfo{ID: b.host.ID(), Addrs: b.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("node run: %v", err)
		}
	})
	<-b.Ready()

	want := []byte("written after both are up\n")
	writeFile(t, folderA, "early.txt", want)
	if err := a.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFile(t, folderB, "early.txt", want)
}
