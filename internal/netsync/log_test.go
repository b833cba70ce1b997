package netsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// TestStatusSenderSendsChanges checks the LogStatus frames of one stream:
// the whole vector first, then only what changed (or, whole, all of it),
// nothing when nothing did.
func TestStatusSenderSendsChanges(t *testing.T) {
	a, b := keys.DeviceID{2}, keys.DeviceID{3}
	var buf bytes.Buffer
	f := wire.NewConn(&buf, nil)
	steps := []struct {
		held        protocol.Vector
		want, whole []wire.VectorEntry // nil: no frame
	}{
		{protocol.Vector{a: 1, b: 4}, []wire.VectorEntry{{Author: a, Seq: 1}, {Author: b, Seq: 4}}, []wire.VectorEntry{{Author: a, Seq: 1}, {Author: b, Seq: 4}}},
		{protocol.Vector{a: 1, b: 4}, nil, nil},
		{protocol.Vector{a: 2, b: 4}, []wire.VectorEntry{{Author: a, Seq: 2}}, []wire.VectorEntry{{Author: a, Seq: 2}, {Author: b, Seq: 4}}},
		{protocol.Vector{a: 3, b: 5}, []wire.VectorEntry{{Author: a, Seq: 3}, {Author: b, Seq: 5}}, []wire.VectorEntry{{Author: a, Seq: 3}, {Author: b, Seq: 5}}},
		// Less than before (a relay rolled back): whole says so.
		{protocol.Vector{a: 3}, nil, []wire.VectorEntry{{Author: a, Seq: 3}}},
	}
	for _, whole := range []bool{false, true} {
		st := statusSender{whole: whole}
		for i, step := range steps {
			want := step.want
			if whole {
				want = step.whole
			}
			checkStatusStep(t, f, &buf, &st, i, step.held, want)
		}
	}
}

// checkStatusStep sends held through st and checks the frame written
// (want nil: that none was).
func checkStatusStep(t *testing.T, f *wire.Conn, buf *bytes.Buffer, st *statusSender, i int, held protocol.Vector, want []wire.VectorEntry) {
	t.Helper()
	if err := st.send(f, held, 7); err != nil {
		t.Fatal(err)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if want == nil {
		if buf.Len() != 0 {
			t.Fatalf("step %d (whole %v): got %d bytes, want no frame", i, st.whole, buf.Len())
		}
		return
	}
	mt, p, err := wire.ReadFrame(buf, wire.MaxFrameSize)
	if err != nil || mt != wire.MsgLogStatus {
		t.Fatalf("step %d (whole %v): got %v %v, want a LogStatus", i, st.whole, mt, err)
	}
	ls, err := wire.ParseLogStatus(p)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(wire.VectorMap(ls.Vector)) != fmt.Sprint(wire.VectorMap(want)) || ls.MemberSeq != 7 {
		t.Fatalf("step %d (whole %v): got %v (member seq %d), want %v (7)", i, st.whole, ls.Vector, ls.MemberSeq, want)
	}
}

// fakeLog is a LogSource with no entries or records whose held vector and
// growth the test drives.
type fakeLog struct {
	mu    sync.Mutex
	held  protocol.Vector
	grown chan struct{}
}

func (l *fakeLog) Grown() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.grown
}
func (l *fakeLog) Records() []member.Record { return nil }
func (l *fakeLog) Offered() protocol.Vector { return protocol.Vector{} }
func (l *fakeLog) Held() protocol.Vector    { l.mu.Lock(); defer l.mu.Unlock(); return l.held.Clone() }
func (l *fakeLog) grow(held protocol.Vector) {
	l.mu.Lock()
	l.held = held
	close(l.grown)
	l.grown = make(chan struct{})
	l.mu.Unlock()
}
func (l *fakeLog) Range(keys.DeviceID, uint64, uint64, func(*entry.Entry) error) error {
	return errors.New("no entries")
}

