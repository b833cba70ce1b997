package folder

import (
	"context"
	"fmt"
	"io"

	"github.com/weftsync/weft/protocol/chunk"
)

// Hasher summarises a file's content while the scanner reads it. The node
// plugs in chunking and sealing; BLAKE3Hasher is a simple default.
//
// Hash must read r to EOF (or fail): r yields exactly the file's bytes as
// they were when the scan started, size of them, or an error. Hash is
// called from several goroutines at once and must be safe for that. It
// should return promptly with ctx.Err() once ctx is done.
type Hasher interface {
	Hash(ctx context.Context, path string, r io.Reader, size int64) (HashResult, error)
}

// HashResult is what a Hasher made of one file.
type HashResult struct {
	// Hash identifies the content; it goes into Record.Hash.
	Hash [32]byte
	// Extra is the Hasher's own data (for the node: the chunk list),
	// carried to the caller untouched.
	Extra any
}

// BLAKE3Hasher hashes the whole file with BLAKE3-256.
type BLAKE3Hasher struct{}

// Hash implements Hasher.
func (BLAKE3Hasher) Hash(ctx context.Context, path string, r io.Reader, size int64) (HashResult, error) {
	h := chunk.NewHasher()
	buf := make([]byte, 128<<10)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return HashResult{}, err
		}
		k, err := r.Read(buf)
		h.Write(buf[:k])
		n += int64(k)
		if err == io.EOF {
			break
		} else if err != nil {
			return HashResult{}, fmt.Errorf("hashing %s: %w", path, err)
		}
	}
	if n != size {
		return HashResult{}, fmt.Errorf("hashing %s: read %d bytes, want %d: %w", path, n, size, ErrUnsettled)
	}
	return HashResult{Hash: h.Sum256()}, nil
}
