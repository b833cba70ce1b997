package localchunks

import (
	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/keeper"
	"github.com/weftsync/weft/node/keyring"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// Source re-creates the chunks this device holds of a vault without
// asking a peer: from the folder's files where the index says a chunk
// lies (Files), else from the local version store (node/keeper);
// a chunk-list piece from the database. The restore, the merge, the
// applier's copies of unchanged chunks and the chunk server all read
// through it.
type Source struct {
	Files *Files
	Keep  *keeper.Keeper
	Crypt *keyring.Ring
	DB    *vaultdb.DB
}

// Plaintext re-creates a chunk's plaintext from the local folder: it
// reads the bytes where the index says the chunk lies, after checking the
// file has not changed since it was scanned, and checks them by their
// plaintext identity when it is known (seal.IDs), else by sealing them;
// else it opens the chunk from the local version store. The plaintext is
// newly allocated.
func (l Source) Plaintext(c cid.Cid) ([]byte, error) { return l.PlaintextInto(nil, c) }

// PlaintextInto is Plaintext reading a folder file's bytes into
// buf's array when it has room (the receiver's pooled buffers).
func (l Source) PlaintextInto(buf []byte, c cid.Cid) ([]byte, error) {
	_, plain, err := l.Files.ChunkInto(c, buf, nil, false)
	if err == nil {
		return plain, nil
	}
	if e, serr := l.Keep.Envelope(c); serr == nil {
		if p, oerr := l.Crypt.OpenChunk(c, e); oerr == nil {
			return p, nil
		}
	}
	return nil, err
}

// Envelope re-creates a chunk's envelope for a peer: from a folder
// file, else from the local version store. The envelope is newly
// allocated.
func (l Source) Envelope(c cid.Cid) ([]byte, error) {
	out, _, err := l.AppendEnvelope(nil, c, nil)
	return out, err
}

// AppendEnvelope is Envelope appending the envelope to dst, with
// scratch (grown when short, and returned for the next call) holding the
// plaintext read from the folder: the server of a chunk stream calls it
// with pooled buffers, so serving a chunk allocates no chunk-sized
// buffer. On error dst is returned unchanged.
func (l Source) AppendEnvelope(dst []byte, c cid.Cid, scratch []byte) (out, scratchOut []byte, err error) {
	if entry.IsPieceCID(c) {
		b, err := l.DB.PieceBytes(c) // pieces.go
		if err != nil {
			return dst, scratch, err
		}
		return append(dst, b...), scratch, nil
	}
	out, scratch, err = l.Files.ChunkInto(c, scratch, dst, true)
	if err != nil {
		if e, serr := l.Keep.Envelope(c); serr == nil {
			return append(dst, e...), scratch, nil
		}
		return dst, scratch, err
	}
	return out, scratch, nil
}
