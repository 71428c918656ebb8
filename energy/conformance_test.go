package energy_test

import (
	"context"
	"testing"

	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/energy/sourcetest"
)

// The sources of this package pass the conformance kit: nvidia-smi and
// the command over runners that print canned output, powercap over a fake
// tree (powercap_linux_test.go).

func TestNvidiaSMIConforms(t *testing.T) {
	run := energy.RunnerFunc(func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return []byte("0, 71.5, 2000\n1, [N/A], 3000\n"), nil
	})
	sourcetest.Run(t, energy.NvidiaSMI{Runner: run})
}

func TestCommandConforms(t *testing.T) {
	run := energy.RunnerFunc(func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return []byte("rack1 120\nrack2 80 W\n"), nil
	})
	sourcetest.Run(t, energy.Command{Name: "meter", Runner: run})
}
