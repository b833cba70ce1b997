// Package bench runs the B-scenarios of BENCHMARKS.md on real weft
// processes and sets each result beside a baseline measured in the same run.
//
// Every scenario starts separate `weft up` agents, each with its own home
// under a temporary directory, listening on 127.0.0.1 only with LAN
// discovery off, and drives them the way a person would: files written into
// a folder, the CLI for init/invite/join, and the agent's local HTTP API
// (home/api.json) for status, scans and the event stream. Nothing is built
// here: Config.Bin names the weft binary to run (`weft bench` passes its own
// executable; the tests build one in TestMain).
//
// What is measured and how:
//   - wall time with the harness's monotonic clock, from the act that starts
//     a scenario (a rename into the folder, an agent start) to the moment the
//     harness sees the result on the receiver's disk (polling stat and
//     content; files are applied by atomic rename, so a file under its final
//     name is complete);
//   - CPU seconds and peak resident memory of each agent from
//     /proc/PID/stat (utime+stime) and /proc/PID/status (VmHWM);
//   - bytes on the wire from the agents' own per-peer counters
//     (GET /v1/status, the same numbers `weft status --json` prints);
//   - fsync and fdatasync calls with `strace -f -c` in a separate pass whose
//     times are never reported (strace slows every syscall).
//
// Baselines in the same run: a plain TCP copy over 127.0.0.1 of the same
// bytes (net.Listen + io.Copy), a plain write+fsync of the same files, and
// BLAKE3 over the same bytes. Throughputs are printed with their ratio to
// the ceiling, the slower of TCP and disk.
//
// The relay scenarios (B1-relay, B3-relay, B4, B7, B8) also start a
// `weft relay` process with its own home, listening on 127.0.0.1 with its
// Prometheus /metrics on an ephemeral port (relayproc.go); devices list it
// in their vault (`weft init FOLDER --relay MA`). Its CPU and memory come
// from /proc like an agent's; what it stores (bytes, chunks, entries) and
// the bytes it received come from its /metrics; its disk use from the size
// of its home. "Uploaded" means the uploading device's status says
// `unsafe` 0: the relay holds every entry and chunk.
//
// Each scenario repeats Config.Runs times and reports the median with min
// and max, beside the 1-minute load average at each run's start and end
// (the machines are shared).
//
// Sizes that do not fit: the large scenarios ask fit (fit.go) how much
// data they may use, which is the scale's size unless its copies would
// leave less than Config.KeepFree on the disk or it exceeds
// Config.MaxData (a cap for time); a reduced run says so in its table and
// in Result.Reduced, so that it never passes for the full scale.
//
// Where the time goes: with Config.ProfileDir set, every agent and relay
// runs with its hidden --cpuprofile flag, one file per process launch
// (profile.go), for `go tool pprof`.
package bench
