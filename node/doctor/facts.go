package doctor

import (
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/entry"
)

// Facts is everything the rules look at.
type Facts struct {
	Path    string // the path asked about (relative to its folder), "" for all
	Folders []FolderFacts
	Peers   []api.PeerDiagnosis
	// SelfCorrection is this device's clock correction (Diagnosis.
	// ClockCorrectionMillis), for the clock-skew rule.
	SelfCorrection time.Duration
}

// FolderFacts is what the rules know of one folder: its diagnosis, and
// the problems and work behind it.
type FolderFacts struct {
	api.FolderDiagnosis
	Errs      map[string]string
	Conflicts []string
	Skipped   map[string]string
	Unsettled []string
	Pending   []PathFacts     // pending paths, in order, at most MaxPendingShown
	More      int             // pending paths not in pending
	Asked     *PathFacts      // the path asked about, if any
	Ignored   bool            // the path asked about is ignored
	AnyPeer   bool            // some member is connected
	Shared    bool            // the vault has other members
	Relays    []api.RelayInfo // the vault's relays
	Rollbacks []api.RelayRollback
	Coded     []api.PathMessage // the folder's errors[] items that carry a code
	Versions  api.VersionsInfo  // the local version store
}

// PathFacts is one path's state and who may hold its content.
type PathFacts struct {
	PathState
	Holders []string // members that may hold the content, peer IDs
}

// MaxPendingShown bounds the pending paths doctor explains one by one.
const MaxPendingShown = 50

// PathState is what the vault knows about one path.
type PathState struct {
	Path      string
	Indexed   bool   // the folder index has a record for it
	Dirty     bool   // marked for reconciliation
	Err       string // last apply error
	Heads     int    // live heads in the version graph
	Winner    entry.VersionID
	Kind      entry.Kind // the winning version's kind
	Size      uint64
	Chunks    int // chunks of the winning version
	Local     int // of which this device can read from its own folder
	UpToDate  bool
	Conflicts []string // conflict copies of this path present in the folder
}
