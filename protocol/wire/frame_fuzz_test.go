package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReadFrame reads frames from arbitrary bytes until an error. It must
// never panic, every error must be one of the documented classes, and every
// frame that parses must re-encode to exactly the bytes it was read from
// (lengths are minimal uvarints, so a frame has one encoding). Reading the
// same bytes into a caller's buffer (Conn.ReadInto's path), one too small
// for some frames, gives the same frames and errors at the same places.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x01, 0x01})
	f.Add([]byte{0x04, 0x11, 'a', 'b', 'c', 0x01, 0x02})
	f.Add([]byte{0x00})
	f.Add([]byte{0x80, 0x00})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add([]byte{0x05, 0x21, 0x00})
	f.Add(AppendFrame(AppendFrame(nil, MsgWantChunks, make([]byte, 300)), MsgChunk, []byte("x")))
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 1 << 12
		r := bytes.NewReader(data)
		ri, into := bytes.NewReader(data), make([]byte, 0, 16)
		for {
			start := len(data) - r.Len()
			typ, payload, err := ReadFrame(r, max)
			ityp, ipayload, ierr := readFrame(ri, max, nil, into)
			if (err == nil) != (ierr == nil) || typ != ityp || !bytes.Equal(payload, ipayload) || r.Len() != ri.Len() {
				t.Fatalf("reading into a buffer: %v %x %v at %d, want %v %x %v at %d", ityp, ipayload, ierr, ri.Len(), typ, payload, err, r.Len())
			}
			if ierr == nil && len(ipayload) <= cap(into) && len(ipayload) > 0 && &ipayload[0] != &into[:1][0] {
				t.Fatalf("a payload of %d bytes was not read into the buffer of %d", len(ipayload), cap(into))
			}
			if err != nil {
				if !(err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrEmptyFrame) ||
					errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrMalformedLength)) {
					t.Fatalf("undocumented error: %v", err)
				}
				if err == io.EOF && start != len(data) {
					t.Fatalf("io.EOF with %d bytes unread", len(data)-start)
				}
				return
			}
			end := len(data) - r.Len()
			if got := AppendFrame(nil, typ, payload); !bytes.Equal(got, data[start:end]) {
				t.Fatalf("re-encoded frame %x differs from input %x", got, data[start:end])
			}
			if len(payload)+1 > max {
				t.Fatalf("payload of %d bytes passed limit %d", len(payload), max)
			}
		}
	})
}
