//go:build !race

package rxstamp

// raceEnabled: the race detector is on. See Conn.Read.
const raceEnabled = false
