package folder

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// MemFS is an in-memory FS for tests and the simulation. It models the
// parts of a POSIX file system that weft's durability depends on: a file's
// content and metadata become durable only at File.Sync, and a directory's
// entries (creations, renames, removals) only at SyncDir on that
// directory. Crash throws away everything that was not made durable, as a
// power cut would. It can fold names like a case-insensitive or
// normalisation-insensitive file system (MemFSConfig.Folding), preserving
// the name each entry was created with.
//
// Time is logical: every mutation advances an internal clock by one
// millisecond, which becomes the mtime and ctime of what changed, so runs
// are deterministic. MemFS is safe for concurrent use.
type MemFS struct {
	fold Folding

	// mu guards the fields below and every node.
	mu    sync.Mutex
	root  *memNode
	ino   uint64
	now   int64
	temps int
}

// MemFSConfig configures a MemFS.
type MemFSConfig struct {
	// Folding makes the FS compare names case- or
	// normalisation-insensitively.
	Folding Folding
	// Start is the first logical time in ns (default 1e18, in 2001).
	Start int64
}

type memNode struct {
	ino   uint64
	kind  Kind
	mode  fs.FileMode
	mtime int64
	ctime int64
	data  []byte
	link  string
	kids  map[string]memEntry // by Folding.Key(name)
	dur   memDurable
}

// memDurable is the part of a node that survives Crash.
type memDurable struct {
	data  []byte
	mode  fs.FileMode
	mtime int64
	kids  map[string]memEntry
}

type memEntry struct {
	name string
	node *memNode
}

// NewMemFS returns an empty MemFS (its root is a durable, empty directory).
func NewMemFS(cfg MemFSConfig) *MemFS {
	if cfg.Start == 0 {
		cfg.Start = 1e18
	}
	m := &MemFS{fold: cfg.Folding, now: cfg.Start}
	m.root = m.newNode(KindDir, 0o755)
	return m
}

// Folding returns how this FS compares names.
func (m *MemFS) Folding() Folding { return m.fold }

func (m *MemFS) tick() int64 { m.now += 1e6; return m.now }

func (m *MemFS) newNode(k Kind, mode fs.FileMode) *memNode {
	m.ino++
	t := m.tick()
	n := &memNode{ino: m.ino, kind: k, mode: mode & fs.ModePerm, mtime: t, ctime: t}
	n.dur = memDurable{mode: n.mode, mtime: t}
	if k == KindDir {
		n.kids = map[string]memEntry{}
		n.dur.kids = map[string]memEntry{}
	}
	return n
}

// Crash simulates a power cut: every directory's entries revert to what
// its last SyncDir made durable and every file's content, mode and mtime
// to its last Sync. Open files must not be used afterwards.
func (m *MemFS) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	var walk func(n *memNode)
	walk = func(n *memNode) {
		n.data = slices.Clone(n.dur.data)
		n.mode, n.mtime = n.dur.mode, n.dur.mtime
		if n.kind == KindDir {
			n.kids = maps.Clone(n.dur.kids)
			for _, e := range n.kids {
				walk(e.node)
			}
		}
	}
	walk(m.root)
}

func pathErr(op, p string, err error) error { return &fs.PathError{Op: op, Path: p, Err: err} }

var errNotDir = errors.New("not a directory")

// resolveDir returns the directory node at dir ("" is the root), refusing
// symlinked components.
func (m *MemFS) resolveDir(op, dir string) (*memNode, error) {
	n := m.root
	if dir == "" {
		return n, nil
	}
	for c := range strings.SplitSeq(dir, "/") {
		e, ok := n.kids[m.fold.Key(c)]
		if !ok {
			return nil, pathErr(op, dir, fs.ErrNotExist)
		}
		switch e.node.kind {
		case KindSymlink:
			return nil, fmt.Errorf("%w: %q", ErrSymlinkParent, dir)
		case KindDir:
			n = e.node
		default:
			return nil, pathErr(op, dir, errNotDir)
		}
	}
	return n, nil
}

// parent checks p and returns its parent directory node and base name.
func (m *MemFS) parent(op, p string) (*memNode, string, error) {
	if err := checkSyntax(p); err != nil {
		return nil, "", err
	}
	dir, base := splitPath(p)
	d, err := m.resolveDir(op, dir)
	return d, base, err
}

