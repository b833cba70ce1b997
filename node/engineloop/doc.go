// Package engineloop gives each vault's reconcile engine (protocol/engine)
// one owner: a goroutine that runs the work handed to it in order, so the
// engine, which has no lock, is never touched by two goroutines at once,
// and nothing outside this package holds it. Callers post what needs no
// answer and wait on what does; while no loop runs, a caller runs its work
// itself under the same mutex.
package engineloop
