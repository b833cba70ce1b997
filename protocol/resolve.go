package protocol

import (
	"fmt"
	"slices"
)

// Ancestry answers the graph questions Resolve asks. *Graph implements it.
type Ancestry interface {
	// CommonAncestor returns the nearest common ancestor of the versions,
	// chosen the same way on every device, or ok == false.
	CommonAncestor(ids ...VersionID) (v Version, ok bool)
	// Descends reports whether a descends from b (a == b included).
	Descends(a, b VersionID) bool
	// Restates returns the versions id restates: same path, same content,
	// reachable through supersedes edges that stay on that content (see
	// Graph.Restates).
	Restates(id VersionID) []Version
	// Get returns a known version.
	Get(id VersionID) (Version, bool)
	// PutBack reports whether id, or a version it restates, puts a content
	// back at its path after its author removed that content's conflict
	// copy (see Graph.PutBack); PutBackSelf whether id itself does.
	PutBack(id VersionID) bool
	PutBackSelf(id VersionID) bool
	// RemovedKnowing reports whether a copy of content at name that an
	// entry knowing version back recorded was then removed (see
	// Graph.RemovedKnowing).
	RemovedKnowing(name string, content Version, back VersionID) bool
}

// Outcome says what kind of decision Resolve made, and so what node/ has
// to carry out.
type Outcome uint8

const (
	// OutcomeSingle: the path has one head. Winner keeps the name; there is
	// nothing to resolve.
	OutcomeSingle Outcome = iota + 1
	// OutcomeIdentical: several heads all put the same thing at the path
	// (same kind and content; all directories; or all deletions). Winner
	// keeps the name, and its mode applies; the others are in Dropped. No
	// conflict copy, and nothing to record: the heads may stay standing.
	OutcomeIdentical
	// OutcomeEditBeatsDeletion: some heads were deletions and the rest
	// resolve without a copy. Winner keeps the name (so a device that
	// deleted the file writes it back); the deletions are in Dropped.
	OutcomeEditBeatsDeletion
	// OutcomeMerge: text files with a common ancestor. node/ merges
	// Merge.Sides in order from Merge.Base (MergeAll). If the merge is clean
	// the merged text replaces the file; otherwise it falls back to Winner
	// and Copies exactly as for OutcomeConflict.
	OutcomeMerge
	// OutcomeConflict: concurrent different contents of one kind that cannot
	// be merged. Winner keeps the name; each of Copies is written beside it.
	OutcomeConflict
	// OutcomeKindClash: concurrent heads of different kinds (directory vs
	// file or symlink, file vs symlink). A directory always keeps the name;
	// otherwise Winner is chosen by WinnerOrder. Each other content is
	// written as a conflict copy of its own kind.
	OutcomeKindClash
	// OutcomeOutdated: some heads only restated a content that another
	// head has since replaced (rule 2 of Resolve); they are in Dropped, and
	// what remains is one content (or only deletions). Winner keeps the
	// name. No conflict copy, but node/ records a version that supersedes
	// every head, so the outdated heads stop being heads.
	OutcomeOutdated
)

