//go:build !race

package promptsize_test

const raceEnabled = false
