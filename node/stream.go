package node

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// frameConn wraps a libp2p stream with frame reading (unbuffered, so no
// frame is over-read) and buffered frame writing with explicit flushes.
// It counts payload bytes for the peer's counters.
type frameConn struct {
	s       network.Stream
	w       *bufio.Writer
	counter *peerCounters
}

func newFrameConn(s network.Stream, c *peerCounters) *frameConn {
	return &frameConn{s: s, w: bufio.NewWriterSize(s, 64<<10), counter: c}
}

// message is any wire payload.
type message interface{ AppendBinary([]byte) []byte }

// send writes one frame into the buffer; flush sends it.
func (f *frameConn) send(t wire.MsgType, m message) error {
	return f.sendRaw(t, m.AppendBinary(nil))
}

func (f *frameConn) sendRaw(t wire.MsgType, payload []byte) error {
	if err := wire.WriteFrame(f.w, t, payload); err != nil {
		return fmt.Errorf("writing %s: %w", t, err)
	}
	f.counter.sent(len(payload))
	return nil
}

func (f *frameConn) flush() error {
	if err := f.w.Flush(); err != nil {
		return fmt.Errorf("flushing stream: %w", err)
	}
	return nil
}

// sendError tells the peer why the stream ends, best effort.
func (f *frameConn) sendError(code wire.ErrorCode, reason string) {
	_ = f.send(wire.MsgError, wire.Error{Code: code, Reason: reason})
	_ = f.flush()
}

// read reads one frame. A peer's Error frame is returned as a wire.Error.
func (f *frameConn) read() (wire.MsgType, []byte, error) {
	t, p, err := wire.ReadFrame(f.s, wire.MaxFrameSize)
	if err != nil {
		return 0, nil, err
	}
	f.counter.received(len(p))
	if t == wire.MsgError {
		e, err := wire.ParseError(p)
		if err != nil {
			return 0, nil, err
		}
		return 0, nil, e
	}
	return t, p, nil
}

// expect reads one frame and fails unless it has type want.
func (f *frameConn) expect(want wire.MsgType) ([]byte, error) {
	t, p, err := f.read()
	if err != nil {
		return nil, err
	}
	if t != want {
		return nil, fmt.Errorf("%w: got %s, want %s", errUnexpected, t, want)
	}
	return p, nil
}

var errUnexpected = errors.New("unexpected message")

// helloExchange runs the Hello step of a stream. The opener sends first;
// the answerer checks the vault is one it serves and the peer a member,
// and answers Hello or Error.
func (f *frameConn) openHello(vault keys.VaultID) error {
	if err := f.send(wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: vault}); err != nil {
		return err
	}
	if err := f.flush(); err != nil {
		return err
	}
	p, err := f.expect(wire.MsgHello)
	if err != nil {
		return err
	}
	h, err := wire.ParseHello(p)
	if err != nil {
		return err
	}
	if h.Vault != vault {
		return fmt.Errorf("%w: peer answered for another vault", errUnexpected)
	}
	return nil
}

// isEOF reports whether err is a clean or abrupt end of stream.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, network.ErrReset)
}