// lookup returns the entry at p (which must not be the root).
func (m *MemFS) lookup(op, p string) (*memNode, memEntry, error) {
	d, base, err := m.parent(op, p)
	if err != nil {
		return nil, memEntry{}, err
	}
	e, ok := d.kids[m.fold.Key(base)]
	if !ok {
		return d, memEntry{}, pathErr(op, p, fs.ErrNotExist)
	}
	return d, e, nil
}

func (n *memNode) info(name string) FileInfo {
	fi := FileInfo{Name: name, Kind: n.kind, Mode: n.mode, MTime: n.mtime, Inode: n.ino, Ctime: n.ctime}
	switch n.kind {
	case KindFile:
		fi.Size = int64(len(n.data))
	case KindSymlink:
		fi.Size = int64(len(n.link))
	}
	return fi
}

// Lstat implements FS. Like the operating system's, it reports the name
// asked for, not the one stored (on a folding MemFS they may differ:
// ReadDir has the stored one).
func (m *MemFS) Lstat(p string) (FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p == "" {
		return m.root.info(""), nil
	}
	_, e, err := m.lookup("lstat", p)
	if err != nil {
		return FileInfo{}, err
	}
	_, base := splitPath(p)
	return e.node.info(base), nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(dir string) ([]FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if dir != "" {
		if err := checkSyntax(dir); err != nil {
			return nil, err
		}
	}
	d, err := m.resolveDir("readdir", dir)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, 0, len(d.kids))
	for _, e := range d.kids {
		out = append(out, e.node.info(e.name))
	}
	slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Open implements FS.
func (m *MemFS) Open(p string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, e, err := m.lookup("open", p)
	if err != nil {
		return nil, err
	}
	if e.node.kind != KindFile {
		return nil, fmt.Errorf("%w: %q", ErrNotRegular, p)
	}
	return &memFile{m: m, n: e.node, path: p}, nil
}

// CreateTemp implements FS. Suffixes count up, so names are deterministic.
func (m *MemFS) CreateTemp(dir, prefix string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if dir != "" {
		if err := checkSyntax(dir); err != nil {
			return nil, err
		}
	}
	d, err := m.resolveDir("createtemp", dir)
	if err != nil {
		return nil, err
	}
	for {
		m.temps++
		name := prefix + strconv.Itoa(m.temps)
		p := joinPath(dir, name)
		if err := checkSyntax(p); err != nil {
			return nil, err
		}
		if _, ok := d.kids[m.fold.Key(name)]; ok {
			continue
		}
		n := m.newNode(KindFile, 0o600)
		m.link(d, name, n)
		return &memFile{m: m, n: n, path: p, w: true}, nil
	}
}

// link adds name -> n to directory d (not yet durable).
func (m *MemFS) link(d *memNode, name string, n *memNode) {
	d.kids[m.fold.Key(name)] = memEntry{name: name, node: n}
	d.mtime = m.tick()
	d.ctime = d.mtime
}

func (m *MemFS) unlink(d *memNode, name string) {
	delete(d.kids, m.fold.Key(name))
	d.mtime = m.tick()
	d.ctime = d.mtime
}

// Rename implements FS.
func (m *MemFS) Rename(from, to string) error {
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
	if src.node.kind == KindDir {
		for n := dd; ; {
			if n == src.node {
				return pathErr("rename", to, errors.New("destination inside source"))
			}
			p := m.parentOf(n)
			if p == nil {
				break
			}
			n = p
		}
	}
	if dst, ok := dd.kids[m.fold.Key(base)]; ok && dst.node != src.node {
		switch {
		case dst.node.kind == KindDir && src.node.kind != KindDir:
			return pathErr("rename", to, errors.New("is a directory"))
		case dst.node.kind != KindDir && src.node.kind == KindDir:
			return pathErr("rename", to, errNotDir)
		case dst.node.kind == KindDir && len(dst.node.kids) > 0:
			return pathErr("rename", to, errors.New("directory not empty"))
		}
	}
	m.unlink(sd, src.name)
	m.link(dd, base, src.node)
	src.node.ctime = m.tick()
	return nil
}

// parentOf finds n's parent directory by search (only for the rare
// directory-rename loop check).
func (m *MemFS) parentOf(n *memNode) *memNode {
	var find func(d *memNode) *memNode
	find = func(d *memNode) *memNode {
		for _, e := range d.kids {
			if e.node == n {
				return d
			}
			if e.node.kind == KindDir {
				if p := find(e.node); p != nil {
					return p
				}
			}
		}
		return nil
	}
	return find(m.root)
}

// Remove implements FS.
func (m *MemFS) Remove(p string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, e, err := m.lookup("remove", p)
	if err != nil {
		return err
	}
	if e.node.kind == KindDir && len(e.node.kids) > 0 {
		return pathErr("remove", p, errors.New("directory not empty"))
	}
	m.unlink(d, e.name)
	return nil
}

// Mkdir implements FS.
func (m *MemFS) Mkdir(p string, perm fs.FileMode) error {
	return m.create("mkdir", p, func() *memNode { return m.newNode(KindDir, perm) })
}

// Symlink implements FS.
func (m *MemFS) Symlink(target, p string) error {
	return m.create("symlink", p, func() *memNode {
		n := m.newNode(KindSymlink, 0o777)
		n.link = target
		return n
	})
}

func (m *MemFS) create(op, p string, mk func() *memNode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent(op, p)
	if err != nil {
		return err
	}
	if _, ok := d.kids[m.fold.Key(base)]; ok {
		return pathErr(op, p, fs.ErrExist)
	}
	m.link(d, base, mk())
	return nil
}

// Readlink implements FS.
func (m *MemFS) Readlink(p string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, e, err := m.lookup("readlink", p)
	if err != nil {
		return "", err
	}
	if e.node.kind != KindSymlink {
		return "", pathErr("readlink", p, errors.New("not a symlink"))
	}
	return e.node.link, nil
}

func (m *MemFS) noLink(op, p string) (*memNode, error) {
	_, e, err := m.lookup(op, p)
	if err != nil {
		return nil, err
	}
	if e.node.kind == KindSymlink {
		return nil, fmt.Errorf("%w: %q is a symlink", ErrNotRegular, p)
	}
	return e.node, nil
}

// Chmod implements FS.
func (m *MemFS) Chmod(p string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.noLink("chmod", p)
	if err != nil {
		return err
	}
	n.mode = perm & fs.ModePerm
	n.ctime = m.tick()
	return nil
}

// Chtimes implements FS.
func (m *MemFS) Chtimes(p string, mtime int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.noLink("chtimes", p)
	if err != nil {
		return err
	}
	n.mtime = mtime
	n.ctime = m.tick()
	return nil
}

// SyncDir implements FS.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if dir != "" {
		if err := checkSyntax(dir); err != nil {
			return err
		}
	}
	d, err := m.resolveDir("syncdir", dir)
	if err != nil {
		return err
	}
	d.dur.kids = maps.Clone(d.kids)
	d.dur.mode, d.dur.mtime = d.mode, d.mtime
	return nil
}

