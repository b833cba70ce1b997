// Package watch reports what changes in a folder, settled: it watches
// every directory with fsnotify (adding new ones as they appear, and
// saying which subtrees it could not watch when the system's watch limit
// is reached), and hands out each changed path once it has been quiet for
// the settle delay, or asks for a full rescan when events were lost. It
// reports paths only; node/folder's scanner looks at them.
package watch
