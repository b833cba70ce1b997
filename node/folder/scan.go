package folder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/text/unicode/norm"
)

// ChangeType says how a path changed since the caller's index record.
type ChangeType uint8

const (
	// Added: on disk, no live record.
	Added ChangeType = iota + 1
	// Modified: same kind, different metadata or content. For a file whose
	// Hash is unchanged only metadata (mtime, mode) moved.
	Modified
	// Deleted: a live record, nothing on disk.
	Deleted
	// KindChanged: a file became a directory, a symlink a file, and so on.
	KindChanged
)

func (c ChangeType) String() string {
	switch c {
	case Added:
		return "added"
	case Modified:
		return "modified"
	case Deleted:
		return "deleted"
	case KindChanged:
		return "kind-changed"
	}
	return "unknown"
}

// Change is one difference between the disk and the caller's index.
type Change struct {
	Type ChangeType
	Path string
	// Old is the index record (zero for Added).
	Old Record
	// New is the record for what is on disk now (zero for Deleted): local
	// metadata from lstat, Hash for files, Target for symlinks. The caller
	// stores it as is, so the next scan skips the path.
	New Record
	// Extra is the Hasher's HashResult.Extra for files.
	Extra any
}

// Skip is a path left out of this scan, with why: it changed while being
// hashed (ErrUnsettled), its name cannot be synced (ErrBadPath, ErrNotNFC),
// it is a special file, or it could not be read.
type Skip struct {
	Path string
	Err  error
}

// Result is the outcome of one scan. All slices are sorted by path and
// owned by the caller.
type Result struct {
	Changes []Change
	// Unsettled lists files that changed while being hashed: they are
	// neither reported changed nor deleted this round; scan them again
	// once they are quiet (the watcher will report them).
	Unsettled []string
	// Skipped lists paths left out for another reason (see Skip).
	Skipped []Skip
	// Corrupt lists files whose content changed while their size, mtime
	// and inode did not (only the ctime moved, or nothing did): that is
	// not an edit (every editor's write moves the mtime) but damage on
	// the disk, or a byte changed behind the file's back. They are not in
	// Changes: the caller must not record them as new versions
	// (docs/folder.md, "Rot"). New holds what the scan found.
	Corrupt []Change
	// Shadowed lists live records that are absent on disk only because
	// another live path with the same name under this file system's
	// folding took their place (see docs/folder.md, "Names"). They are
	// not reported Deleted.
	Shadowed []string
	// Temps lists the applier's temporary files (TempPrefix names,
	// outside WorkDir) the walk met. The scanner leaves them alone; when
	// no apply ran during the scan they are what an earlier run left
	// behind, which the node removes after its first scan
	// (Applier.RemoveTemps) instead of walking the folder once more.
	Temps []string
	// Files, Dirs and Bytes count what the scan saw on disk (not ignored).
	Files, Dirs int
	Bytes       int64
	// Spilled counts the changes handed to ScanOptions.Spill during the
	// scan instead of being returned in Changes.
	Spilled int
}

// NumChanges is how many changes the scan found: those in Changes and
// those it spilled.
func (r Result) NumChanges() int { return len(r.Changes) + r.Spilled }

// ScanOptions says what one scan covers and what it does on the way.
type ScanOptions struct {
	// Paths to scan, each with its subtree when it is a directory; nil or
	// "" is the whole folder.
	Paths []string
	// Watch, when set, is called for every directory just before it is
	// listed (see ScanWatching).
	Watch func(dir string)
	// Spill, when set, takes new files (Added, KindFile) off the scan's
	// hands in batches of SpillEvery as they are hashed, instead of
	// holding every one until the walk ends: a first scan of 100,000 small
	// files otherwise holds all their bytes at once. Calls do not overlap
	// and come from the scan's workers; an error ends the scan with it.
	// Only a caller that needs nothing from a new file but the file itself
	// may spill (the node: a scan whose additions cannot be moves of a
	// conflict copy).
	Spill      func([]Change) error
	SpillEvery int
}

