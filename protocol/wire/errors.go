package wire

import "errors"

// Sentinel errors. Classify with errors.Is: functions wrap them with the
// details (the length seen, the limit).
//
// A truncated frame is reported as io.ErrUnexpectedEOF (wrapped), and a
// stream that ends cleanly between frames as a bare io.EOF, following the
// io package's convention.
var (
	// ErrFrameTooLarge means a frame's length exceeds the reader's maximum,
	// or a payload is too large for WriteFrame to send.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrEmptyFrame means a frame's length is zero: it has no room for the
	// type byte.
	ErrEmptyFrame = errors.New("empty frame")
	// ErrMalformedLength means a frame's length prefix is not a valid
	// minimal uvarint: longer than 10 bytes, overflowing 64 bits, or padded
	// with redundant zero bytes.
	ErrMalformedLength = errors.New("malformed frame length")
	// ErrUnknownType means a frame carries a type code the receiver does not
	// know. ReadFrame itself does not return it (framing is type-agnostic);
	// stream handlers do.
	ErrUnknownType = errors.New("unknown message type")
	// ErrMalformedPayload means a message payload does not parse: a bad
	// count, a field over its limit, trailing bytes, a non-canonical form.
	ErrMalformedPayload = errors.New("malformed message payload")
	// ErrBadVersion means a peer's Hello names a protocol version this side
	// does not speak.
	ErrBadVersion = errors.New("unsupported protocol version")
)
