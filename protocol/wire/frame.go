package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxFrameSize is the largest frame length (type byte plus payload) that any
// weft stream carries, and the default limit of ReadFrame.
//
// A Chunk message is far below it: an envelope of at most
// chunk.MaxEnvelopeSize (256 KiB of chunk data plus 54 bytes) and its CID.
// The largest messages are Entries, valid up to entry.MaxEntrySize (16 MiB)
// but sendable only when they fit one frame, so this is the practical bound
// on an entry (about 100,000 chunk references at about 80 bytes each;
// docs/protocol/entries.md, "Limits"). A malicious peer can make a reader
// hold at most 8 MiB per stream, and only by actually sending it (see
// ReadFrame). A stream that needs less should pass a smaller limit.
const MaxFrameSize = 8 << 20

// readStep is the first buffer ReadFrame allocates for a payload larger than
// it; the buffer then doubles as bytes arrive. A peer that announces a large
// frame and sends nothing costs the reader readStep bytes, not the announced
// length.
const readStep = 64 << 10

// smallWrite is the largest payload WriteFrame copies behind the header to
// send the frame in one Write (on a yamux stream each Write is a data frame
// of its own). Larger payloads go out as two Writes rather than be copied.
const smallWrite = 4 << 10

// AppendFrame appends the frame of type t carrying payload to b and returns
// the extended slice. It is pure and does not check the size against
// MaxFrameSize: WriteFrame does, and a frame built here that is too large is
// rejected by the reader.
func AppendFrame(b []byte, t MsgType, payload []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(payload))+1)
	b = append(b, byte(t))
	return append(b, payload...)
}

// WriteFrame writes one frame of type t carrying payload to w. It returns
// ErrFrameTooLarge, writing nothing, if the frame would exceed MaxFrameSize,
// and otherwise the first error from w, wrapped. After a write error the
// stream is in an unknown state and must be closed. WriteFrame does not
// retain payload. It is not safe to call concurrently on one w: frames from
// two goroutines could interleave.
func WriteFrame(w io.Writer, t MsgType, payload []byte) error {
	if len(payload) > MaxFrameSize-1 {
		return fmt.Errorf("writing %v frame: payload of %d bytes: %w (limit %d)", t, len(payload), ErrFrameTooLarge, MaxFrameSize-1)
	}
	if len(payload) <= smallWrite {
		buf := AppendFrame(make([]byte, 0, binary.MaxVarintLen64+1+len(payload)), t, payload)
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("writing %v frame: %w", t, err)
		}
		return nil
	}
	var hdr [binary.MaxVarintLen64 + 1]byte
	n := binary.PutUvarint(hdr[:], uint64(len(payload))+1)
	hdr[n] = byte(t)
	if _, err := w.Write(hdr[:n+1]); err != nil {
		return fmt.Errorf("writing %v frame header: %w", t, err)
	}
	if _, err := w.Write(payload); err != nil {
		return fmt.Errorf("writing %v frame payload: %w", t, err)
	}
	return nil
}

// ReadFrame reads one frame from r and returns its type and payload. The
// payload is a new slice owned by the caller. max bounds the frame length
// (type byte plus payload); max <= 0 means MaxFrameSize.
//
// ReadFrame reads exactly the bytes of one frame and nothing beyond it: the
// length byte by byte (through io.ByteReader when r has it), then the type
// byte and the payload. It never allocates more than readStep bytes before
// the peer has delivered them, whatever length the frame announces.
//
// Outcomes:
//   - nil error: a complete frame.
//   - io.EOF, unwrapped: r ended cleanly before the first byte of a frame.
//   - an error wrapping io.ErrUnexpectedEOF: r ended inside a frame.
//   - an error wrapping ErrMalformedLength, ErrEmptyFrame or
//     ErrFrameTooLarge: the length prefix is hostile or broken. Nothing past
//     the length prefix has been read.
//   - any other error from r, wrapped.
//
// After any error other than io.EOF the stream is out of step and must be
// closed. ReadFrame does not interpret the type: unknown codes are returned
// for the caller to reject.
func ReadFrame(r io.Reader, max int) (MsgType, []byte, error) {
	return readFrame(r, max, nil, nil)
}