// ScannerConfig configures a Scanner.
type ScannerConfig struct {
	FS    FS    // required
	Index Index // required
	// Hasher summarises changed files; default BLAKE3Hasher.
	Hasher Hasher
	// Workers hashing in parallel; default GOMAXPROCS.
	Workers int
	// Folding is how FS compares names (see Probe).
	Folding Folding
	// Logger; default slog.Default().
	Logger *slog.Logger
}

func (c *ScannerConfig) validate() error {
	if c.FS == nil || c.Index == nil {
		return errors.New("folder: scanner config needs FS and Index")
	}
	if c.Hasher == nil {
		c.Hasher = BLAKE3Hasher{}
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Scanner compares the folder with the caller's index. A Scanner may be
// used by one scan at a time (Scan and ScanPaths must not overlap); it
// re-reads .weftignore at the start of each scan when the file changed.
type Scanner struct {
	cfg ScannerConfig

	// mu guards the fields below.
	mu     sync.Mutex
	ignore *Ignore
}

// NewScanner returns a Scanner.
func NewScanner(cfg ScannerConfig) (*Scanner, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Scanner{cfg: cfg}, nil
}

// Ignore returns the ignore rules of the last scan (nil before the first).
func (s *Scanner) Ignore() *Ignore {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ignore
}

// ScanWatching is Scan calling watch(dir) for every directory just before
// it lists it (watch.Watcher.WatchDir of a DeferWalk watcher): the directories
// the scan enters are those a watcher watches (not ignored, not internal,
// no symlink followed). watch may be called from several goroutines at
// once.
func (s *Scanner) ScanWatching(ctx context.Context, watch func(dir string)) (Result, error) {
	return s.scanPaths(ctx, []string{""}, watch)
}

// Scan walks the whole folder. It returns an error only when the scan
// could not be carried out (the root is unreadable, ctx is done); trouble
// with a single path (unreadable, or the Hasher failed on it) becomes a
// Skip, and the path is neither changed nor deleted this round.
func (s *Scanner) Scan(ctx context.Context) (Result, error) {
	return s.ScanPaths(ctx, []string{""})
}

// ScanPaths scans only the given paths (each with its subtree when it is a
// directory; "" is the whole folder), as reported by the watcher. Records
// at or below a path that is gone are reported Deleted.
func (s *Scanner) ScanPaths(ctx context.Context, paths []string) (Result, error) {
	return s.scanPaths(ctx, paths, nil)
}

// ScanWith is a scan as o says: the paths, a watch call per directory, a
// spill of new files.
func (s *Scanner) ScanWith(ctx context.Context, o ScanOptions) (Result, error) {
	paths := o.Paths
	if paths == nil {
		paths = []string{""}
	}
	return s.scan(ctx, paths, o)
}

func (s *Scanner) scanPaths(ctx context.Context, paths []string, watch func(dir string)) (Result, error) {
	return s.scan(ctx, paths, ScanOptions{Watch: watch})
}

func (s *Scanner) scan(ctx context.Context, paths []string, o ScanOptions) (Result, error) {
	watch := o.Watch
	ig, err := LoadIgnore(s.cfg.FS, s.Ignore())
	if err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	s.ignore = ig
	s.mu.Unlock()

	w := &walk{s: s, ctx: ctx, ig: ig, watch: watch,
		prefetched: map[string]chan listing{}, sem: make(chan struct{}, s.cfg.Workers), maxAhead: 2 * s.cfg.Workers}
	roots := topPaths(paths)
	if ci, ok := s.cfg.Index.(CountedIndex); ok && len(roots) == 1 && roots[0] == "" {
		w.counted = true
		w.records, w.changes = ci.Count()
	}
	w.seen = make(map[string]bool, w.records) // room for the folder as indexed
	if o.Spill != nil {
		w.spill, w.spillEvery = o.Spill, max(o.SpillEvery, 1)
	}
	defer w.pf.Wait()
	if s.cfg.Folding.Folds() {
		w.keys = map[string]string{}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan hashJob)
	var wg sync.WaitGroup
	for range s.cfg.Workers {
		wg.Go(func() {
			for j := range jobs {
				w.hash(ctx, j)
			}
		})
	}
	w.jobs = jobs
	for _, p := range roots {
		if err := w.root(p); err != nil {
			w.fail(err)
			break
		}
	}
	close(jobs)
	wg.Wait()
	// New files short of a whole batch are returned with the rest.
	w.res.Changes = append(w.res.Changes, w.pending...)
	w.pending = nil
	if w.err != nil {
		return Result{}, w.err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	for _, p := range roots {
		w.deletions(p)
	}
	r := &w.res
	slices.SortFunc(r.Changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(r.Unsettled)
	slices.SortFunc(r.Skipped, func(a, b Skip) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(r.Shadowed)
	slices.Sort(r.Temps)
	slices.SortFunc(r.Corrupt, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return *r, nil
}

// topPaths sorts paths and drops those below another one.
func topPaths(paths []string) []string {
	ps := slices.Clone(paths)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	out := ps[:0]
	for _, p := range ps {
		if len(out) > 0 && underPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

type hashJob struct {
	path string
	info FileInfo
	old  Record
	had  bool
}

// walk is the state of one scan.
type walk struct {
	s     *Scanner
	ctx   context.Context
	ig    *Ignore
	jobs  chan<- hashJob
	watch func(dir string) // nil, or called before each directory is listed

	// seen, keys, prefetched and had are used by the walking goroutine
	// only (and read after the workers stopped).
	seen       map[string]bool
	had        int                            // paths seen that the index held (each counted once)
	keys       map[string]string              // Folding.Key(path) -> path seen
	stored     map[string]map[string]FileInfo // dir -> its entries by Folding.Key (storedNames)
	prefetched map[string]chan listing
	ahead      [][]string     // per directory being walked, its subdirectories not yet read ahead or entered (fill)
	maxAhead   int            // bounds prefetched
	sem        chan struct{}  // bounds prefetching goroutines
	pf         sync.WaitGroup // prefetching goroutines

	// counted says the scan covers the whole folder and its index is a
	// CountedIndex, which held records live records at its start and
	// reported changes (deletions).
	counted bool
	records int
	changes uint64

	// spill, when set, takes new files in batches of spillEvery
	// (ScanOptions.Spill); spillMu keeps its calls one at a time.
	spill      func([]Change) error
	spillEvery int
	spillMu    sync.Mutex

	// mu guards res, pending and err, which workers write.
	mu      sync.Mutex
	res     Result
	pending []Change // new files waiting for a whole batch to spill
	err     error
}

func (w *walk) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

func (w *walk) skip(p string, err error) {
	w.mu.Lock()
	w.res.Skipped = append(w.res.Skipped, Skip{Path: p, Err: err})
	w.mu.Unlock()
}

func (w *walk) change(c Change) {
	w.mu.Lock()
	if w.spill == nil || c.Type != Added || c.New.Kind != KindFile {
		w.res.Changes = append(w.res.Changes, c)
		w.mu.Unlock()
		return
	}
	if w.pending == nil {
		// Room for a whole batch at once: grown by append, each batch
		// allocated about twice its size.
		w.pending = make([]Change, 0, w.spillEvery)
	}
	w.pending = append(w.pending, c)
	if len(w.pending) < w.spillEvery || w.err != nil {
		w.mu.Unlock()
		return
	}
	batch := w.pending
	w.pending = nil
	w.res.Spilled += len(batch)
	w.mu.Unlock()
	w.spillMu.Lock()
	err := w.spill(batch)
	w.spillMu.Unlock()
	if err != nil {
		w.fail(fmt.Errorf("recording new files during the scan: %w", err))
	}
}

// ancestorIgnored reports whether a proper ancestor directory of p is
// ignored (or internal).
func (w *walk) ancestorIgnored(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && w.ig.Match(p[:i], true) {
			return true
		}
	}
	return false
}

// root scans one top path.
func (w *walk) root(p string) error {
	if p == "" {
		return w.dir("")
	}
	if err := checkSyntax(p); err != nil {
		w.skip(p, err)
		return nil
	}
	if w.ancestorIgnored(p) {
		return nil
	}
	info, err := w.s.cfg.FS.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrSymlinkParent) {
		return nil // deletions() reports what the index had here
	} else if err != nil {
		w.skip(p, err)
		return nil
	}
	if w.keys != nil {
		if stored, e, ok, err := w.storedTwin(p); err != nil {
			w.skip(p, err)
			return nil
		} else if ok {
			// On a folding file system Lstat(p) found an item stored
			// under another name (another case): that item, not p, is
			// what is on disk. Scanned under its own name, it is a live
			// twin that shadows p, or a new path beside p's deletion (a
			// case-only rename), never a version of p.
			if w.seen[stored] {
				return nil // asked for under both names
			}
			return w.entry(stored, e)
		}
		if w.seen[p] {
			return nil // scanned already as another name's stored twin
		}
	}
	return w.entry(p, info)
}

// storedTwin reports, on a folding file system, the item that Lstat(p)
// found when it is stored under a name that differs from p's by
// more than its normalisation: its path and its directory entry. Lstat
// does not say (the operating system's reports the name asked for), and
// the inode does not either (a case-only rename keeps it), so p's
// directory is listed, once per scan.
func (w *walk) storedTwin(p string) (string, FileInfo, bool, error) {
	dir, base := splitPath(p)
	names, err := w.storedNames(dir)
	if err != nil {
		return "", FileInfo{}, false, err
	}
	e, ok := names[w.s.cfg.Folding.Key(base)]
	if !ok || e.Name == base || norm.NFC.String(e.Name) == base {
		return "", FileInfo{}, false, nil // stored under p's name (or only its normalisation differs)
	}
	return joinPath(dir, e.Name), e, true, nil
}

// storedNames is dir's entries by Folding.Key, listed once per scan.
func (w *walk) storedNames(dir string) (map[string]FileInfo, error) {
	if names, ok := w.stored[dir]; ok {
		return names, nil
	}
	ents, err := w.s.cfg.FS.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make(map[string]FileInfo, len(ents))
	for _, e := range ents {
		names[w.s.cfg.Folding.Key(e.Name)] = e
	}
	if w.stored == nil {
		w.stored = map[string]map[string]FileInfo{}
	}
	w.stored[dir] = names
	return names, nil
}

// listing is one directory's entries, read ahead.
type listing struct {
	ents []FileInfo
	err  error
}

// prefetch starts reading directory d in the background, in a slot of
// sem already taken: listing directories (one lstat per entry) is most of
// a rescan's cost, and doing it on all cores while the walk stays on one
// goroutine keeps the walk's state unshared and its order fixed. The slot
// is free again before the listing can be taken, so the walk's next fill
// finds it free.
func (w *walk) prefetch(d string) {
	ch := make(chan listing, 1)
	w.prefetched[d] = ch
	w.pf.Go(func() {
		if w.watch != nil {
			w.watch(d)
		}
		ents, err := w.s.cfg.FS.ReadDir(d)
		<-w.sem
		ch <- listing{ents, err}
	})
}

// fill starts reading ahead, while slots are free, the next directories
// the walk will enter, in the order it will enter them: the subdirectories
// still ahead in the deepest directory being walked first (ahead), then
// those of its parent, and so on. Without it only the first subdirectories
// of a directory were read ahead (as many as there are slots, when the
// directory was listed), and the walk listed every later one itself, on
// its own goroutine: a folder of 100 directories of 1,000 files was listed
// on one core. Listings read ahead and not yet taken are bounded
// (maxAhead), so the walk's memory stays what it was.
func (w *walk) fill() {
	for len(w.prefetched) < w.maxAhead {
		select {
		case w.sem <- struct{}{}:
		default:
			return
		}
		d, ok := w.nextAhead()
		if !ok {
			<-w.sem
			return
		}
		w.prefetch(d)
	}
}

// nextAhead takes the next directory of ahead that is neither read ahead
// nor entered yet.
func (w *walk) nextAhead() (string, bool) {
	for i := len(w.ahead) - 1; i >= 0; i-- {
		for len(w.ahead[i]) > 0 {
			d := w.ahead[i][0]
			w.ahead[i] = w.ahead[i][1:]
			if _, ok := w.prefetched[d]; !ok && !w.seen[d] {
				return d, true
			}
		}
	}
	return "", false
}

// list returns d's entries, from a prefetch if there was one.
func (w *walk) list(d string) ([]FileInfo, error) {
	if ch, ok := w.prefetched[d]; ok {
		delete(w.prefetched, d)
		l := <-ch
		return l.ents, l.err
	}
	if w.watch != nil {
		w.watch(d)
	}
	return w.s.cfg.FS.ReadDir(d)
}

// dir scans the entries of directory d.
func (w *walk) dir(d string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	ents, err := w.list(d)
	if err != nil {
		if d == "" {
			return fmt.Errorf("reading folder root: %w", err)
		}
		w.skip(d, err)
		w.seenBelow(d)
		return nil
	}
	var subdirs []string
	for _, e := range ents {
		if p := joinPath(d, e.Name); e.Kind == KindDir && !w.ig.Match(p, true) {
			subdirs = append(subdirs, p)
		}
	}
	depth := len(w.ahead)
	w.ahead = append(w.ahead, subdirs)
	defer func() { w.ahead = w.ahead[:depth] }()
	w.fill()
	for _, e := range ents {
		if err := w.entry(joinPath(d, e.Name), e); err != nil {
			return err
		}
		if e.Kind == KindDir {
			w.fill() // slots freed while the walk was below it
		}
	}
	return nil
}

// seenBelow marks every record below an unreadable directory as seen, so
// a permission problem is never reported as a deletion.
func (w *walk) seenBelow(d string) {
	w.s.cfg.Index.Range(d, func(r Record) bool {
		w.seen[r.Path] = true
		return true
	})
}

// entry handles one path found on disk.
func (w *walk) entry(p string, info FileInfo) error {
	isDir := info.Kind == KindDir
	if IsInternal(p) {
		// Ancestors are never internal here (the walk does not enter an
		// internal directory), so only the name itself can be a temp.
		if _, name := splitPath(p); !isDir && strings.HasPrefix(name, TempPrefix) {
			w.res.Temps = append(w.res.Temps, p) // the walking goroutine only
		}
		return nil
	}
	if !norm.NFC.IsNormalString(p) {
		if !w.s.cfg.Folding.NormInsensitive {
			w.skip(p, fmt.Errorf("%w: %q", ErrNotNFC, p))
			return nil
		}
		p = norm.NFC.String(p) // the FS finds it under this name too
	}
	if err := checkSyntax(p); err != nil {
		w.skip(p, err)
		return nil
	}
	if w.ig.Match(p, isDir) {
		return nil
	}
	if info.Kind == KindOther {
		w.skip(p, fmt.Errorf("%w: %q is a special file", ErrNotRegular, p))
		return nil
	}
	first := !w.seen[p] // a name and its NFD spelling are both p
	w.seen[p] = true
	if w.keys != nil {
		w.keys[w.s.cfg.Folding.Key(p)] = p
	}
	old, had := w.s.cfg.Index.Lookup(p)
	if had && first {
		w.had++
	}
	unchanged := had && sameMeta(old, info)
	switch info.Kind {
	case KindDir:
		w.res.Dirs++
		if !unchanged {
			w.change(Change{Type: changeType(old, had, info), Path: p, Old: old, New: RecordOf(p, info)})
		}
		return w.dir(p)
	case KindSymlink:
		w.res.Files++
		if unchanged {
			return nil
		}
		target, err := w.s.cfg.FS.Readlink(p)
		if err != nil {
			w.skip(p, err)
			return nil
		}
		rec := RecordOf(p, info)
		rec.Target = target
		w.change(Change{Type: changeType(old, had, info), Path: p, Old: old, New: rec})
	case KindFile:
		w.res.Files++
		w.res.Bytes += info.Size
		if unchanged {
			return nil
		}
		select {
		case w.jobs <- hashJob{path: p, info: info, old: old, had: had}:
		case <-w.ctx.Done():
			return w.ctx.Err()
		}
	}
	return nil
}

// allSeen reports whether a whole-folder walk saw every live record of
// the index: the index was not changed while the walk ran (its change
// number is the one read at the start), and the walk found on disk, and
// looked up, as many distinct paths the index held as it holds records.
// Each such path is one of its records, so none is left unseen, and
// deletions has nothing to look for. When anything else happened (a
// record set or removed meanwhile, a record under a directory that could
// not be listed or that is ignored now, a record not on disk) the counts
// differ and deletions looks at every record.
func (w *walk) allSeen() bool {
	if !w.counted {
		return false
	}
	records, changes := w.s.cfg.Index.(CountedIndex).Count()
	return changes == w.changes && records == w.records && w.had == records
}

func changeType(old Record, had bool, info FileInfo) ChangeType {
	switch {
	case !had:
		return Added
	case old.Kind != info.Kind:
		return KindChanged
	}
	return Modified
}

// sameStat reports whether two lstats of one path show the same file
// unchanged (size, mtime, inode, ctime).
func sameStat(a, b FileInfo) bool {
	return a.Kind == b.Kind && a.Size == b.Size && a.MTime == b.MTime && a.Inode == b.Inode && a.Ctime == b.Ctime
}

// hash reads and hashes one file, checking it did not change meanwhile.
func (w *walk) hash(ctx context.Context, j hashJob) {
	if ctx.Err() != nil {
		return
	}
	unsettled := func() {
		w.mu.Lock()
		w.res.Unsettled = append(w.res.Unsettled, j.path)
		w.mu.Unlock()
	}
	f, err := w.s.cfg.FS.Open(j.path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrUnsettled) || errors.Is(err, ErrNotRegular) {
		unsettled()
		return
	} else if err != nil {
		w.skip(j.path, err)
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size != j.info.Size || st.MTime != j.info.MTime || st.Inode != j.info.Inode {
		unsettled()
		return
	}
	res, err := w.s.cfg.Hasher.Hash(ctx, j.path, io.LimitReader(f, j.info.Size), j.info.Size)
	if errors.Is(err, ErrUnsettled) {
		unsettled()
		return
	} else if err != nil {
		if ctx.Err() == nil {
			w.skip(j.path, fmt.Errorf("hashing: %w", err))
		}
		return
	}
	after, err := w.s.cfg.FS.Lstat(j.path)
	if err != nil || !sameStat(after, j.info) {
		unsettled()
		return
	}
	rec := RecordOf(j.path, j.info)
	rec.Hash = res.Hash
	c := Change{Type: changeType(j.old, j.had, j.info), Path: j.path, Old: j.old, New: rec, Extra: res.Extra}
	if IsRot(j.old, j.had, rec) {
		w.mu.Lock()
		w.res.Corrupt = append(w.res.Corrupt, c)
		w.mu.Unlock()
		return
	}
	w.change(c)
}

// IsRot reports whether what is on disk (now, with its content hash)
// differs from the recorded file only in content: same size, mtime and
// inode, another hash. A write through the file system moves the mtime,
// so that is damage (bit rot, a bad sector, a byte flipped behind the
// file's back and its mtime put back), not an edit to sync.
func IsRot(old Record, had bool, now Record) bool {
	var zero [32]byte
	// Without inode numbers (FAT, some network file systems) a replaced
	// file cannot be told from a damaged one: never rot there.
	return had && old.Kind == KindFile && now.Kind == KindFile && old.Hash != zero && old.Inode != 0 &&
		old.Size == now.Size && old.MTime == now.MTime && old.Inode == now.Inode && old.Hash != now.Hash
}

// deletions reports live records at or below top that the walk did not
// see, unless they are ignored now or shadowed by a folding twin.
func (w *walk) deletions(top string) {
	if w.allSeen() {
		return
	}
	var gone []Record
	w.s.cfg.Index.Range(top, func(r Record) bool {
		if !w.seen[r.Path] {
			gone = append(gone, r)
		}
		return true
	})
	slices.SortFunc(gone, func(a, b Record) int { return cmp.Compare(a.Path, b.Path) })
	for _, r := range gone {
		if w.ig.Match(r.Path, r.Kind == KindDir) || w.ancestorIgnored(r.Path) {
			continue
		}
		if w.keys != nil {
			if twin, ok := w.keys[w.s.cfg.Folding.Key(r.Path)]; ok && twin != r.Path {
				if _, live := w.s.cfg.Index.Lookup(twin); live {
					w.res.Shadowed = append(w.res.Shadowed, r.Path)
					continue
				}
			}
		}
		w.res.Changes = append(w.res.Changes, Change{Type: Deleted, Path: r.Path, Old: r})
	}
}
