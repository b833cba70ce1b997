package vaultdb

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// The membership log is one append-only file, member/members.log, framed
// like the segments. Records are few and rarely written, so there is no
// group commit: each AppendMember writes, fsyncs and returns.

const memberFile = "members.log"

// memberLog holds the membership records and the state folded from them.
type memberLog struct {
	fsys  FS
	path  string
	vault keys.VaultID

	// mu guards the fields below.
	mu    sync.Mutex
	f     File
	size  int64 // durable length of the file
	dirty bool  // a failed write may have left bytes past size
	state *member.State
}

// openMemberLog reads dir/member/members.log, truncates a bad tail, folds
// every record through member.State.Apply and records the outcome in rep.
// A record that does not yet apply because its predecessor is missing is
// kept aside and applied once the predecessor turns up later in the file
// (a record fetched again after damage); what never applies is dropped.
func openMemberLog(fsys FS, dir string, vault keys.VaultID, rep *OpenReport) (*memberLog, error) {
	mdir := filepath.Join(dir, "member")
	if err := fsys.MkdirAll(mdir, 0o700); err != nil {
		return nil, fmt.Errorf("creating membership directory: %w", err)
	}
	path := filepath.Join(mdir, memberFile)
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening membership log: %w", err)
	}
	m := &memberLog{fsys: fsys, path: path, vault: vault, f: f, state: member.NewState(vault)}
	data, err := readAll(fsys, path)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reading membership log: %w", err)
	}
	pending := map[uint64]member.Record{}
	res := scanFrames(data, func(_ int64, _ int, p []byte) {
		r, err := member.Decode(p)
		if err != nil {
			rep.MemberDropped++
			return
		}
		switch {
		case r.Seq <= m.state.Seq:
			// A duplicate, or a record that lost to the one held.
			if m.state.Records()[r.Seq-1].CID() != r.CID() {
				rep.MemberDropped++
			}
			return
		case r.Seq > m.state.Seq+1:
			if _, ok := pending[r.Seq]; !ok {
				pending[r.Seq] = r
			}
			return
		}
		if m.state.Apply(r) != nil {
			rep.MemberDropped++
			return
		}
		for {
			next, ok := pending[m.state.Seq+1]
			if !ok {
				break
			}
			delete(pending, next.Seq)
			if m.state.Apply(next) != nil {
				rep.MemberDropped++
				break
			}
		}
	})
	for s := range pending {
		if s > m.state.Seq {
			rep.MemberDropped++
		}
	}
	name := filepath.Join("member", memberFile)
	for _, d := range res.damage {
		rep.Damage = append(rep.Damage, Damage{File: name, Start: d[0], End: d[1]})
	}
	if res.end < int64(len(data)) {
		err := f.Truncate(res.end)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("truncating membership log: %w", err)
		}
		rep.Truncated = append(rep.Truncated, Damage{File: name, Start: res.end, End: int64(len(data))})
	}
	m.size = res.end
	rep.MemberRecords = len(m.state.Records())
	return m, nil
}

// append validates r with State.Apply and makes it durable. A record
// already held (same sequence and CID) is a no-op; a different record with
// a held sequence number is ErrFork.
func (m *memberLog) append(r member.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil {
		return ErrClosed
	}
	if r.Seq >= 1 && r.Seq <= m.state.Seq {
		if m.state.Records()[r.Seq-1].CID() == r.CID() {
			return nil
		}
		return fmt.Errorf("membership record seq %d: %w", r.Seq, ErrFork)
	}
	if m.dirty {
		if err := m.f.Truncate(m.size); err != nil {
			return fmt.Errorf("cutting back membership log: %w", err)
		}
		m.dirty = false
	}
	held := m.state.Records()
	if err := m.state.Apply(r); err != nil {
		return fmt.Errorf("membership record seq %d: %w", r.Seq, err)
	}
	buf := appendFrame(nil, r.Encode())
	err := func() error {
		if _, err := m.f.WriteAt(buf, m.size); err != nil {
			return fmt.Errorf("writing membership log: %w", err)
		}
		if err := m.f.Sync(); err != nil {
			return fmt.Errorf("syncing membership log: %w", err)
		}
		return nil
	}()
	if err != nil {
		// The bytes past size are lost (see segWriter.append); fold the
		// state again without r.
		if m.f.Truncate(m.size) != nil {
			m.dirty = true
		}
		m.state = fold(m.vault, held[:len(held):len(held)])
		return err
	}
	m.size += int64(len(buf))
	return nil
}

// fold applies records that applied before to a new State.
func fold(vault keys.VaultID, recs []member.Record) *member.State {
	s := member.NewState(vault)
	for _, r := range recs {
		if err := s.Apply(r); err != nil {
			panic("vaultdb: invariant: a held membership record no longer applies: " + err.Error())
		}
	}
	return s
}

func (m *memberLog) records() []member.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]member.Record(nil), m.state.Records()...)
}

func (m *memberLog) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil {
		return nil
	}
	err := m.f.Close()
	m.f = nil
	return err
}
