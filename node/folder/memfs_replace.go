package folder

import "io/fs"

// RenameNoReplace implements AtomicReplacer.
func (m *MemFS) RenameNoReplace(from, to string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	sd, src, err := m.lookup("rename", from)
	if err != nil {
		return err
	}
	dd, base, err := m.parent("rename", to)
	if err != nil {
		return err
	}
	if _, ok := dd.kids[m.fold.Key(base)]; ok {
		return pathErr("rename", to, fs.ErrExist)
	}
	if src.node.kind == KindDir {
		return pathErr("rename", from, errNotSupportedHere)
	}
	m.unlink(sd, src.name)
	m.link(dd, base, src.node)
	src.node.ctime = m.tick()
	return nil
}

// Exchange implements AtomicReplacer. Each name keeps its spelling; the
// items behind them swap.
func (m *MemFS) Exchange(a, b string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	da, ea, err := m.lookup("exchange", a)
	if err != nil {
		return err
	}
	db, eb, err := m.lookup("exchange", b)
	if err != nil {
		return err
	}
	if ea.node == eb.node {
		return nil
	}
	if ea.node.kind == KindDir || eb.node.kind == KindDir {
		return pathErr("exchange", a, errNotSupportedHere)
	}
	da.kids[m.fold.Key(ea.name)] = memEntry{name: ea.name, node: eb.node}
	db.kids[m.fold.Key(eb.name)] = memEntry{name: eb.name, node: ea.node}
	t := m.tick()
	for _, d := range []*memNode{da, db} {
		d.mtime, d.ctime = t, t
	}
	ea.node.ctime, eb.node.ctime = t, t
	return nil
}
