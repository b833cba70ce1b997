package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"pgregory.net/rapid"
)

type goldenFrame struct {
	name    string
	typ     MsgType
	payload []byte
	frame   []byte
}

// loadGolden parses testdata/frames.txt (format described in its header).
func loadGolden(t *testing.T) []goldenFrame {
	t.Helper()
	src, err := os.ReadFile("testdata/frames.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenFrame
	for i, line := range strings.Split(string(src), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("frames.txt:%d: got %d fields, want 4", i+1, len(f))
		}
		typ, err := strconv.ParseUint(f[1], 16, 8)
		if err != nil {
			t.Fatalf("frames.txt:%d: type: %v", i+1, err)
		}
		var payload []byte
		switch {
		case f[2] == "-":
			payload = []byte{}
		case strings.Contains(f[2], "*"):
			b, n, _ := strings.Cut(f[2], "*")
			bb, err1 := hex.DecodeString(b)
			cnt, err2 := strconv.Atoi(n)
			if err1 != nil || err2 != nil || len(bb) != 1 {
				t.Fatalf("frames.txt:%d: bad repeat payload %q", i+1, f[2])
			}
			payload = bytes.Repeat(bb, cnt)
		default:
			if payload, err = hex.DecodeString(f[2]); err != nil {
				t.Fatalf("frames.txt:%d: payload: %v", i+1, err)
			}
		}
		hdr, withPayload := strings.CutSuffix(f[3], "+payload")
		frame, err := hex.DecodeString(hdr)
		if err != nil {
			t.Fatalf("frames.txt:%d: frame: %v", i+1, err)
		}
		if withPayload {
			frame = append(frame, payload...)
		}
		out = append(out, goldenFrame{f[0], MsgType(typ), payload, frame})
	}
	if len(out) == 0 {
		t.Fatal("frames.txt holds no vectors")
	}
	return out
}

func TestGoldenFrames(t *testing.T) {
	prefix := []byte{0xde, 0xad, 0xbe, 0xef}
	for _, g := range loadGolden(t) {
		t.Run(g.name, func(t *testing.T) {
			got := AppendFrame(append([]byte(nil), prefix...), g.typ, g.payload)
			want := append(append([]byte(nil), prefix...), g.frame...)
			if !bytes.Equal(got, want) {
				t.Errorf("AppendFrame: got %x, want %x", short(got), short(want))
			}

			var w bytes.Buffer
			w.Write(prefix)
			if err := WriteFrame(&w, g.typ, g.payload); err != nil {
				t.Fatalf("WriteFrame: %v", err)
			}
			if !bytes.Equal(w.Bytes(), want) {
				t.Errorf("WriteFrame: got %x, want %x", short(w.Bytes()), short(want))
			}

			r := bytes.NewReader(g.frame)
			typ, payload, err := ReadFrame(r, 0)
			if err != nil {
				t.Fatalf("ReadFrame: %v", err)
			}
			if typ != g.typ || !bytes.Equal(payload, g.payload) {
				t.Errorf("ReadFrame: got (%v, %x), want (%v, %x)", typ, short(payload), g.typ, short(g.payload))
			}
			if r.Len() != 0 {
				t.Errorf("ReadFrame left %d bytes unread, want 0", r.Len())
			}
		})
	}
}

func short(b []byte) []byte {
	if len(b) > 48 {
		return b[:48]
	}
	return b
}

// readerKinds wraps a byte slice in readers with different shapes: with and
// without io.ByteReader, and ones that return little data per call.
var readerKinds = []struct {
	name string
	wrap func([]byte) io.Reader
}{
	{"bytes.Reader", func(b []byte) io.Reader { return bytes.NewReader(b) }},
	{"plain", func(b []byte) io.Reader { return plainReader{bytes.NewReader(b)} }},
	{"one-byte", func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }},
	{"half", func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) }},
	{"data-err", func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) }},
}

// plainReader hides every method but Read.
type plainReader struct{ r io.Reader }

