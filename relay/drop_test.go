package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// TestDropEndsPulls: a drop ends the replica's pulls (their context is the
// replica's), so after Undrop and a fresh enrollment the new replica is
// pulled from a device that stayed connected. (A pull that outlived the
// drop kept the (vault, peer) slot, and the new replica got nothing.)
func TestDropEndsPulls(t *testing.T) {
	r := runRelay(t)
	a := newTestDevice(t)
	m2 := newTestDevice(t)
	x := newTestVault(t, a.id)
	x.add(t, a.id, member.Record{Op: member.OpAddRelay, Relay: r.Addrs()[0]})
	enrolled := x.encoded()                                                                      // 2 records
	x.add(t, a.id, member.Record{Op: member.OpAdd, Device: m2.id.ID(), Role: member.RoleMember}) // record 3: device only
	pulls := answerPulls(t, a, x.id, func() []member.Record { return x.state.Records() }, nil)
	a.connect(t, r)
	if got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, enrolled)); got.typ != wire.MsgRelayStatus {
		t.Fatalf("enroll: %s %v", got.typ, got.err)
	}
	nextPull(t, pulls)
	if err := r.Drop(x.id); err != nil {
		t.Fatal(err)
	}
	go func() { // keep answering
		for {
			select {
			case <-pulls:
			case <-t.Context().Done():
				return
			}
		}
	}()
	if err := r.Undrop(x.id); err != nil {
		t.Fatal(err)
	}
	if got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, enrolled)); got.typ != wire.MsgRelayStatus {
		t.Fatalf("re-enroll: %s %v", got.typ, got.err)
	}
	rep := r.replica(x.id)
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) && rep.memberSeq() < 3 {
		time.Sleep(100 * time.Millisecond)
	}
	if rep.memberSeq() < 3 {
		t.Errorf("after undrop+enroll the new replica was never pulled from the connected device (memberSeq %d, want 3)", rep.memberSeq())
	}
}

// TestDropEndsLogStreams: a log stream open when its vault is dropped ends
// (its context is the replica's), well before the stream's 12 s bound.
func TestDropEndsLogStreams(t *testing.T) {
	lab := newMemberLab(t)
	defer close(lab.release)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := lab.a.h.NewStream(ctx, lab.r.ID(), ProtoLog)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write(append(hello(t, lab.x.id), frame(t, wire.MsgLogRequest, wire.LogRequest{MemberSeq: 3})...)); err != nil {
		t.Fatal(err)
	}
	_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		mt, _ := readLogFrame(t, s)
		if mt == wire.MsgLogStatus {
			break
		}
	}
	if err := lab.r.Drop(lab.x.id); err != nil {
		t.Fatal(err)
	}
	_ = s.SetReadDeadline(time.Now().Add(12 * time.Second)) // past peersRefresh
	var frames []wire.MsgType
	for {
		mt, _, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil {
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("the log stream was still open 12 s after its vault was dropped (frames %v)", frames)
			}
			break
		}
		frames = append(frames, mt)
	}
}

// TestDroppedVaultNotReopened: a vault listed in <home>/dropped whose
// replica directory is still there (a crash between the mark and the
// delete, a failed delete) is not served at the next start: the start
// finishes the drop.
func TestDroppedVaultNotReopened(t *testing.T) {
	home := t.TempDir()
	r1, stop1 := startRelay(t, home)
	a := newTestDevice(t)
	x := newTestVault(t, a.id)
	x.add(t, a.id, member.Record{Op: member.OpAddRelay, Relay: r1.Addrs()[0]})
	answerPulls(t, a, x.id, func() []member.Record { return nil }, make(chan struct{}))
	a.connect(t, r1)
	if got := open(t, a, r1, ProtoRelay, enrollFrame(t, x.id, x.encoded())); got.typ != wire.MsgRelayStatus {
		t.Fatalf("enroll: %s %v", got.typ, got.err)
	}
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	if err := markDropped(home, x.id, false); err != nil {
		t.Fatal(err)
	}
	r2, stop2 := startRelay(t, home)
	defer stop2()
	if !r2.dropped[x.id] {
		t.Fatal("not read as dropped")
	}
	if r2.replica(x.id) != nil {
		t.Errorf("vault %s is in <home>/dropped yet served after a restart", x.id)
	}
	if _, err := os.Stat(replicaDir(home, x.id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dropped vault's directory after a restart: %v, want it deleted", err)
	}
}

// TestAdminRefusesCrossSite: with no token (the default), a cross-site
// browser POST to /admin/drop (no preflight needed) is refused and the
// vault stays.
func TestAdminRefusesCrossSite(t *testing.T) {
	lab := newMemberLab(t)
	defer close(lab.release)
	addr, err := lab.r.ServeMetrics(t.Context(), "127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://%s/admin/drop?vault=%s", addr, lab.x.id), nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || lab.r.replica(lab.x.id) == nil {
		t.Errorf("cross-site POST /admin/drop answered %d (want 403); vault still served: %v", resp.StatusCode, lab.r.replica(lab.x.id) != nil)
	}
}
