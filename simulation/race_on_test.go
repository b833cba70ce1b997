//go:build race

package simulation

// raceEnabled says this test binary was built with -race (see
// TestS1Small).
const raceEnabled = true
