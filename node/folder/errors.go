package folder

import "errors"

var (
	// ErrBadPath reports a path that is not a clean, relative,
	// slash-separated path inside the folder (absolute, "..", empty or "."
	// components, backslashes, NUL or control characters, invalid UTF-8,
	// too long).
	ErrBadPath = errors.New("folder: bad path")

	// ErrNotNFC reports a wire path that is not in Unicode NFC.
	ErrNotNFC = errors.New("folder: path not in Unicode NFC")

	// ErrInternalPath reports a path inside weft's own working directory
	// (.weft) or a name reserved for the applier's temporary files: such a
	// path is never synced.
	ErrInternalPath = errors.New("folder: path reserved for weft")

	// ErrSymlinkParent reports a path whose parent directory (or one of its
	// ancestors) is a symbolic link: the FS never follows it.
	ErrSymlinkParent = errors.New("folder: path traverses a symlink")

	// ErrLocalChange reports that the item on disk differs from the
	// caller's index record: it changed since the last scan. The applier
	// refuses to replace or delete it; the caller rescans and treats the
	// result as a conflict.
	ErrLocalChange = errors.New("folder: changed locally since last scan")

	// ErrDirNotEmpty reports a directory that cannot be deleted because it
	// still holds entries (see DirNotEmptyError for which).
	ErrDirNotEmpty = errors.New("folder: directory not empty")

	// ErrSizeMismatch reports content that did not have the size the
	// version promised; nothing was written.
	ErrSizeMismatch = errors.New("folder: content size mismatch")

	// ErrNotRegular reports an Open of something that is not a regular
	// file.
	ErrNotRegular = errors.New("folder: not a regular file")

	// ErrParentNotDir reports a path whose parent exists but is not a
	// directory: the caller applies the parent's kind change first.
	ErrParentNotDir = errors.New("folder: parent is not a directory")

	// ErrUnsettled reports a file that changed while it was being read.
	ErrUnsettled = errors.New("folder: file changed while being read")
)

// DirNotEmptyError lists what keeps a directory from being deleted. It
// matches ErrDirNotEmpty with errors.Is.
type DirNotEmptyError struct {
	Path    string
	Entries []string // base names still present, sorted
}

func (e *DirNotEmptyError) Error() string {
	return "folder: directory " + e.Path + " not empty"
}

// Is makes errors.Is(err, ErrDirNotEmpty) true.
func (e *DirNotEmptyError) Is(target error) bool { return target == ErrDirNotEmpty }
