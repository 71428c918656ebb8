//go:build !race

package predict

// raceEnabled: the race detector is on.
const raceEnabled = false
