package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/weftsync/weft/protocol/keys"
)

// rw is a Conn's stream in tests: reads from in, writes to out.
type rw struct {
	in  *bytes.Reader
	out bytes.Buffer
}

func (s *rw) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s *rw) Write(p []byte) (int, error) { return s.out.Write(p) }

// consumed is how many bytes of the input the Conn has read.
func (s *rw) consumed() int { return int(s.in.Size()) - s.in.Len() }

func hugeFrame(t MsgType, n int) []byte {
	return AppendFrame(nil, t, bytes.Repeat([]byte{7}, n))
}

func TestReadHelloRefusesLargeFirstFrame(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"8 MiB hello", hugeFrame(MsgHello, MaxFrameSize-1)},
		{"8 MiB pair request on a hello stream", hugeFrame(MsgPairRequest, MaxFrameSize-1)},
		{"one byte over", hugeFrame(MsgHello, MaxHelloFrame)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &rw{in: bytes.NewReader(tt.in)}
			c := NewConn(s, nil)
			_, err := c.ReadHello()
			if !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("got %v, want ErrFrameTooLarge", err)
			}
			if got := s.consumed(); got > 4 {
				t.Fatalf("read %d bytes of the frame, want only its length (at most 4)", got)
			}
			if s.out.Len() != 0 {
				t.Fatalf("answered %d bytes, want nothing (the caller resets the stream)", s.out.Len())
			}
		})
	}
}

func TestReadHelloAcceptsHello(t *testing.T) {
	h := Hello{Version: ProtocolVersion, Vault: keys.VaultID{1, 2}}
	s := &rw{in: bytes.NewReader(AppendFrame(nil, MsgHello, h.AppendBinary(nil)))}
	got, err := NewConn(s, nil).ReadHello()
	if err != nil || got != h {
		t.Fatalf("got %v, %v; want %v", got, err, h)
	}
}

func TestReadLimit(t *testing.T) {
	payload := bytes.Repeat([]byte{1}, 1000)
	frame := AppendFrame(nil, MsgEntry, payload)
	tests := []struct {
		name    string
		limit   int // SetReadLimit
		once    int // ReadLimit's max; 0: use Read
		wantErr error
	}{
		{"fits the conn's limit", 1001, 0, nil},
		{"over the conn's limit", 1000, 0, ErrFrameTooLarge},
		{"over the one-frame limit", 0, 1000, ErrFrameTooLarge},
		{"one-frame limit above the conn's", 10, 1001, nil},
		{"default is MaxFrameSize", 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewConn(&rw{in: bytes.NewReader(frame)}, nil)
			if tt.limit != 0 {
				c.SetReadLimit(tt.limit)
			}
			var p []byte
			var err error
			if tt.once != 0 {
				_, p, err = c.ReadLimit(tt.once)
			} else {
				_, p, err = c.Read()
			}
			if !errors.Is(err, tt.wantErr) || (err == nil && !bytes.Equal(p, payload)) {
				t.Fatalf("got %d bytes, %v; want error %v", len(p), err, tt.wantErr)
			}
		})
	}
}

// fakeMemory is a resource scope with a byte budget.
type fakeMemory struct {
	budget, held, peak int
	prios              []uint8
}

func (m *fakeMemory) ReserveMemory(n int, prio uint8) error {
	m.prios = append(m.prios, prio)
	if m.held+n > m.budget {
		return errors.New("resource limit exceeded")
	}
	m.held += n
	m.peak = max(m.peak, m.held)
	return nil
}

func (m *fakeMemory) ReleaseMemory(n int) {
	m.held -= n
	if m.held < 0 {
		panic("released more than reserved")
	}
}