func (p plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Frames of random sizes, some beyond readStep so the growing
		// buffer is exercised, written back to back on one stream.
		n := rapid.IntRange(1, 5).Draw(t, "frames")
		seed := rapid.Uint64().Draw(t, "seed")
		rng := rand.New(rand.NewPCG(seed, 0))
		type fr struct {
			typ     MsgType
			payload []byte
		}
		var frames []fr
		var stream bytes.Buffer
		for i := range n {
			size := rapid.SampledFrom([]int{0, 1, 127, 128, readStep - 1, readStep, readStep + 1, 3*readStep + 7}).Draw(t, "size"+strconv.Itoa(i))
			p := make([]byte, size)
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			typ := MsgType(rapid.Byte().Draw(t, "type"+strconv.Itoa(i)))
			frames = append(frames, fr{typ, p})
			if err := WriteFrame(&stream, typ, p); err != nil {
				t.Fatalf("WriteFrame: %v", err)
			}
		}
		kind := rapid.IntRange(0, len(readerKinds)-1).Draw(t, "reader")
		r := readerKinds[kind].wrap(stream.Bytes())
		for i, want := range frames {
			typ, p, err := ReadFrame(r, 0)
			if err != nil {
				t.Fatalf("frame %d: ReadFrame: %v", i, err)
			}
			if typ != want.typ || !bytes.Equal(p, want.payload) {
				t.Fatalf("frame %d: got (%v, %d bytes), want (%v, %d bytes)", i, typ, len(p), want.typ, len(want.payload))
			}
		}
		if _, _, err := ReadFrame(r, 0); err != io.EOF {
			t.Fatalf("after the last frame: got %v, want io.EOF", err)
		}
	})
}

func TestReadFrameRejects(t *testing.T) {
	hexb := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			panic(err)
		}
		return b
	}
	uv := func(n uint64, rest ...byte) []byte { return append(binary.AppendUvarint(nil, n), rest...) }
	tests := []struct {
		name string
		in   []byte
		max  int
		want error
	}{
		{"clean EOF", nil, 0, io.EOF},
		{"zero length", hexb("00"), 0, ErrEmptyFrame},
		{"one over max", uv(17, 0x01), 16, ErrFrameTooLarge},
		{"one over MaxFrameSize", uv(MaxFrameSize+1, 0x01), 0, ErrFrameTooLarge},
		{"length 2^62", uv(1<<62, 0x01), 0, ErrFrameTooLarge},
		{"length 2^64-1", hexb("ffffffffffffffffff01"), 0, ErrFrameTooLarge},
		{"varint overflows 64 bits", hexb("ffffffffffffffffff02"), 0, ErrMalformedLength},
		{"varint longer than 10 bytes", hexb("8080808080808080808001"), 0, ErrMalformedLength},
		{"varint non-minimal zero", hexb("8000"), 0, ErrMalformedLength},
		{"varint non-minimal one", hexb("810001"), 0, ErrMalformedLength},
		{"EOF inside length", hexb("80"), 0, io.ErrUnexpectedEOF},
		{"EOF before type", hexb("05"), 0, io.ErrUnexpectedEOF},
		{"EOF inside payload", hexb("0511aabb"), 0, io.ErrUnexpectedEOF},
		{"EOF inside large payload", append(uv(1<<20, 0x21), make([]byte, 3*readStep)...), 0, io.ErrUnexpectedEOF},
		{"EOF just before last byte", append(uv(readStep+2, 0x21), make([]byte, readStep)...), 0, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		for _, k := range readerKinds {
			t.Run(tt.name+"/"+k.name, func(t *testing.T) {
				typ, p, err := ReadFrame(k.wrap(tt.in), tt.max)
				if !errors.Is(err, tt.want) {
					t.Fatalf("got error %v, want %v", err, tt.want)
				}
				if tt.want == io.EOF && err != io.EOF {
					t.Errorf("got %#v, want io.EOF unwrapped", err)
				}
				if typ != 0 || p != nil {
					t.Errorf("got (%v, %d bytes) with the error, want (0, nil)", typ, len(p))
				}
			})
		}
	}
}

func TestReadFrameReaderError(t *testing.T) {
	boom := errors.New("stream reset")
	for _, n := range []int{0, 1, 2, 5} {
		src := io.MultiReader(bytes.NewReader(AppendFrame(nil, MsgEntry, []byte("abcdef"))[:n]), iotest.ErrReader(boom))
		_, _, err := ReadFrame(src, 0)
		if !errors.Is(err, boom) {
			t.Errorf("failing after %d bytes: got %v, want %v", n, err, boom)
		}
	}
}

// TestReadFrameNoOverRead: a reader on a libp2p stream must leave the bytes
// after the frame in the stream.
func TestReadFrameNoOverRead(t *testing.T) {
	first := AppendFrame(nil, MsgHello, []byte("hi"))
	rest := []byte("protocol switches here")
	src := bytes.NewReader(append(append([]byte(nil), first...), rest...))
	for _, k := range []struct {
		name string
		r    io.Reader
	}{{"plain", plainReader{src}}, {"one-byte", iotest.OneByteReader(src)}} {
		src.Reset(append(append([]byte(nil), first...), rest...))
		if _, _, err := ReadFrame(k.r, 0); err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		left, _ := io.ReadAll(src)
		if !bytes.Equal(left, rest) {
			t.Errorf("%s: left %q in the stream, want %q", k.name, left, rest)
		}
	}
}

