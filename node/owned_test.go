package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/wire"
)

// ownedGoroutines counts the live goroutines goRun started (labelled
// weft=node in the goroutine profile).
func ownedGoroutines(t *testing.T) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, block := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(block, `"weft":"node"`) {
			// A block is one stack shared by "N @ ..." goroutines.
			var count int
			if _, err := fmt.Sscan(block, &count); err == nil {
				n += count
			}
		}
	}
	return n
}

// TestRunOwnsItsGoroutines: while a member holds a log stream open and the
// node pulls from it, the node's work runs in goroutines goRun labels; once
// Run returns, none of them is left. A goroutine that ignored Run's end
// fails it either way: Run (which waits for them) would not return, or the
// goroutine would outlive it. That Run waits for them before it closes the
// vaults is by construction (goRun joins Run's group), not shown here: the
// handler and pullers also end soon after the host closes.
func TestRunOwnsItsGoroutines(t *testing.T) {
	h, _ := testHome(t)
	n, err := New(Config{Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-", NoWatcher: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	<-n.Ready()

	mh, _ := joinAsMember(t, n)
	v := n.vaultsNow()[0]
	s := openLogStream(t, mh, n, v)
	_ = s.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		mt, _, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil {
			t.Fatalf("reading the catch-up: %v", err)
		}
		if mt == wire.MsgLogStatus {
			break // the handler is now parked, serving growth
		}
	}
	if got := ownedGoroutines(t); got == 0 {
		t.Fatal("no goroutine of the node is labelled while it serves a stream: the check below would prove nothing")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of its context ending: a goroutine it waits for does not stop")
	}
	if got := ownedGoroutines(t); got != 0 {
		var b bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Fatalf("%d goroutines of the node outlive Run:\n%s", got, b.String())
	}
}
