package vaultdb

import (
	"fmt"
	"os"
	"path/filepath"
)

// RewriteMembers replaces member/members.log with the membership records
// held, in order, and nothing else: damaged bytes, records that never
// applied and duplicates are gone, so the next Open reports no damage. A
// node calls it once membership lost to damage has been fetched again from
// a peer (records appended after damage are kept by Open anyway, but the
// damage would be reported at every Open). The records go to
// members.log.new, which is fsynced and renamed over members.log, and the
// directory fsynced: a crash leaves one whole file or the other.
func (db *DB) RewriteMembers() error { return db.members.rewrite() }

func (m *memberLog) rewrite() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil {
		return ErrClosed
	}
	var buf []byte
	for _, r := range m.state.Records() {
		buf = appendFrame(buf, r.Encode())
	}
	tmp := m.path + ".new"
	f, err := m.fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("creating new membership log: %w", err)
	}
	err = func() error {
		if _, err := f.WriteAt(buf, 0); err != nil {
			return fmt.Errorf("writing new membership log: %w", err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("syncing new membership log: %w", err)
		}
		return m.fsys.Rename(tmp, m.path)
	}()
	if err != nil {
		f.Close()
		m.fsys.Remove(tmp)
		return fmt.Errorf("replacing membership log: %w", err)
	}
	// The renamed file is the log now (whether or not the directory sync
	// below succeeds); the old handle points at the replaced one.
	m.f.Close()
	m.f, m.size, m.dirty = f, int64(len(buf)), false
	if err := syncDir(m.fsys, filepath.Dir(m.path)); err != nil {
		return fmt.Errorf("syncing membership directory: %w", err)
	}
	return nil
}