func TestReadFrameMaxDefault(t *testing.T) {
	frame := AppendFrame(nil, MsgChunk, make([]byte, MaxFrameSize-1))
	if _, p, err := ReadFrame(bytes.NewReader(frame), 0); err != nil || len(p) != MaxFrameSize-1 {
		t.Errorf("frame of exactly MaxFrameSize: got (%d bytes, %v), want (%d bytes, nil)", len(p), err, MaxFrameSize-1)
	}
	if _, _, err := ReadFrame(bytes.NewReader(frame), MaxFrameSize-1); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("same frame with max one less: got %v, want ErrFrameTooLarge", err)
	}
}

func TestWriteFrameTooLarge(t *testing.T) {
	var w bytes.Buffer
	err := WriteFrame(&w, MsgChunk, make([]byte, MaxFrameSize))
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("got %v, want ErrFrameTooLarge", err)
	}
	if w.Len() != 0 {
		t.Errorf("wrote %d bytes on error, want 0", w.Len())
	}
}

func TestWriteFrameError(t *testing.T) {
	boom := errors.New("stream reset")
	for _, size := range []int{10, smallWrite + 1} {
		if err := WriteFrame(failWriter{boom}, MsgEntry, make([]byte, size)); !errors.Is(err, boom) {
			t.Errorf("payload %d: got %v, want %v", size, err, boom)
		}
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// bytesAllocated runs f n times and returns the heap bytes allocated per run.
func bytesAllocated(n int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(n)
}

// TestHostileLengthAllocatesNothingLarge: a length of 2^62 is rejected
// before allocation, and a legal but unfulfilled 8 MiB claim costs at most
// readStep, not 8 MiB.
func TestHostileLengthAllocatesNothingLarge(t *testing.T) {
	tests := []struct {
		name  string
		in    []byte
		limit uint64
	}{
		{"length 2^62", append(binary.AppendUvarint(nil, 1<<62), 0x21, 0, 0), 1 << 10},
		{"max length, 100 bytes sent", append(binary.AppendUvarint(nil, MaxFrameSize), append([]byte{0x21}, make([]byte, 100)...)...), readStep + 1<<10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range readerKinds[:2] {
				r := k.wrap(tt.in)
				got := bytesAllocated(50, func() {
					r = k.wrap(tt.in)
					if _, _, err := ReadFrame(r, 0); err == nil {
						t.Fatal("ReadFrame accepted a hostile frame")
					}
				})
				t.Logf("%s: %d bytes allocated per read", k.name, got)
				if got > tt.limit {
					t.Errorf("%s: got %d bytes allocated per read, want <= %d", k.name, got, tt.limit)
				}
			}
			allocs := testing.AllocsPerRun(50, func() { _, _, _ = ReadFrame(bytes.NewReader(tt.in), 0) })
			if allocs > 8 {
				t.Errorf("got %v allocations per read, want <= 8", allocs)
			}
		})
	}
}

// TestReadFrameBufio: a bufio.Reader is used through its ByteReader, so a
// caller that does want buffering gets it without a byte-at-a-time penalty.
func TestReadFrameBufio(t *testing.T) {
	var stream bytes.Buffer
	for i := range 3 {
		stream.Write(AppendFrame(nil, MsgEntry, bytes.Repeat([]byte{byte(i)}, 1000*i)))
	}
	br := bufio.NewReader(&stream)
	for i := range 3 {
		typ, p, err := ReadFrame(br, 0)
		if err != nil || typ != MsgEntry || len(p) != 1000*i {
			t.Fatalf("frame %d: got (%v, %d bytes, %v), want (Entry, %d bytes, nil)", i, typ, len(p), err, 1000*i)
		}
	}
}

func TestMsgTypeString(t *testing.T) {
	tests := []struct {
		t     MsgType
		want  string
		known bool
	}{
		{MsgHello, "Hello", true},
		{MsgChunkMissing, "ChunkMissing", true},
		{msgReserved, "MsgType(0x00)", false},
		{0x7f, "MsgType(0x7f)", false},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("String(%d): got %q, want %q", byte(tt.t), got, tt.want)
		}
		if got := tt.t.Known(); got != tt.known {
			t.Errorf("Known(%d): got %v, want %v", byte(tt.t), got, tt.known)
		}
	}
}
