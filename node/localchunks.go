package node

import (
	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/keeper"
	"github.com/weftsync/weft/node/keyring"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// localChunks re-creates the chunks this device holds of a vault without
// asking a peer: from the folder's files where the index says a chunk
// lies (folderChunks), else from the local version store (node/keeper);
// a chunk-list piece from the database. The restore, the merge, the
// applier's copies of unchanged chunks and the chunk server all read
// through it.
type localChunks struct {
	files *folderChunks
	keep  *keeper.Keeper
	crypt *keyring.Ring
	db    *vaultdb.DB
}

// plaintext re-creates a chunk's plaintext from the local folder: it
// reads the bytes where the index says the chunk lies, after checking the
// file has not changed since it was scanned, and checks them by their
// plaintext identity when it is known (seal.IDs), else by sealing them;
// else it opens the chunk from the local version store. The plaintext is
// newly allocated.
func (l localChunks) plaintext(c cid.Cid) ([]byte, error) { return l.plaintextInto(nil, c) }

// plaintextInto is plaintext reading a folder file's bytes into
// buf's array when it has room (the receiver's pooled buffers).
func (l localChunks) plaintextInto(buf []byte, c cid.Cid) ([]byte, error) {
	_, plain, err := l.files.chunkInto(c, buf, nil, false)
	if err == nil {
		return plain, nil
	}
	if e, serr := l.keep.Envelope(c); serr == nil {
		if p, oerr := l.crypt.OpenChunk(c, e); oerr == nil {
			return p, nil
		}
	}
	return nil, err
}

// envelope re-creates a chunk's envelope for a peer: from a folder
// file, else from the local version store. The envelope is newly
// allocated.
func (l localChunks) envelope(c cid.Cid) ([]byte, error) {
	out, _, err := l.appendEnvelope(nil, c, nil)
	return out, err
}

// appendEnvelope is envelope appending the envelope to dst, with
// scratch (grown when short, and returned for the next call) holding the
// plaintext read from the folder: the server of a chunk stream calls it
// with pooled buffers, so serving a chunk allocates no chunk-sized
// buffer. On error dst is returned unchanged.
func (l localChunks) appendEnvelope(dst []byte, c cid.Cid, scratch []byte) (out, scratchOut []byte, err error) {
	if entry.IsPieceCID(c) {
		b, err := l.db.PieceBytes(c) // pieces.go
		if err != nil {
			return dst, scratch, err
		}
		return append(dst, b...), scratch, nil
	}
	out, scratch, err = l.files.chunkInto(c, scratch, dst, true)
	if err != nil {
		if e, serr := l.keep.Envelope(c); serr == nil {
			return append(dst, e...), scratch, nil
		}
		return dst, scratch, err
	}
	return out, scratch, nil
}
