package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/weftsync/weft/protocol/keys"
)

// Counter is told the payload bytes of each frame a Conn sends and
// receives (framing not included), for per-peer traffic statistics.
type Counter interface {
	Sent(n int)
	Received(n int)
}

// Message is any wire payload.
type Message interface{ AppendBinary([]byte) []byte }

// Conn reads and writes frames on one stream: reads are unbuffered, so no
// frame is over-read and the stream can be handed on after any frame;
// writes are buffered and go out on Flush. A Conn is used by one goroutine
// at a time. Devices and relays share it so that both speak the protocols
// the same way.
//
// Every read has a frame limit (SetReadLimit, or ReadLimit for one frame):
// a frame announcing more is refused with ErrFrameTooLarge before any of
// it is read, so a peer not yet checked can be held to a few KiB
// (MaxHelloFrame). With SetMemory, a Conn also reserves each frame over
// MaxHelloFrame in the resource manager before reading it, so the limits
// per stream, protocol, peer and process bound what peers can make it
// hold (docs/security.md, "Strangers").
type Conn struct {
	r       io.Reader
	w       *bufio.Writer
	counter Counter
	limit   int    // frame limit of Read; MaxFrameSize unless set
	mem     Memory // nil: no reservations
	prio    uint8  // priority of reservations in mem
	held    int    // bytes reserved in mem for the last frame read
}

// Memory is where a Conn reserves the memory of the large frames it reads.
// A libp2p stream's resource scope (network.StreamScope) is one: its
// reservations count against the stream's, protocol's, peer's and
// process's limits, and are released when the stream closes.
type Memory interface {
	ReserveMemory(size int, prio uint8) error
	ReleaseMemory(size int)
}

// Frame limits (type byte plus payload) of the messages read from a peer
// whose right to send more is not yet established, or that need no more.
// Each is the largest frame its message can be, so a valid message always
// fits.
const (
	// MaxHelloFrame bounds a Hello (about 40 bytes) and the first frame of
	// any stream from a peer not yet checked: a PairRequest (at most 67).
	MaxHelloFrame = 4 << 10
	// MaxPairRequestFrame bounds a PairRequest: type, proof length, proof,
	// name length, name.
	MaxPairRequestFrame = 1 + 1 + 64 + 1 + 64
	// MaxLogRequestFrame bounds a LogRequest of MaxVectorAuthors authors.
	MaxLogRequestFrame = 1 + binary.MaxVarintLen64 + MaxVectorAuthors*(32+binary.MaxVarintLen64) + binary.MaxVarintLen64
	// MaxWantChunksFrame bounds a WantChunks of MaxWant CIDs.
	MaxWantChunksFrame = 1 + binary.MaxVarintLen64 + MaxWant*(binary.MaxVarintLen64+maxCIDLen)
	// MaxEnrollFrame bounds an Enroll of MaxEnrollRecords records.
	MaxEnrollFrame = 1 + 32 + binary.MaxVarintLen64 + MaxEnrollRecords*(binary.MaxVarintLen64+maxRecordSize)
)

// ErrNoMemory means the resource manager refused the memory for a frame
// (the Conn's Memory): the peer, its protocol or the process holds as much
// as its limits allow. Nothing past the frame's length has been read.
var ErrNoMemory = errors.New("no memory for the frame")

// NewConn wraps rw. counter may be nil.
func NewConn(rw io.ReadWriter, counter Counter) *Conn {
	if counter == nil {
		counter = nopCounter{}
	}
	return &Conn{r: rw, w: bufio.NewWriterSize(rw, 64<<10), counter: counter, limit: MaxFrameSize}
}

// SetCounter replaces the Conn's counter (nil: none), for a stream whose
// peer is known only after its first frame.
func (c *Conn) SetCounter(counter Counter) {
	if counter == nil {
		counter = nopCounter{}
	}
	c.counter = counter
}

// SetReadLimit sets the frame limit of Read and Expect; max <= 0 means
// MaxFrameSize.
func (c *Conn) SetReadLimit(max int) {
	if max <= 0 || max > MaxFrameSize {
		max = MaxFrameSize
	}
	c.limit = max
}

// SetMemory makes c reserve each frame larger than MaxHelloFrame in m, at
// priority prio (network.ReservationPriority*), before reading it. A
// reservation lasts until the next read or Release; m releases what is
// left when its stream closes.
func (c *Conn) SetMemory(m Memory, prio uint8) {
	c.Release()
	c.mem, c.prio = m, prio
}

// Release gives back the reservation of the last frame read, once the
// caller no longer holds its payload.
func (c *Conn) Release() {
	if c.held > 0 {
		c.mem.ReleaseMemory(c.held)
		c.held = 0
	}
}

// admit reserves a frame of n bytes in c.mem.
func (c *Conn) admit(n int) error {
	c.Release()
	if c.mem == nil || n <= MaxHelloFrame {
		return nil
	}
	if err := c.mem.ReserveMemory(n, c.prio); err != nil {
		return fmt.Errorf("%w: %w", ErrNoMemory, err)
	}
	c.held = n
	return nil
}

type nopCounter struct{}

func (nopCounter) Sent(int)     {}
func (nopCounter) Received(int) {}

// Send writes one frame into the buffer; Flush sends it.
func (c *Conn) Send(t MsgType, m Message) error {
	return c.SendRaw(t, m.AppendBinary(nil))
}