// readFrame is ReadFrame with a hook: admit, if not nil, is called with
// the frame length once it is known to be within max and before any byte
// past the length prefix is read; an error from it ends the read with
// that error (the stream is then out of step).
//
// A payload that fits in cap(into) is read into into's array; a larger
// one into a buffer of its own, grown as bytes arrive (readPayload).
func readFrame(r io.Reader, max int, admit func(n int) error, into []byte) (MsgType, []byte, error) {
	if max <= 0 {
		max = MaxFrameSize
	}
	br := byteReader(r)
	n, err := readLength(br)
	if err != nil {
		return 0, nil, err
	}
	if n == 0 {
		return 0, nil, fmt.Errorf("reading frame: %w", ErrEmptyFrame)
	}
	if n > uint64(max) {
		return 0, nil, fmt.Errorf("reading frame: length %d: %w (limit %d)", n, ErrFrameTooLarge, max)
	}
	if admit != nil {
		if err := admit(int(n)); err != nil {
			return 0, nil, fmt.Errorf("reading frame of %d bytes: %w", n, err)
		}
	}
	tb, err := br.ReadByte()
	if err != nil {
		return 0, nil, fmt.Errorf("reading frame type: %w", noEOF(err))
	}
	t := MsgType(tb)
	var payload []byte
	if m := int(n - 1); into != nil && m <= cap(into) {
		payload = into[:m]
		_, err = io.ReadFull(r, payload)
		err = noEOF(err)
	} else {
		payload, err = readPayload(r, m)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("reading %v frame payload (%d bytes): %w", t, n-1, err)
	}
	return t, payload, nil
}

// readLength reads a minimal uvarint one byte at a time.
func readLength(br io.ByteReader) (uint64, error) {
	var x uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		c, err := br.ReadByte()
		if err != nil {
			if err == io.EOF && i == 0 {
				return 0, io.EOF // clean end of stream between frames
			}
			return 0, fmt.Errorf("reading frame length: %w", noEOF(err))
		}
		if i == binary.MaxVarintLen64-1 && c > 1 {
			return 0, fmt.Errorf("reading frame length: %w: overflows 64 bits", ErrMalformedLength)
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, fmt.Errorf("reading frame length: %w: %d bytes where fewer suffice", ErrMalformedLength, i+1)
			}
			return x, nil
		}
	}
	return 0, fmt.Errorf("reading frame length: %w: longer than %d bytes", ErrMalformedLength, binary.MaxVarintLen64)
}

// readPayload reads exactly n bytes, growing its buffer only as bytes
// arrive once n exceeds readStep.
func readPayload(r io.Reader, n int) ([]byte, error) {
	size := min(n, readStep)
	buf := make([]byte, size)
	got := 0
	for {
		m, err := io.ReadFull(r, buf[got:])
		got += m
		if err != nil {
			return nil, noEOF(err)
		}
		if got == n {
			return buf, nil
		}
		next := make([]byte, min(2*len(buf), n))
		copy(next, buf)
		buf = next
	}
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF: inside a frame, the end of
// the stream is always unexpected.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// byteReader returns r's own io.ByteReader if it has one, or an adapter
// that reads one byte per call, so no byte beyond the frame is consumed.
func byteReader(r io.Reader) io.ByteReader {
	if br, ok := r.(io.ByteReader); ok {
		return br
	}
	return &oneByteReader{r: r}
}

type oneByteReader struct {
	r   io.Reader
	buf [1]byte
}

func (o *oneByteReader) ReadByte() (byte, error) {
	if _, err := io.ReadFull(o.r, o.buf[:]); err != nil {
		return 0, err
	}
	return o.buf[0], nil
}
