package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/weftsync/weft/protocol/wire"
)

// These tests check what the log stream leaves out: membership records and
// entries the opener holds, and entries of other authors while the opener
// may still get them from their author (forwardDelay). They do not depend
// on timing: each asserts an order the answerer's loop fixes (what is sent
// before its first LogStatus) or a state it waits for.

// frame is one frame read from a log stream.
type frame struct {
	t wire.MsgType
	p []byte
}

// openLogAs opens a log stream from h to n and sends req.
func openLogAs(t *testing.T, h host.Host, n *Node, req wire.LogRequest) network.Stream {
	t.Helper()
	s, err := h.NewStream(context.Background(), n.host.ID(), ProtoLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Reset() })
	v := n.vaultsNow()[0]
	_ = wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: v.id}.AppendBinary(nil))
	_ = wire.WriteFrame(s, wire.MsgLogRequest, req.AppendBinary(nil))
	_ = s.SetReadDeadline(time.Now().Add(30 * time.Second))
	if mt, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil || mt != wire.MsgHello {
		t.Fatalf("got %v %v, want the answerer's Hello", mt, err)
	}
	return s
}

// readUntil reads frames until stop returns true for one (included).
func readUntil(t *testing.T, s network.Stream, stop func(frame) bool) []frame {
	t.Helper()
	var got []frame
	for {
		mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil {
			t.Fatalf("reading the log stream after %d frames: %v", len(got), err)
		}
		f := frame{mt, p}
		got = append(got, f)
		if stop(f) {
			return got
		}
	}
}

func isStatus(f frame) bool { return f.t == wire.MsgLogStatus }

func countType(fs []frame, mt wire.MsgType) int {
	c := 0
	for _, f := range fs {
		if f.t == mt {
			c++
		}
	}
	return c
}

// TestLogStreamSendsOnlyNewerMembers checks that the answerer sends the
// membership records after the opener's MemberSeq and no others: a device
// holding all of them gets none.
func TestLogStreamSendsOnlyNewerMembers(t *testing.T) {
	n, _ := testNode(t)
	h, _ := joinAsMember(t, n)
	_, _ = joinAsMember(t, n)
	v := n.vaultsNow()[0]
	held := v.roster.Seq()
	if held < 3 {
		t.Fatalf("got membership sequence %d, want at least 3 (genesis and two adds)", held)
	}
	tests := []struct {
		name      string
		memberSeq uint64
		want      int
	}{
		{"holds all", held, 0},
		{"holds more than the answerer", held + 5, 0},
		{"holds the genesis", 1, int(held - 1)},
		{"holds none", 0, int(held)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openLogAs(t, h, n, wire.LogRequest{MemberSeq: tt.memberSeq})
			// Records go before the first LogStatus, and more only when
			// the membership grows, which it does not here.
			fs := readUntil(t, s, isStatus)
			if got := countType(fs, wire.MsgMember); got != tt.want {
				t.Fatalf("got %d membership records, want %d", got, tt.want)
			}
			var st wire.LogStatus
			st, err := wire.ParseLogStatus(fs[len(fs)-1].p)
			if err != nil {
				t.Fatal(err)
			}
			if st.MemberSeq != held {
				t.Fatalf("status member seq: got %d, want %d", st.MemberSeq, held)
			}
		})
	}
}
