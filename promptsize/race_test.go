//go:build race

package promptsize_test

// raceEnabled is true when the tests run under the race detector, which
// makes real tokenizers about ten times slower.
const raceEnabled = true