// memFile is an open MemFS file. Reads see the content at each call;
// writes append at the file offset.
type memFile struct {
	m    *MemFS
	n    *memNode
	path string
	off  int
	w    bool
}

func (f *memFile) Read(b []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.off >= len(f.n.data) {
		return 0, io.EOF
	}
	k := copy(b, f.n.data[f.off:])
	f.off += k
	return k, nil
}

func (f *memFile) Write(b []byte) (int, error) {
	if !f.w {
		return 0, pathErr("write", f.path, errors.New("file opened read-only"))
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if end := f.off + len(b); end > len(f.n.data) {
		f.n.data = append(f.n.data, make([]byte, end-len(f.n.data))...)
	}
	copy(f.n.data[f.off:], b)
	f.off += len(b)
	f.n.mtime = f.m.tick()
	f.n.ctime = f.n.mtime
	return len(b), nil
}

func (f *memFile) Close() error { return nil }
func (f *memFile) Path() string { return f.path }

func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.n.dur.data = slices.Clone(f.n.data)
	f.n.dur.mode, f.n.dur.mtime = f.n.mode, f.n.mtime
	return nil
}

func (f *memFile) Stat() (FileInfo, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	_, base := splitPath(f.path)
	return f.n.info(base), nil
}

// SyncFS makes everything written so far durable (see OSFS.SyncFS).
func (m *MemFS) SyncFS() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var walk func(n *memNode)
	walk = func(n *memNode) {
		n.dur.data = slices.Clone(n.data)
		n.dur.mode, n.dur.mtime = n.mode, n.mtime
		if n.kind == KindDir {
			n.dur.kids = maps.Clone(n.kids)
			for _, e := range n.kids {
				walk(e.node)
			}
		}
	}
	walk(m.root)
	return nil
}

// errNotSupportedHere refuses what MemFS does not model (moving
// directories with RenameNoReplace or Exchange: the applier never does).
var errNotSupportedHere = fmt.Errorf("MemFS, directories: %w", errors.ErrUnsupported)
