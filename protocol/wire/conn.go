package wire

import (
	"bufio"
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
type Conn struct {
	r       io.Reader
	w       *bufio.Writer
	counter Counter
}

// NewConn wraps rw. counter may be nil.
func NewConn(rw io.ReadWriter, counter Counter) *Conn {
	if counter == nil {
		counter = nopCounter{}
	}
	return &Conn{r: rw, w: bufio.NewWriterSize(rw, 64<<10), counter: counter}
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
	t, p, err := ReadFrame(c.r, MaxFrameSize)
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
	t, p, err := c.Read()
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
	if err := c.Send(MsgHello, Hello{Version: ProtocolVersion, Vault: vault}); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
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
// SendError.
func (c *Conn) ReadHello() (Hello, error) {
	p, err := c.Expect(MsgHello)
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
		return Hello{}, fmt.Errorf("peer speaks protocol version %d", h.Version)
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
