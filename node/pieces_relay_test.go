package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
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
	if err := a.API().ChangeRelay(a.vaultsNow()[0].id, r.Addrs()[0], false); err != nil {
		t.Fatal(err)
	}
	hb, folderB, _ := joinHome(t, a)

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

// TestRelayDoesNotEchoOwnEntries: the relay pulls A's new entry from A and
// does not push it back down A's own log stream, as devices did before
// TestEntryNotEchoedToItsAuthor's fix. The relay raced: when its push
// round came before A's next status, it sent the entry back (seen once
// under load); it now notes the sender before it signals growth
// (relay TestRelayDoesNotPushAnAuthorsOwnEntryBack). A receives from the
// relay far less than the entry it wrote.
func TestRelayDoesNotEchoOwnEntries(t *testing.T) {
	r := revokeTestRelay(t, io.Discard)
	a, folderA := testNode(t)
	if err := a.API().ChangeRelay(a.vaultsNow()[0].id, r.Addrs()[0], false); err != nil {
		t.Fatal(err)
	}
	relayDev, err := DeviceIDOf(r.ID())
	if err != nil {
		t.Fatal(err)
	}
	unsafe0 := func() error {
		for _, f := range a.Status().Folders {
			if f.Unsafe != 0 {
				return fmt.Errorf("A: %d entries unsafe", f.Unsafe)
			}
		}
		return nil
	}
	waitUntil(t, 30*time.Second, unsafe0) // the first scan's entry is on the relay
	// The watcher may record some files before the scan: count every
	// entry of A's after the mark.
	from := a.vaultsNow()[0].db.Head(a.id.ID()).Seq + 1
	before := a.counters(relayDev).bytesReceived.Load()
	writeInlineBatch(t, a, folderA)
	waitUntil(t, 30*time.Second, unsafe0)
	wrote := entryBytes(t, a.vaultsNow()[0], a.id.ID(), from)
	got := a.counters(relayDev).bytesReceived.Load() - before
	t.Logf("A wrote an entry of %d bytes; the relay sent A %d bytes meanwhile", wrote, got)
	if wrote < 800_000 {
		t.Fatalf("precondition: an entry of %d bytes, want the 300 files' 900 KB", wrote)
	}
	if got > int64(wrote)/4 {
		t.Errorf("the relay sent A %d bytes for A's own entry of %d, want only requests and status", got, wrote)
	}
}
