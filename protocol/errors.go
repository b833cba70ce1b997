package protocol

import "errors"

// Sentinel errors of the sync core. Callers classify with errors.Is; the
// returned errors wrap these with the noun they concern.
var (
	// ErrInvalidVersion means a Version is malformed: an unknown kind, an
	// empty path, a deletion with content, or a version that supersedes
	// itself.
	ErrInvalidVersion = errors.New("invalid version")

	// ErrDuplicateVersion means a version ID was added twice with different
	// fields. Two versions with one ID can only come from a forked log (a
	// stolen key); the entry layer reports the fork, and the graph keeps the
	// version it saw first.
	ErrDuplicateVersion = errors.New("duplicate version ID with different fields")

	// ErrNoHeads means Resolve was given no versions.
	ErrNoHeads = errors.New("no heads to resolve")

	// ErrMixedPaths means Resolve was given heads of more than one path.
	ErrMixedPaths = errors.New("heads of different paths")

	// ErrNotHead means Resolve was given two heads where one descends from
	// the other: the caller passed something other than a path's heads.
	ErrNotHead = errors.New("version is not a head")

	// ErrMergeTooLarge means a three-way merge was refused because an input
	// is over MaxMergeBytes or MaxMergeLines, or the inputs differ by more
	// than the diff work budget allows. The caller falls back to a conflict
	// copy.
	ErrMergeTooLarge = errors.New("merge input too large")

	// ErrNotText means a three-way merge was refused because an input is not
	// text (see IsText). The caller falls back to a conflict copy.
	ErrNotText = errors.New("merge input is not text")

	// ErrSequenceGap means a Range applied to a Vector does not start right
	// after the sequence the vector holds.
	ErrSequenceGap = errors.New("sequence gap")
)
