package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/weftsync/weft/store/home"
)

// TestPiecedFileThroughRelayAlone: A writes a 12 MiB file cut into pieces
// (piecedTestParams), the relay holds it (A's unsafe 0: the relay fetched
// the pieces, then the chunks they list), A stops, and B, started only
// then, gets the file byte-identical from the relay alone (its pieces
// fetched from the relay before B accepts the entry).
func TestPiecedFileThroughRelayAlone(t *testing.T) {
	r := revokeTestRelay(t, io.Discard)
	ha, folderA := testHome(t)
	a, err := New(Config{Home: ha, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-", Pieces: piecedTestParams,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithCancel(context.Background())
	adone := make(chan error, 1)
	go func() { adone <- a.Run(actx) }()
	var once sync.Once
	stopA := func() {
		once.Do(func() {
			acancel()
			if err := <-adone; err != nil {
				t.Errorf("A run: %v", err)
			}
		})
	}
	t.Cleanup(stopA)
	<-a.Ready()
	if err := a.ChangeRelay(a.vaultsNow()[0].id, r.Addrs()[0], false); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hb, err := home.Open(filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := a.Invite([32]byte{}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	folderB := filepath.Join(dir, "folder")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := JoinVault(ctx, hb, inv.String(), folderB); err != nil {
		t.Fatal(err)
	}

	data := make([]byte, 12<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	writeFile(t, folderA, "big.bin", data)
	if err := a.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, func() error {
		for _, f := range a.Status().Folders {
			if f.Unsafe != 0 {
				return fmt.Errorf("A: %d entries unsafe", f.Unsafe)
			}
		}
		return nil
	})
	es := entriesOf(t, a.vaultsNow()[0], a.id.ID(), 1)
	if last := es[len(es)-1]; last.Format() != 2 {
		t.Fatalf("A's entry is format %d, want 2 (pieces)", last.Format())
	}
	stopA()

	_, stopB := startNode(t, hb)
	defer stopB()
	waitFile(t, folderB, "big.bin", data)
}
