package wire

import (
	"bytes"
	"testing"
)

const benchPayload = 64 << 10

// BenchmarkReadFrame64K reads one 64 KiB frame per iteration through a
// bytes.Reader (length via io.ByteReader, payload via one Read).
func BenchmarkReadFrame64K(b *testing.B) {
	frame := AppendFrame(nil, MsgChunk, make([]byte, benchPayload))
	r := bytes.NewReader(frame)
	b.SetBytes(benchPayload)
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(frame)
		if _, _, err := ReadFrame(r, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadFrame64KPlain is the same through a reader without
// io.ByteReader: the length costs one Read call per byte.
func BenchmarkReadFrame64KPlain(b *testing.B) {
	frame := AppendFrame(nil, MsgChunk, make([]byte, benchPayload))
	br := bytes.NewReader(frame)
	r := plainReader{br}
	b.SetBytes(benchPayload)
	b.ReportAllocs()
	for b.Loop() {
		br.Reset(frame)
		if _, _, err := ReadFrame(r, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteFrame64K writes one 64 KiB frame per iteration into a
// reused bytes.Buffer, so the payload is copied once, as a stream's Write
// would copy it into its send buffer.
func BenchmarkWriteFrame64K(b *testing.B) {
	payload := make([]byte, benchPayload)
	var w bytes.Buffer
	w.Grow(benchPayload + 16)
	b.SetBytes(benchPayload)
	b.ReportAllocs()
	for b.Loop() {
		w.Reset()
		if err := WriteFrame(&w, MsgChunk, payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemmove64K is the baseline: copying the same 64 KiB into a fresh
// buffer, which is the floor for ReadFrame (it must allocate and fill one).
func BenchmarkMemmove64K(b *testing.B) {
	src := make([]byte, benchPayload)
	b.SetBytes(benchPayload)
	b.ReportAllocs()
	var sink []byte
	for b.Loop() {
		sink = make([]byte, benchPayload)
		copy(sink, src)
	}
	_ = sink
}
