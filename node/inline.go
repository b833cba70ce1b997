package node

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
)

// Inline contents (files of at most entry.InlineLimit bytes, carried in
// the entry itself) are not kept in the version graph's bodies: at 100,000
// small files they were half of an agent's live heap (101 of 202 MB,
// docs/benchmarks.md "Footprint"), for content that sits in the log and,
// once applied, in the folder too. addBodyLocked moves each version's
// inline bytes into a small bounded cache instead, where the applier
// finds the versions it is about to write (they were just received); a
// version needed later (a restore, a merge base, a conflict copy of an old
// version) is read back from the log with its whole entry, which refills
// the cache with that entry's other versions.

// inlineCacheBytes bounds the cache: enough for the newest entries of a
// first sync of small notes to be applied without re-reading the log.
const inlineCacheBytes = 8 << 20

// inlineCache holds recent versions' inline bytes, evicting the oldest
// first. It is safe for concurrent use.
type inlineCache struct {
	// reads counts entries read back from the log for their inline bytes
	// (cache misses of withInline).
	reads atomic.Int64

	mu    sync.Mutex
	data  map[protocol.VersionID][]byte
	order []protocol.VersionID // insertion order, for eviction
	bytes int
}

func (c *inlineCache) put(id protocol.VersionID, b []byte) {
	if len(b) == 0 || len(b) > inlineCacheBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data == nil {
		c.data = map[protocol.VersionID][]byte{}
	}
	if _, ok := c.data[id]; ok {
		return
	}
	c.data[id] = b
	c.order = append(c.order, id)
	c.bytes += len(b)
	for c.bytes > inlineCacheBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.data[old])
		delete(c.data, old)
	}
	if cap(c.order) > 4*len(c.order)+64 { // let the evicted prefix go
		c.order = append([]protocol.VersionID(nil), c.order...)
	}
}

func (c *inlineCache) get(id protocol.VersionID) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.data[id]
	return b, ok
}

// isInline reports whether ver's content travels in its entry: a file
// without chunks and with bytes (entry.Version's rules).
func isInline(ver entry.Version) bool {
	return ver.Kind == entry.KindFile && len(ver.Chunks) == 0 && ver.Size > 0
}

// withInline returns ver (the body of version id, as v.bodies holds it)
// with its inline bytes, from the cache or else from the log. v.mu must
// not be held: a miss reads and decrypts the version's entry.
func (v *vault) withInline(id protocol.VersionID, ver entry.Version) (entry.Version, error) {
	if !isInline(ver) || len(ver.Inline) > 0 {
		return ver, nil
	}
	if b, ok := v.inline.get(id); ok {
		ver.Inline = b
		return ver, nil
	}
	v.inline.reads.Add(1)
	e, err := v.db.Get(id.Author, id.Seq)
	if err != nil {
		return ver, fmt.Errorf("reading the entry of %s for its content: %w", ver.Path, err)
	}
	body, err := v.crypt.OpenStoredBody(e)
	if err != nil {
		return ver, fmt.Errorf("reading the entry of %s for its content: %w", ver.Path, err)
	}
	if int(id.Index) >= len(body.Versions) {
		return ver, fmt.Errorf("reading the entry of %s: version %d of %d", ver.Path, id.Index, len(body.Versions))
	}
	for i, bv := range body.Versions {
		v.inline.put(e.VersionID(i), bv.Inline)
	}
	got := body.Versions[id.Index]
	if got.Path != ver.Path || got.Hash != ver.Hash {
		return ver, fmt.Errorf("reading the entry of %s: the log holds another version there", ver.Path)
	}
	ver.Inline = got.Inline
	return ver, nil
}
