//go:build race

package seal

// raceEnabled says this test binary was built with -race, under which
// sync.Pool drops items at random (TestSealFileAllocationsBounded).
const raceEnabled = true
