package keyfile

import "errors"

// Sentinel errors. Classify with errors.Is; the returned errors name the
// file and the details. A missing file is reported with fs.ErrNotExist.
var (
	// ErrSymlink means the path is a symbolic link; key files must be
	// regular files.
	ErrSymlink = errors.New("key file is a symbolic link")
	// ErrNotRegular means the path is a directory, device or other
	// non-regular file.
	ErrNotRegular = errors.New("key file is not a regular file")
	// ErrInsecurePermissions means group or others may access the file.
	ErrInsecurePermissions = errors.New("key file is accessible by other users")
	// ErrTooLarge means the file is far larger than any key file.
	ErrTooLarge = errors.New("key file too large")
	// ErrCorrupt means the file's contents are not a valid key file of the
	// expected kind: damaged, truncated, or edited by hand.
	ErrCorrupt = errors.New("key file corrupt")
	// ErrWrongKind means the file is a weft key file of another kind (a
	// root secret where a device key was expected, or the reverse).
	ErrWrongKind = errors.New("key file of the wrong kind")
	// ErrUnsupportedVersion means the file's format version is not one this
	// weft reads, probably because a newer weft wrote it.
	ErrUnsupportedVersion = errors.New("key file format version not supported")
)
