package node

import (
	"errors"
	"io"

	"github.com/libp2p/go-libp2p/core/network"
)

// Streams are framed by wire.Conn, which devices and relays share.

// isEOF reports whether err is a clean or abrupt end of stream.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, network.ErrReset)
}
