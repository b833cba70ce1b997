package logview

import (
	"sync"
	"sync/atomic"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
)

// Inline contents (files of at most entry.InlineLimit bytes, carried in
// the entry itself) are not kept in the bodies: at 100,000 small files
// they were half of an agent's live heap (101 of 202 MB,
// docs/benchmarks.md "Footprint"), for content that sits in the log and,
// once applied, in the folder too. Fold moves each version's inline bytes
// into a small bounded cache instead, where the applier finds the
// versions it is about to write (they were just received); a version
// needed later (a restore, a merge base, a conflict copy of an old
// version) is read back from the log with its whole entry, which refills
// the cache with that entry's other versions (node's withInline).

// CacheBytes bounds the cache: enough for the newest entries of a
// first sync of small notes to be applied without re-reading the log.
const CacheBytes = 8 << 20

// InlineCache holds recent versions' inline bytes, evicting the oldest
// first. It is safe for concurrent use.
type InlineCache struct {
	// Reads counts entries read back from the log for their inline bytes
	// (cache misses; the vault counts them).
	Reads atomic.Int64

	mu    sync.Mutex
	data  map[protocol.VersionID][]byte
	order []protocol.VersionID // insertion order, for eviction
	bytes int
}

func (c *InlineCache) Put(id protocol.VersionID, b []byte) {
	if len(b) == 0 || len(b) > CacheBytes {
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
	for c.bytes > CacheBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.data[old])
		delete(c.data, old)
	}
	if cap(c.order) > 4*len(c.order)+64 { // let the evicted prefix go
		c.order = append([]protocol.VersionID(nil), c.order...)
	}
}

func (c *InlineCache) Get(id protocol.VersionID) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.data[id]
	return b, ok
}

// IsInline reports whether ver's content travels in its entry: a file
// without chunks and with bytes (entry.Version's rules).
func IsInline(ver entry.Version) bool {
	return ver.Kind == entry.KindFile && len(ver.Chunks) == 0 && ver.Size > 0
}

// Len is how many versions' bytes the cache holds.
func (c *InlineCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.data)
}

// Clear drops every cached content: the next read of each goes to the
// log.
func (c *InlineCache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data, c.order, c.bytes = nil, nil, 0
}
