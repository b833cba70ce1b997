package api

import "fmt"

// Defaults of VersionPolicy.
const (
	defaultVersionPercent  = 10
	defaultVersionMaxBytes = 20 << 30
	// MinVersionBudget is the floor of a percentage budget: 10 % of a new
	// or small folder is next to nothing, and a notes vault of 50 MiB
	// should still keep weeks of edits.
	MinVersionBudget = 256 << 20
)

// VersionPolicy is a folder's local version policy (`weft folder versions`).
type VersionPolicy struct {
	// Off keeps no versions (and drops those kept at the next prune).
	Off bool `json:"off,omitempty"`
	// Budget, when above zero, is the store's size in bytes; otherwise it
	// is Percent of the folder's size, at least MinVersionBudget and at
	// most MaxBytes.
	Budget   int64   `json:"budget_bytes,omitempty"`
	Percent  float64 `json:"percent,omitempty"`
	MaxBytes int64   `json:"max_bytes,omitempty"`
	// KeepAllDays is how long every version is kept before the daily
	// thinning (zero: 30).
	KeepAllDays int `json:"keep_all_days,omitempty"`
}

// Validate refuses a policy that means nothing.
func (p VersionPolicy) Validate() error {
	switch {
	case p.Budget < 0, p.MaxBytes < 0, p.KeepAllDays < 0:
		return fmt.Errorf("version policy: sizes and days cannot be negative")
	case p.Percent < 0 || p.Percent > 100:
		return fmt.Errorf("version policy: percent %g is not between 0 and 100", p.Percent)
	}
	return nil
}

// BudgetFor returns the store's budget in bytes for a folder of
// folderBytes.
func (p VersionPolicy) BudgetFor(folderBytes int64) int64 {
	switch {
	case p.Off:
		return 0
	case p.Budget > 0:
		return p.Budget
	}
	pct, maxB := p.Percent, p.MaxBytes
	if pct == 0 {
		pct = defaultVersionPercent
	}
	if maxB == 0 {
		maxB = defaultVersionMaxBytes
	}
	return min(max(int64(float64(folderBytes)*pct/100), MinVersionBudget), maxB)
}

// VersionsInfo is a folder's local versions, for `weft folder versions`
// and GET /v1/versions.
type VersionsInfo struct {
	Folder string        `json:"folder"`
	Policy VersionPolicy `json:"policy"`
	// Available is false when the store could not be opened (the agent's
	// log says why): nothing is kept.
	Available   bool  `json:"available"`
	BudgetBytes int64 `json:"budget_bytes"`
	Versions    int64 `json:"versions"`
	Bytes       int64 `json:"bytes"`         // chunks held, each counted once
	BytesOnDisk int64 `json:"bytes_on_disk"` // pack files, before GC frees dropped chunks
	// Since the agent started: versions kept, skipped by the policy (too
	// large, over budget, low disk, edited again before they could be
	// read), failed (a disk error) and dropped (the queue was full).
	Kept    int64 `json:"kept"`
	Skipped int64 `json:"skipped"`
	Failed  int64 `json:"failed"`
	Dropped int64 `json:"dropped"`
}

// VersionsRequest is the body of POST /v1/folders/versions.
type VersionsRequest struct {
	Folder string        `json:"folder"`
	Policy VersionPolicy `json:"policy"`
}
