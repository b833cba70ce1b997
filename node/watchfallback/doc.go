// Package watchfallback decides the rescans that stand in for the file
// watcher where it cannot watch. A folder with more directories than the system
// lets one user watch (inotify's max_user_watches, 8,192 on many systems)
// lost its watcher altogether: the watcher stopped with "no space left on
// device", changes went unseen until the next full rescan 10 minutes
// later, and status said in-sync. Now the watcher watches what it can and
// names the subtrees it could not (watch.Config.OnUnwatched); a
// watcher that cannot run at all leaves the whole folder unwatched. Either
// way weft rescans what is not watched, every Every or, when
// those rescans take long, every CostFactor times the last one's
// duration (at most 5 % of a core spent on them), so a change there is
// seen within seconds rather than minutes. Doctor says so, with how to
// raise the limit, and /metrics counts the unwatched directories.
//
// Fallback has its own lock and does no IO but read the system's watch
// limits for its advice: the time comes in as an argument, and the vault
// runs the rescans it asks for.
package watchfallback