// TestLogServerRounds: a round at the start, at each growth and at each
// refresh; a status only when what is held changed; once the opener is no
// longer allowed, a not-member Error and the end of the stream.
func TestLogServerRounds(t *testing.T) {
	a := keys.DeviceID{2}
	src := &fakeLog{held: protocol.Vector{a: 1}, grown: make(chan struct{})}
	_, _, cOpener, cServer := pipe(t)
	rounds := make(chan struct{}, 10)
	var allowed atomic.Bool
	allowed.Store(true)
	done := make(chan error, 1)
	go func() {
		ls := LogServer{
			Source:  src,
			Round:   func(*wire.Conn, protocol.Vector) error { rounds <- struct{}{}; return nil },
			Allowed: allowed.Load,
		}
		done <- ls.Serve(context.Background(), cServer, wire.LogRequest{})
	}()
	status := func() wire.LogStatus {
		t.Helper()
		mt, p, err := cOpener.Read()
		if err != nil || mt != wire.MsgLogStatus {
			t.Fatalf("got %v %v, want a LogStatus", mt, err)
		}
		st, err := wire.ParseLogStatus(p)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := status(); fmt.Sprint(wire.VectorMap(st.Vector)) != fmt.Sprint(protocol.Vector{a: 1}) {
		t.Fatalf("first status %v, want a at 1", st.Vector)
	}
	<-rounds
	src.grow(protocol.Vector{a: 2})
	if st := status(); fmt.Sprint(wire.VectorMap(st.Vector)) != fmt.Sprint(protocol.Vector{a: 2}) {
		t.Fatalf("status after growth %v, want a at 2", st.Vector)
	}
	<-rounds
	allowed.Store(false)
	src.grow(protocol.Vector{a: 2})
	_, _, err := cOpener.Read()
	var we wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeNotMember {
		t.Fatalf("after the refusal: got %v, want a not-member Error", err)
	}
	if err := <-done; !errors.Is(err, ErrNoLongerAllowed) {
		t.Fatalf("Serve: got %v, want ErrNoLongerAllowed", err)
	}
}

// statusSink records the statuses a pull receives, signals each on
// arrived, and ends the pull at the n-th; any other frame is an error.
type statusSink struct {
	n       int
	got     []wire.LogStatus
	arrived chan struct{}
}

var errEnough = errors.New("enough")

func (s *statusSink) Status(st wire.LogStatus) error {
	s.got = append(s.got, st)
	s.arrived <- struct{}{}
	if len(s.got) == s.n {
		return errEnough
	}
	return nil
}
func (s *statusSink) Member([]byte) error                { return errors.New("member") }
func (s *statusSink) Entry([]byte) error                 { return errors.New("entry") }
func (s *statusSink) Peers(wire.Peers) error             { return errors.New("peers") }
func (s *statusSink) RelayStatus(wire.RelayStatus) error { return errors.New("relay status") }
func (s *statusSink) Holds(wire.Holds) error             { return errors.New("holds") }

// TestPullFromLogServer: an opener's PullLog against a LogServer gets
// the first status whole, then only the change at a growth, and ends
// with its sink's error.
func TestPullFromLogServer(t *testing.T) {
	a, b := keys.DeviceID{2}, keys.DeviceID{3}
	src := &fakeLog{held: protocol.Vector{a: 1, b: 1}, grown: make(chan struct{})}
	_, _, cOpener, cServer := pipe(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// The answerer's handler reads the request; Serve answers it.
		p, err := cServer.ExpectLimit(wire.MsgLogRequest, wire.MaxLogRequestFrame)
		if err != nil {
			return
		}
		req, err := wire.ParseLogRequest(p)
		if err != nil {
			return
		}
		_ = LogServer{Source: src}.Serve(ctx, cServer, req)
	}()
	sink := &statusSink{n: 2, arrived: make(chan struct{}, 2)}
	done := make(chan error, 1)
	go func() { done <- PullLog(cOpener, wire.LogRequest{}, sink) }()
	<-sink.arrived // the first status is out: the server waits for growth
	src.grow(protocol.Vector{a: 2, b: 1})
	if err := <-done; !errors.Is(err, errEnough) {
		t.Fatalf("PullLog: got %v, want the sink's error", err)
	}
	want := []string{fmt.Sprint(protocol.Vector{a: 1, b: 1}), fmt.Sprint(protocol.Vector{a: 2})}
	for i, st := range sink.got {
		// Maps print sorted by key; a vector's entries come in any order.
		if got := fmt.Sprint(protocol.Vector(wire.VectorMap(st.Vector))); got != want[i] {
			t.Errorf("status %d: got %s, want %s", i, got, want[i])
		}
	}
}