func TestConnReservesLargeFrames(t *testing.T) {
	small := AppendFrame(nil, MsgHello, make([]byte, 100))
	large := AppendFrame(nil, MsgEntry, make([]byte, 100_000))
	var in []byte
	in = append(in, small...)
	in = append(in, large...)
	in = append(in, large...)
	in = append(in, large...)
	s := &rw{in: bytes.NewReader(in)}
	c := NewConn(s, nil)
	m := &fakeMemory{budget: 150_000}
	c.SetMemory(m, 101)
	if _, _, err := c.Read(); err != nil || m.held != 0 {
		t.Fatalf("small frame: err %v, held %d; want nil, 0 (small frames are not reserved)", err, m.held)
	}
	for i := 0; i < 2; i++ {
		if _, _, err := c.Read(); err != nil {
			t.Fatalf("large frame %d: %v", i, err)
		}
		if m.held != 100_001 {
			t.Fatalf("large frame %d: held %d, want 100001 (the last frame only)", i, m.held)
		}
	}
	c.Release()
	if m.held != 0 {
		t.Fatalf("after Release: held %d, want 0", m.held)
	}
	m.budget = 50_000
	before := s.consumed()
	_, _, err := c.Read()
	if !errors.Is(err, ErrNoMemory) || !strings.Contains(err.Error(), "resource limit exceeded") {
		t.Fatalf("over budget: got %v, want ErrNoMemory wrapping the scope's error", err)
	}
	if got := s.consumed() - before; got > 4 {
		t.Fatalf("over budget: read %d bytes, want only the length", got)
	}
	if m.peak != 100_001 || m.prios[0] != 101 {
		t.Fatalf("peak %d, prios %v; want 100001 and priority 101", m.peak, m.prios)
	}
}

func TestConnReadErrorFrameNotReserved(t *testing.T) {
	e := Error{Code: CodeNotMember, Reason: "refused"}
	s := &rw{in: bytes.NewReader(AppendFrame(nil, MsgError, e.AppendBinary(nil)))}
	c := NewConn(s, nil)
	m := &fakeMemory{budget: 0}
	c.SetMemory(m, 255)
	_, err := c.ExpectLimit(MsgHello, MaxHelloFrame)
	var got Error
	if !errors.As(err, &got) || got != e {
		t.Fatalf("got %v, want %v", err, e)
	}
	if _, _, err := c.Read(); err != io.EOF {
		t.Fatalf("after the error: got %v, want io.EOF", err)
	}
}

func TestFrameLimitsFitTheirMessages(t *testing.T) {
	var big [][]byte
	for i := 0; i < MaxEnrollRecords; i++ {
		big = append(big, make([]byte, maxRecordSize))
	}
	var vec []VectorEntry
	for i := 0; i < MaxVectorAuthors; i++ {
		var a keys.DeviceID
		a[0], a[1] = byte(i>>8), byte(i)
		vec = append(vec, VectorEntry{Author: a, Seq: 1<<64 - 1})
	}
	tests := []struct {
		name  string
		msg   Message
		limit int
	}{
		{"hello", Hello{Version: 1<<64 - 1}, MaxHelloFrame},
		{"pair request", PairRequest{Proof: make([]byte, 64)}, MaxPairRequestFrame},
		{"log request", LogRequest{Vector: vec, MemberSeq: 1<<64 - 1}, MaxLogRequestFrame},
		{"enroll", Enroll{Records: big}, MaxEnrollFrame},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := 1 + len(tt.msg.AppendBinary(nil)); n > tt.limit {
				t.Fatalf("largest frame %d bytes, limit %d", n, tt.limit)
			}
		})
	}
	if MaxEnrollFrame > MaxFrameSize || MaxLogRequestFrame > MaxFrameSize || MaxWantChunksFrame > MaxFrameSize {
		t.Fatal("a frame limit exceeds MaxFrameSize")
	}
}

// FuzzReadHello: whatever the opener sends, ReadHello never panics, never
// reads past MaxHelloFrame plus the length prefix, and a Hello it accepts
// re-encodes to the bytes read.
func FuzzReadHello(f *testing.F) {
	f.Add(AppendFrame(nil, MsgHello, Hello{Version: ProtocolVersion, Vault: keys.VaultID{3}}.AppendBinary(nil)))
	f.Add(AppendFrame(nil, MsgHello, Hello{Version: ProtocolVersion + 1}.AppendBinary(nil)))
	f.Add(hugeFrame(MsgHello, MaxHelloFrame))
	f.Add([]byte{0xff, 0xff, 0xff, 0x03, byte(MsgHello)})
	f.Add(AppendFrame(nil, MsgPairRequest, []byte{1, 2}))
	f.Fuzz(func(t *testing.T, in []byte) {
		s := &rw{in: bytes.NewReader(in)}
		h, err := NewConn(s, nil).ReadHello()
		if s.consumed() > MaxHelloFrame+3 {
			t.Fatalf("read %d bytes, limit %d plus the length", s.consumed(), MaxHelloFrame)
		}
		if err != nil {
			return
		}
		want := AppendFrame(nil, MsgHello, h.AppendBinary(nil))
		if !bytes.Equal(in[:s.consumed()], want) {
			t.Fatalf("accepted %x, which re-encodes as %x", in[:s.consumed()], want)
		}
	})
}