// SendRaw writes one frame carrying an already encoded payload.
func (c *Conn) SendRaw(t MsgType, payload []byte) error {
	if err := WriteFrame(c.w, t, payload); err != nil {
		return fmt.Errorf("writing %s: %w", t, err)
	}
	c.counter.Sent(len(payload))
	return nil
}

// Flush sends the buffered frames.
func (c *Conn) Flush() error {
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("flushing stream: %w", err)
	}
	return nil
}

// SendError tells the peer why the stream ends, best effort.
func (c *Conn) SendError(code ErrorCode, reason string) {
	_ = c.Send(MsgError, Error{Code: code, Reason: reason})
	_ = c.Flush()
}

// Read reads one frame. A peer's Error frame is returned as an Error value
// (use errors.As), never as a message.
func (c *Conn) Read() (MsgType, []byte, error) {
	return c.ReadLimit(c.limit)
}

// ReadLimit is Read with a frame limit of max for this frame only: a
// frame announcing more fails with ErrFrameTooLarge, nothing of it read
// past its length. max <= 0 means MaxFrameSize.
func (c *Conn) ReadLimit(max int) (MsgType, []byte, error) {
	return c.read(max, nil)
}

// ReadInto is Read into buf: a payload that fits in cap(buf) is read into
// buf's array (the returned payload aliases it, valid until the caller
// reuses buf), a larger one as Read does. A reader of many large frames
// (chunks) reuses one buffer instead of allocating, growing and then
// collecting one per frame; buf is memory the caller holds already, so a
// peer that announces a large frame and sends nothing costs no more than
// with Read.
func (c *Conn) ReadInto(buf []byte) (MsgType, []byte, error) {
	return c.read(c.limit, buf)
}

func (c *Conn) read(max int, into []byte) (MsgType, []byte, error) {
	t, p, err := readFrame(c.r, max, c.admit, into)
	if err != nil {
		return 0, nil, err
	}
	c.counter.Received(len(p))
	if t == MsgError {
		e, err := ParseError(p)
		if err != nil {
			return 0, nil, err
		}
		return 0, nil, e
	}
	return t, p, nil
}

// Expect reads one frame and fails with ErrUnexpected unless it has type
// want.
func (c *Conn) Expect(want MsgType) ([]byte, error) {
	return c.ExpectLimit(want, c.limit)
}

// ExpectLimit is Expect with a frame limit of max for this frame only (see
// ReadLimit).
func (c *Conn) ExpectLimit(want MsgType, max int) ([]byte, error) {
	t, p, err := c.ReadLimit(max)
	if err != nil {
		return nil, err
	}
	if t != want {
		return nil, fmt.Errorf("%w: got %s, want %s", ErrUnexpected, t, want)
	}
	return p, nil
}

// ErrUnexpected means a peer sent a message the protocol does not allow at
// that point.
var ErrUnexpected = errors.New("unexpected message")

// OpenHello runs the opener's side of the Hello step: it names the vault
// and waits for the answerer's Hello (or its Error: unknown vault, not a
// member, quota).
func (c *Conn) OpenHello(vault keys.VaultID) error {
	if err := c.SendHello(vault); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	return c.AwaitHello(vault)
}

// SendHello queues the opener's Hello naming vault, unflushed: an opener
// that may speak before the answer (the chunk protocol's want-lists) sends
// its first request behind it and reads the answer's Hello with AwaitHello
// before the first reply, saving the round trip OpenHello waits. An
// answerer that refuses the Hello answers an Error and reads nothing
// after it, so the early request is never acted on.
func (c *Conn) SendHello(vault keys.VaultID) error {
	return c.Send(MsgHello, Hello{Version: ProtocolVersion, Vault: vault})
}

// AwaitHello reads the answerer's Hello (or its Error) and checks that it
// answers for vault.
func (c *Conn) AwaitHello(vault keys.VaultID) error {
	p, err := c.Expect(MsgHello)
	if err != nil {
		return err
	}
	h, err := ParseHello(p)
	if err != nil {
		return err
	}
	if h.Vault != vault {
		return fmt.Errorf("%w: peer answered for another vault", ErrUnexpected)
	}
	return nil
}

// ReadHello runs the first half of the answerer's side: it reads the
// opener's Hello and checks its version, answering an Error on failure.
// The caller then checks the vault and the peer and calls AcceptHello or
// SendError. The opener is not yet known to be anyone, so its first frame
// may be at most MaxHelloFrame bytes: a larger one fails with
// ErrFrameTooLarge, unanswered and unread, and the caller should reset the
// stream.
func (c *Conn) ReadHello() (Hello, error) {
	p, err := c.ExpectLimit(MsgHello, MaxHelloFrame)
	if err != nil {
		return Hello{}, err
	}
	h, err := ParseHello(p)
	if err != nil {
		c.SendError(CodeProtocol, err.Error())
		return Hello{}, err
	}
	if h.Version != ProtocolVersion {
		c.SendError(CodeBadVersion, fmt.Sprintf("protocol version %d not supported", h.Version))
		return Hello{}, fmt.Errorf("%w: peer speaks protocol version %d", ErrBadVersion, h.Version)
	}
	return h, nil
}

// AcceptHello answers the opener's Hello for vault.
func (c *Conn) AcceptHello(vault keys.VaultID) error {
	if err := c.Send(MsgHello, Hello{Version: ProtocolVersion, Vault: vault}); err != nil {
		return err
	}
	return c.Flush()
}
