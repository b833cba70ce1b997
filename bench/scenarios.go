package bench

import (
	"fmt"
	"time"
)

// sizes are a scenario's parameters at one scale.
type sizes struct {
	notes       int           // B1: notes of 2 KiB
	edits       int           // B2: appends
	spacing     time.Duration // B2: time between appends
	bigFile     int64         // B3: one file
	manyFiles   int           // B5: file count
	manySize    int64         // B5: each file
	editFile    int64         // B6: the file edited
	rescanSets  []int         // B9: file counts
	restartSet  int           // B10: files held in sync
	resumeFile  int64         // B4: upload killed half way
	idle        time.Duration // B7: each idle window of the relay
	relayEdits  int           // B7: edits after B1's notes
	mixed       mixedVault    // B8
	syncTimeout time.Duration // how long one sync may take before the run fails
}

func sizesFor(s Scale) sizes {
	switch s {
	case Tiny:
		return sizes{notes: 200, edits: 5, spacing: 200 * time.Millisecond, syncTimeout: 2 * time.Minute}
	case Full:
		return sizes{
			notes: 10000, edits: 20, spacing: 2 * time.Second,
			bigFile: 2 << 30, manyFiles: 200, manySize: 20 << 20,
			editFile: 4 << 30, rescanSets: []int{10000, 100000}, restartSet: 100000,
			resumeFile: 20 << 30, idle: 60 * time.Second, relayEdits: 1000,
			mixed:       mixedVault{notes: 20000, images: 3000, imageSize: 2 << 20, archives: 64, archiveSize: 64 << 20},
			syncTimeout: 30 * time.Minute,
		}
	default:
		return sizes{
			notes: 2000, edits: 20, spacing: 500 * time.Millisecond,
			bigFile: 256 << 20, manyFiles: 40, manySize: 4 << 20,
			editFile: 256 << 20, rescanSets: []int{1000, 10000}, restartSet: 5000,
			resumeFile: 512 << 20, idle: 10 * time.Second, relayEdits: 200,
			mixed:       mixedVault{notes: 2000, images: 12, imageSize: 2 << 20, archives: 2, archiveSize: 6 << 20},
			syncTimeout: 10 * time.Minute,
		}
	}
}

// scenarios lists every B-scenario in BENCHMARKS.md order.
func scenarios() []scenario {
	return []scenario{
		{
			id: "B1", title: "first sync of many notes, A -> B directly", tiny: true,
			target: "direct <= 3 s (10,000 notes)",
			params: func(s Scale) string {
				return fmt.Sprintf("%d notes of 2 KiB in 60 folders", sizesFor(s).notes)
			},
			run: runB1, fsyncPass: fsyncB1,
		},
		{
			id: "B1-relay", title: "first sync A -> relay -> B with B offline during the upload",
			target: "<= 6 s (10,000 notes); < 0.1 fsync per note on the relay", relay: true, tiny: true,
			params: func(s Scale) string {
				return fmt.Sprintf("%d notes of 2 KiB in 60 folders, via a relay", sizesFor(s).notes)
			},
			run: runB1Relay, fsyncPass: fsyncB1Relay,
		},
		{
			id: "B2", title: "1 KiB appended to a note on A, repeatedly", tiny: true,
			target: "end to end p50 <= 250 ms, p95 <= 400 ms; wire p50 <= 10 ms",
			params: func(s Scale) string {
				z := sizesFor(s)
				return fmt.Sprintf("%d appends, %s apart", z.edits, z.spacing)
			},
			run: runB2,
		},
		{
			id: "B3", title: "one large random file A -> B",
			target: ">= 85 % of the ceiling and >= 400 MiB/s where the disk allows; RSS <= 64 MiB",
			params: func(s Scale) string { return fmt.Sprintf("%d MiB", sizesFor(s).bigFile>>20) },
			run:    runB3,
		},
		{
			id: "B3-relay", title: "one large random file A -> relay -> B with B offline during the upload",
			target: ">= 85 % of the ceiling; RSS <= 64 MiB everywhere", relay: true,
			params: func(s Scale) string { return fmt.Sprintf("%d MiB via a relay", sizesFor(s).bigFile>>20) },
			run:    runB3Relay,
		},
		{
			id: "B4", title: "large upload to the relay, A killed at 50 %, restarted",
			target: "< 1 chunk sent again", relay: true,
			params: func(s Scale) string {
				return fmt.Sprintf("%d MiB, or the largest one file may be and the disk holds", sizesFor(s).resumeFile>>20)
			},
			run: runB4,
		},
		{
			id: "B5", title: "many large files written at once",
			target: "zero failures; throughput within 20 % of B3",
			params: func(s Scale) string {
				z := sizesFor(s)
				return fmt.Sprintf("%d files of %d MiB", z.manyFiles, z.manySize>>20)
			},
			run: runB5,
		},
		{
			id: "B6", title: "edits in the middle of a large file",
			target: "overwrite <= 1.5 MiB sent; each insertion <= 2 MiB",
			params: func(s Scale) string {
				return fmt.Sprintf("%d MiB file; 1 MiB overwritten at an unaligned offset; 1 MiB inserted; 1,000,000 bytes inserted", sizesFor(s).editFile>>20)
			},
			run: runB6,
		},
		{
			id: "B7", title: "relay idle fresh and after B1, then further edits",
			target: "idle RSS <= 32 MiB after B1; idle CPU < 0.5 s a minute; <= 1 KiB per retained version beyond its data", relay: true,
			params: func(s Scale) string {
				z := sizesFor(s)
				return fmt.Sprintf("idle %s; %d notes; %d edits", z.idle, z.notes, z.relayEdits)
			},
			run: runB7,
		},
		{
			id: "B8", title: "mixed vault on the relay",
			target: "bytes on disk / plaintext <= 1.01", relay: true,
			params: func(s Scale) string { return sizesFor(s).mixed.String() },
			run:    runB8,
		},
		{
			id: "B9", title: "rescan with nothing changed",
			target: "<= 100 ms at 10,000 files; <= 1 s at 100,000",
			params: func(s Scale) string { return fmt.Sprintf("%v files of 1 KiB", sizesFor(s).rescanSets) },
			run:    runB9,
		},
		{
			id: "B10", title: "restart of an agent holding many files in sync",
			target: "status answers <= 0.2 s; in sync <= 1 s and < 1 MiB sent (100,000 files)",
			params: func(s Scale) string { return fmt.Sprintf("%d files of 2 KiB", sizesFor(s).restartSet) },
			run:    runB10,
		},
		{
			id: "B11", title: "honest 5 MiB sync A -> B while strangers attack A",
			target: "under attack / without <= 2x; peak RSS A <= before + 64 MiB",
			params: func(Scale) string {
				return fmt.Sprintf("%d MiB file; 4 identities x 32 streams x 3 protocols, 8 MiB first frames, for %s", strangerFile>>20, strangerAttack)
			},
			run: runB11,
		},
	}
}
