package protocol

import "fmt"

// MassDeletePolicy decides when deleting files at once is too much to do
// without asking the user: the guard of ARCHITECTURE.md ("Nothing a device
// sees can delete everywhere by accident"). A scan that would record, or a
// batch of peer entries that would apply, more deletions than the policy
// allows waits for the user instead (node/ holds it; docs/folder.md).
//
// The zero value is the default policy (DefaultMassDelete): a zero field
// means its default, so a stored policy written by an older version keeps
// working as the defaults change.
type MassDeletePolicy struct {
	// Off turns the guard off: every deletion goes through.
	Off bool `json:"off,omitempty"`
	// Percent: deleting more than this share of the folder's files holds
	// the deletions (default 50), once the folder has more than MinFiles.
	Percent int `json:"percent,omitempty"`
	// MinFiles: a folder of this many files or fewer is never held by
	// Percent (default 20); deleting 3 of 5 notes is an ordinary edit.
	MinFiles int `json:"min_files,omitempty"`
	// MaxFiles: deleting more than this many files at once is held
	// whatever the folder's size (default 1,000).
	MaxFiles int `json:"max_files,omitempty"`
}

// DefaultMassDelete is the policy a folder has until its user changes it:
// more than half of a folder of over 20 files, or over 1,000 files at once.
var DefaultMassDelete = MassDeletePolicy{Percent: 50, MinFiles: 20, MaxFiles: 1000}

// withDefaults fills zero fields from DefaultMassDelete.
func (p MassDeletePolicy) withDefaults() MassDeletePolicy {
	if p.Percent <= 0 {
		p.Percent = DefaultMassDelete.Percent
	}
	if p.MinFiles <= 0 {
		p.MinFiles = DefaultMassDelete.MinFiles
	}
	if p.MaxFiles <= 0 {
		p.MaxFiles = DefaultMassDelete.MaxFiles
	}
	return p
}

// Validate rejects a policy no user means: a share outside 1-100, or
// negative counts.
func (p MassDeletePolicy) Validate() error {
	switch {
	case p.Percent < 0 || p.Percent > 100:
		return fmt.Errorf("mass-delete percent %d: want 1 to 100", p.Percent)
	case p.MinFiles < 0:
		return fmt.Errorf("mass-delete min files %d: want 0 or more", p.MinFiles)
	case p.MaxFiles < 0:
		return fmt.Errorf("mass-delete max files %d: want 0 or more", p.MaxFiles)
	}
	return nil
}

// Effective is the policy with every default filled in, as it is applied.
func (p MassDeletePolicy) Effective() MassDeletePolicy {
	if p.Off {
		return MassDeletePolicy{Off: true}
	}
	return p.withDefaults()
}

// Exceeds reports whether deleting deleted files of a folder that holds
// files (counted before the deletion) must wait for the user. deleted
// counts every file the deletion removes, including those removed in the
// same short window before it (node/ keeps the window), so a deletion
// split across several scans or entries is judged as one.
func (p MassDeletePolicy) Exceeds(deleted, files int) bool {
	if p.Off || deleted <= 0 {
		return false
	}
	p = p.withDefaults()
	if deleted > p.MaxFiles {
		return true
	}
	return files > p.MinFiles && deleted*100 > files*p.Percent
}

// String describes the policy for status and the CLI.
func (p MassDeletePolicy) String() string {
	if p.Off {
		return "off"
	}
	p = p.withDefaults()
	return fmt.Sprintf("more than %d%% of a folder of over %d files, or over %d files at once", p.Percent, p.MinFiles, p.MaxFiles)
}