func (o Outcome) String() string {
	switch o {
	case OutcomeSingle:
		return "single"
	case OutcomeIdentical:
		return "identical"
	case OutcomeEditBeatsDeletion:
		return "edit-beats-deletion"
	case OutcomeMerge:
		return "merge"
	case OutcomeConflict:
		return "conflict"
	case OutcomeKindClash:
		return "kind-clash"
	case OutcomeOutdated:
		return "outdated"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Decision is how one path's concurrent heads are resolved. Every device
// that holds the same versions computes the same Decision.
type Decision struct {
	Path    string
	Outcome Outcome

	// Winner is the version that keeps the name (for OutcomeMerge: the
	// fallback winner if the merge is not clean). It is a deletion only when
	// every head is a deletion.
	Winner Version

	// Merge is set only for OutcomeMerge.
	Merge *MergePlan

	// Copies are the losing contents, each to be written beside the winner
	// under its own name, in WinnerOrder (best first). For OutcomeMerge they
	// apply only when the merge is not clean.
	Copies []ConflictCopy

	// Dropped are heads absorbed without a copy: deletions beaten by an
	// edit, duplicates of a content that is kept or copied, and directories
	// beside the winning directory. In canonical ID order.
	Dropped []Version

	// Superseded lists every head, in canonical ID order: a version that
	// records this resolution supersedes all of them, and so makes the path
	// settle on one head.
	Superseded []VersionID
}

// MergePlan asks node/ for a three-way text merge.
type MergePlan struct {
	// Base is the nearest common ancestor of all Sides.
	Base Version
	// Sides are the heads to merge, two or more, in WinnerOrder (best
	// first). The merge is done pairwise in this order: ((s0+s1)+s2)...,
	// each step from Base (see MergeAll).
	Sides []Version
}

// ConflictCopy is a losing version to be written beside the winner.
type ConflictCopy struct {
	Version Version // the content to write, as the loser recorded it
	Path    string  // the conflict copy's name (see ConflictName)
	// Exists is true when Path already holds this content in the version
	// graph (NameHolds): an earlier decision, on this device or another,
	// wrote this very copy. node/ makes sure the disk holds it but records
	// no new version for it.
	Exists bool
}

// Resolve decides how the concurrent heads of one path are resolved, by the
// rules of ARCHITECTURE.md "Conflicts" as docs/protocol/sync-core.md spells
// them out:
//
//  1. One head: it stands (OutcomeSingle).
//  2. An outdated restatement is dropped without a copy: a head that
//     restates a content (Ancestry.Restates: typically another device's
//     resolution that kept that content) from which a head with other
//     content descends, or a head whose exact content a head with other
//     content directly supersedes in another version, one the head does
//     not itself descend from (an identical conflict copy recorded by two
//     devices, one of which a user then deleted; a head that does descend
//     from it was put back on purpose, and stays). That head's author
//     already had the content and
//     moved on (merged it, copied it, replaced or deleted it), so the
//     restatement brings nothing new; resolving it again would copy a
//     content a second time or undo a later edit or deletion. If every
//     head is outdated, none is dropped. When one content (or only
//     deletions) remains, the outcome is OutcomeOutdated.
//  3. Deletions lose to any concurrent non-deletion and are dropped without
//     a copy; if all heads are deletions the path stays deleted.
//  4. Heads with the same kind and content are one content: the best of
//     them by the resolve order stands for it, the others are dropped. If
//     one content remains, it stands (OutcomeIdentical / EditBeatsDeletion).
//  5. A directory beats files and symlinks (OutcomeKindClash); directories
//     are all alike.
//  6. Several text-file contents whose nearest common ancestor is a text
//     file ask for a three-way merge (OutcomeMerge), within MaxMergeBytes,
//     unless one of them has the ancestor's content: a head that kept it
//     after rule 2 restated it over another content, and merging would
//     undo that choice (see the comment at the merge plan).
//  7. Otherwise the best content by the resolve order keeps the name and
//     each other content becomes a conflict copy (OutcomeConflict, or
//     OutcomeKindClash when kinds differ). A loser whose copy a user has
//     already deleted or renamed away (use answers NameRemoved) is dropped
//     instead, and takes no part in a merge: a device that still had it
//     as a head, deciding from a stale view, must not bring the copy back
//     (docs/simulation.md, finding 6). If only the winner is left, the
//     outcome is OutcomeOutdated.
//
// The resolve order is WinnerOrder applied to each head's origin (the best,
// by WinnerOrder, of the versions that first put its content at the path:
// the head itself unless it restates something), then to the heads
// themselves. A resolution that keeps a content therefore ranks exactly as
// that content did, whichever device recorded it, so decisions over
// different sets of heads never disagree on which of two contents wins.
//
// A conflict copy is named after its content's origin (ConflictName), so
// the same losing content gets the same name in every decision on every
// device. use says what a candidate name holds for the loser's origin: a
// name that holds other content is skipped (the counter n grows), a name
// that already holds the loser's content is reused (ConflictCopy.Exists)
// rather than copied again, and a name whose copy of this content a user
// removed drops the loser (rule 7). use must answer from the replicated
// version graph (Graph.NameUse), not from the local disk, so every device
// names copies alike. use may be nil
// (every name free).
//
// The decision depends only on the set of heads, on anc and on use, never
// on the order of heads. anc may be nil: then no merge is planned, heads
// are not checked for ancestry, no head is outdated and every head is its own
// origin.
//
// Errors: ErrNoHeads for no heads, ErrMixedPaths for heads of different
// paths, ErrInvalidVersion, ErrDuplicateVersion for one ID twice with
// different fields, ErrNotHead when one head descends from another.
func Resolve(heads []Version, anc Ancestry, use NameUseFunc) (Decision, error) {
	if len(heads) == 0 {
		return Decision{}, ErrNoHeads
	}
	path := heads[0].Path
	hs := make([]Version, 0, len(heads))
	for _, h := range heads {
		if err := h.Validate(); err != nil {
			return Decision{}, err
		}
		if h.Path != path {
			return Decision{}, fmt.Errorf("resolving %q and %q: %w", path, h.Path, ErrMixedPaths)
		}
		if i := slices.IndexFunc(hs, func(o Version) bool { return o.ID == h.ID }); i >= 0 {
			if !sameVersion(hs[i], h) {
				return Decision{}, fmt.Errorf("resolving %q: version %v: %w", path, h.ID, ErrDuplicateVersion)
			}
			continue
		}
		hs = append(hs, h)
	}
	origin := make(map[VersionID]Version, len(hs))
	restates := make(map[VersionID][]Version, len(hs))
	for _, h := range hs {
		origin[h.ID] = h
		if anc != nil && len(hs) > 1 {
			r := anc.Restates(h.ID)
			restates[h.ID] = r
			origin[h.ID] = originOf(h, r)
		}
	}
	// Best first. From here on nothing depends on the caller's order.
	slices.SortFunc(hs, func(a, b Version) int {
		if c := WinnerOrder(origin[b.ID], origin[a.ID]); c != 0 {
			return c
		}
		return WinnerOrder(b, a)
	})

	if anc != nil {
		for _, a := range hs {
			for _, b := range hs {
				if a.ID != b.ID && anc.Descends(a.ID, b.ID) {
					return Decision{}, fmt.Errorf("resolving %q: %v descends from %v: %w", path, a.ID, b.ID, ErrNotHead)
				}
			}
		}
	}

	d := Decision{Path: path}
	for _, h := range hs {
		d.Superseded = append(d.Superseded, h.ID)
	}
	slices.SortFunc(d.Superseded, VersionID.Compare)
	defer func() { slices.SortFunc(d.Dropped, func(a, b Version) int { return a.ID.Compare(b.ID) }) }()

	if len(hs) == 1 {
		d.Outcome, d.Winner = OutcomeSingle, hs[0]
		return d, nil
	}

	// Rule 2: outdated restatements.
	outdated := false
	if anc != nil {
		var fresh, stale []Version
		for _, h := range hs {
			if isStale(h, hs, restates[h.ID], anc) {
				stale = append(stale, h)
			} else {
				fresh = append(fresh, h)
			}
		}
		if len(fresh) > 0 && len(stale) > 0 {
			d.Dropped = append(d.Dropped, stale...)
			hs, outdated = fresh, true
		}
		if len(hs) == 1 {
			d.Outcome, d.Winner = OutcomeOutdated, hs[0]
			return d, nil
		}
	}

	// Rule 3: deletions.
	var live []Version
	for _, h := range hs {
		if h.Kind != KindDeletion {
			live = append(live, h)
		}
	}
	if len(live) == 0 {
		d.Outcome, d.Winner = OutcomeIdentical, hs[0]
		if outdated {
			d.Outcome = OutcomeOutdated
		}
		d.Dropped = append(d.Dropped, hs[1:]...)
		return d, nil
	}
	deleted := len(live) < len(hs)
	for _, h := range hs {
		if h.Kind == KindDeletion {
			d.Dropped = append(d.Dropped, h)
		}
	}

	// Rules 4 and 5: one representative per content, directories first.
	var reps []Version
	var dir *Version
	for _, h := range live {
		if h.Kind == KindDir {
			if dir == nil {
				dir = &h
			} else {
				d.Dropped = append(d.Dropped, h)
			}
			continue
		}
		if slices.ContainsFunc(reps, func(r Version) bool { return sameContent(r, h) }) {
			d.Dropped = append(d.Dropped, h) // live is best first, so the rep is the best of its content
			continue
		}
		reps = append(reps, h)
	}
	if dir != nil {
		reps = append([]Version{*dir}, reps...)
	}

	if len(reps) == 1 {
		d.Winner = reps[0]
		d.Outcome = OutcomeIdentical
		switch {
		case deleted:
			d.Outcome = OutcomeEditBeatsDeletion
		case outdated:
			d.Outcome = OutcomeOutdated
		}
		return d, nil
	}

	d.Winner = reps[0]
	// A loser its own author put back after removing its copy (a head of
	// its content that is itself a put-back: PutBackSelf; a resolution
	// that only kept it removed nothing) is a copy removed again only by a
	// deletion recorded after the put-back:
	// its content's origin may be older (a second put-back by a device
	// whose index still held the first restates it), and the move's own
	// deletion of the copy would read as the user removing it.
	backs := map[VersionID]Version{} // each loser's latest put-back head
	if anc != nil {
		for _, r := range reps[1:] {
			for _, h := range live {
				if b, ok := backs[r.ID]; sameContent(h, r) && (!ok || h.Clock > b.Clock) && anc.PutBackSelf(h.ID) {
					backs[r.ID] = h
				}
			}
		}
	}
	var removed []Version
	d.Copies, removed = conflictCopies(path, reps[1:], origin, backs, anc, use)
	if len(removed) > 0 {
		// A user already deleted (or renamed away) the copy of these
		// contents: they are dropped, not copied again and not merged in.
		d.Dropped = append(d.Dropped, removed...)
		reps = slices.DeleteFunc(reps, func(r Version) bool {
			return slices.ContainsFunc(removed, func(x Version) bool { return x.ID == r.ID })
		})
		if len(reps) == 1 {
			d.Outcome = OutcomeOutdated
			return d, nil
		}
	}
	d.Outcome = OutcomeConflict
	for _, r := range reps[1:] {
		if r.Kind != reps[0].Kind {
			d.Outcome = OutcomeKindClash
		}
	}
	if d.Outcome == OutcomeConflict && anc != nil && mergeable(reps...) {
		ids := make([]VersionID, len(reps))
		for i, r := range reps {
			ids[i] = r.ID
		}
		// A side that holds the base's content did not leave it unchanged:
		// after rule 2 it is a head that restated that content over the
		// other side's (two resolutions that chose differently). A
		// three-way merge would read it as "unchanged" and hand the path to
		// the other side, so the content picked depends on which common
		// ancestor a device's heads have; devices that saw different heads
		// then flip the path back and forth, each merge a new version
		// (docs/simulation.md, finding 6). Such heads are ranked instead.
		if base, ok := anc.CommonAncestor(ids...); ok && mergeable(base) &&
			!slices.ContainsFunc(reps, func(r Version) bool { return sameContent(r, base) }) {
			d.Outcome = OutcomeMerge
			d.Merge = &MergePlan{Base: base, Sides: reps}
		}
	}
	return d, nil
}

// originOf returns the origin of head h given what it restates: among h and
// the restated versions, those that restate nothing further within the set
// (the versions that first put this content at the path), the best by
// WinnerOrder. It is h itself when h restates nothing.
func originOf(h Version, restated []Version) Version {
	if len(restated) == 0 {
		return h
	}
	in := make(map[VersionID]bool, len(restated))
	for _, r := range restated {
		in[r.ID] = true
	}
	var best *Version
	for i, r := range restated {
		if slices.ContainsFunc(r.Supersedes, func(p VersionID) bool { return in[p] }) {
			continue
		}
		if best == nil || WinnerOrder(r, *best) > 0 {
			best = &restated[i]
		}
	}
	if best == nil { // only through edges the graph would not count; never for a *Graph
		return h
	}
	return *best
}

// isStale reports whether head h is outdated by another head k with
// other content (rule 2 of Resolve): h restates a content from which k
// descends, or h is a file or symlink whose content a version k directly
// supersedes had (k's author had exactly this content at the
// path and replaced or deleted it). Heads with h's own content do not
// count: two devices that kept one content both descend from it, and
// neither replaced it.
//
// The second test links heads by content where no edge does: two devices
// that each recorded the same conflict copy (identical heads), and a user
// who deleted or renamed away the one their device had; or a stale device
// that records a content again without the version it came from. Only
// versions k directly supersedes count, so a concurrent revert to an
// older content (which k's author had long before) stays a conflict.
// Directories are left out: all directories are alike, and a directory
// always keeps its name (rule 5).
//
// A put-back (Graph.PutBack) is a choice made knowing the copy is gone,
// not an outdated restatement: the second test spares h when h or a
// version it restates is one (docs/simulation.md, finding 13), the first
// only when h itself is (PutBackSelf: a second put-back by a device whose
// index still held the first restates the first, which the winner
// replaced; a resolution by another device that merely kept a put-back's
// content is still outdated by a later edit of it, or by the copy of it
// the user then deleted). Both are asked only of a head a test calls
// stale, as they look at copies' names. Neither spares a head whose twin
// k directly replaced (twinReplaced).
func isStale(h Version, heads []Version, restated []Version, anc Ancestry) bool {
	self, back := -1, -1 // PutBackSelf and PutBack of h, once asked
	ask := func(memo *int, f func(VersionID) bool) bool {
		if *memo < 0 {
			*memo = 0
			if f(h.ID) {
				*memo = 1
			}
		}
		return *memo == 1
	}
	for _, k := range heads {
		if k.ID == h.ID || sameContent(k, h) {
			continue
		}
		if twinReplaced(k, h, restated, anc) {
			return true // no put-back spares it: k's author knew h's state
		}
		for _, r := range restated {
			if anc.Descends(k.ID, r.ID) {
				if !ask(&self, anc.PutBackSelf) {
					return true
				}
				break
			}
		}
		if (h.Kind == KindFile || h.Kind == KindSymlink) && replaced(k, h, anc) && !ask(&back, anc.PutBack) {
			return true
		}
	}
	return false
}

// twinReplaced reports whether k directly and validly supersedes a twin
// of h: a version t at h's path with h's content, neither descending from
// the other, that knows what h knows and that h knows what it knows: t
// descends from every version h restates (h restating at least one), and
// h descends from every version t supersedes. Identical concurrent
// resolutions of the same heads are one state, recorded twice: a user who
// replaced or deleted one of them knew everything the other says, so the
// other is outdated too, whatever exemptions it has. An older record of
// the content is no twin: a put-back made by a device that did not know
// what that record superseded is a new choice, which must meet k as a
// conflict (TestPutBackOfAnOlderRestatementKept; dropping it lost the
// content everywhere, as in finding 13). A put-back's (PutBack, PutBackSelf) is one of those:
// it spares a choice made knowing a copy was gone against a version whose
// author had replaced an older state of the content, not against one whose
// author replaced this very state (docs/simulation.md, finding 5: the
// put-back's author's resolution beat a deletion of its twin, and a
// deletion the user had confirmed past the mass-delete guard was undone
// everywhere).
func twinReplaced(k, h Version, restated []Version, anc Ancestry) bool {
	if len(restated) == 0 {
		return false
	}
	for _, p := range k.Supersedes {
		t, ok := anc.Get(p)
		if !ok || t.Clock >= k.Clock || t.Path != h.Path || !sameContent(t, h) || anc.Descends(h.ID, p) || anc.Descends(p, h.ID) {
			continue
		}
		if knowsAll(anc, p, restated) && knowsAllIDs(anc, h.ID, t.Supersedes) {
			return true
		}
	}
	return false
}

// knowsAll reports whether id descends from every version of vs.
func knowsAll(anc Ancestry, id VersionID, vs []Version) bool {
	for _, v := range vs {
		if !anc.Descends(id, v.ID) {
			return false
		}
	}
	return true
}

// knowsAllIDs reports whether id descends from every version of ids.
func knowsAllIDs(anc Ancestry, id VersionID, ids []VersionID) bool {
	for _, q := range ids {
		if !anc.Descends(id, q) {
			return false
		}
	}
	return true
}

// replaced reports whether k directly and validly supersedes a version at
// h's path with h's kind and content that h does not descend from. A head
// that descends from that version was written by a device that knew it
// and then put its content back on purpose (a user who renamed its
// conflict copy back onto the path, or reverted to it after another
// edit): that is a new choice, concurrent with k's, and must meet k as a
// conflict, not be dropped (dropping it lost the content everywhere when
// the copy was the one renamed back: docs/simulation.md, deterministic
// tier, finding 1). So is a head that puts the content back after its own
// author removed the content's conflict copy (Graph.PutBack): a device
// that had written the copy but not yet the winner at the path, whose
// user moved the copy back onto the path, descends from neither
// (docs/simulation.md, finding 13); isStale asks it.
func replaced(k, h Version, anc Ancestry) bool {
	for _, p := range k.Supersedes {
		v, ok := anc.Get(p)
		if ok && v.Clock < k.Clock && v.Path == h.Path && sameContent(v, h) && !anc.Descends(h.ID, p) {
			return true
		}
	}
	return false
}

// mergeable reports whether every version is a text file small enough to
// merge.
func mergeable(vs ...Version) bool {
	for _, v := range vs {
		if v.Kind != KindFile || !v.Text || v.Size > MaxMergeBytes {
			return false
		}
	}
	return true
}

// conflictCopies names a conflict copy for each loser, in order: after the
// loser's origin, skipping names given to earlier copies and names that
// hold other content, and reusing a name that already holds the loser's
// content. A loser whose copy a user already removed (NameRemoved) gets no
// copy; it is returned in removed. A removal counts only when the copy was
// recorded after the loser's origin; for a loser put back by its author
// (backs[loser], Resolve), only when it was recorded after the put-back
// and, where anc can tell (RemovedKnowing), by an entry that knew the
// put-back: a copy of the same content made concurrently elsewhere and
// settled away at the name is no user removing the put-back's copy
// (docs/simulation.md, deterministic finding 4).
func conflictCopies(path string, losers []Version, origin map[VersionID]Version, backs map[VersionID]Version, anc Ancestry, use NameUseFunc) (copies []ConflictCopy, removed []Version) {
	used := map[string]bool{path: true}
	copies = make([]ConflictCopy, 0, len(losers))
	for _, l := range losers {
		o, ok := origin[l.ID]
		if !ok {
			o = l
		}
		for n := 1; ; n++ {
			name := ConflictName(path, o, n)
			if used[name] {
				continue
			}
			u := NameFree
			if use != nil {
				q := o
				back, isBack := backs[l.ID]
				if isBack {
					q.Clock = max(q.Clock, back.Clock)
				}
				u = use(name, q)
				if u == NameRemoved && isBack && anc != nil && !anc.RemovedKnowing(name, q, back.ID) {
					u = NameFree
				}
			}
			if u == NameTaken {
				continue
			}
			if u == NameRemoved {
				removed = append(removed, l)
				break
			}
			used[name] = true
			copies = append(copies, ConflictCopy{Version: l, Path: name, Exists: u == NameHolds})
			break
		}
	}
	return copies, removed
}
