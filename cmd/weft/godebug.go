// The go:debug line turns off the runtime's periodic re-read of the cgroup
// CPU limit (Go 1.25's container-aware GOMAXPROCS, done by sysmon), 7.5 %
// of an idle agent's CPU in perf (docs/benchmarks.md, 2026-12-04).
// GOMAXPROCS is still set from the limit at start; an agent whose limit
// changes while it runs keeps the first value until it restarts.

//go:debug updatemaxprocs=0
package main
