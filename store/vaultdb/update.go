package vaultdb

import (
	"encoding/binary"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// Update collects changes to the node's own state in the index (folder
// records, acknowledged vectors, metadata) that must commit together,
// atomically and synced. Pass it to AppendWith to commit it in the same
// index batch as the entries that caused it, or to Commit alone. Later
// operations on one key win. An Update is not safe for concurrent use and
// must not be changed after it is handed over.
type Update struct {
	b   leveldb.Batch
	err error
}

// Len returns the number of operations collected.
func (u *Update) Len() int { return u.b.Len() }

// PutIndex sets the folder record of path. A path entry.ValidatePath
// rejects, or a record that does not encode, makes the whole Update fail
// with ErrBadUpdate when committed.
func (u *Update) PutIndex(path string, r Record) {
	if err := entry.ValidatePath(path); err != nil {
		u.setErr(fmt.Errorf("folder record %q: %v: %w", path, err, ErrBadUpdate))
		return
	}
	v, err := r.AppendBinary(nil)
	if err != nil {
		u.setErr(fmt.Errorf("folder record %q: %v: %w", path, err, ErrBadUpdate))
		return
	}
	u.b.Put(folderKey(path), v)
}

// DeleteIndex removes the folder record of path, if any.
func (u *Update) DeleteIndex(path string) { u.b.Delete(folderKey(path)) }

// SetAcked records that peer (a device or relay) said it holds author's
// log up to seq. It overwrites what was recorded before, so it can also
// lower the mark (a relay that lost data).
func (u *Update) SetAcked(peer, author keys.DeviceID, seq uint64) {
	u.b.Put(ackKey(peer, author), binary.BigEndian.AppendUint64(nil, seq))
}

// SetMeta stores a small named value (the local Lamport clock, say).
func (u *Update) SetMeta(name string, value []byte) { u.b.Put(metaKey(name), value) }

// DeleteMeta removes a named value.
func (u *Update) DeleteMeta(name string) { u.b.Delete(metaKey(name)) }

func (u *Update) setErr(err error) {
	if u.err == nil {
		u.err = err
	}
}
