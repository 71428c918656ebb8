//go:build integration

package integration

import (
	"fmt"
	"os"
	"testing"

	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// simServer is the embedded engine the suite started for
// INFERBENCH_SIM_PROFILE, closed when the tests end.
var simServer *sim.Server

// startSim starts the embedded engine in the named behaviour profile,
// counting prompts with tok as the real server counts them with its model's
// template, and serving model under that name. It returns the server's
// root URL.
func startSim(profile, model string, tok *hf.Tokenizer) (string, error) {
	switch profile {
	case "llamacpp":
		simServer = sim.NewServer(sim.Options{Preset: sim.Fast(), Counter: tok, Profile: sim.LlamaCpp,
			LlamaCpp: sim.LlamaCppOptions{Alias: model}})
	default:
		return "", fmt.Errorf("INFERBENCH_SIM_PROFILE is %q: want llamacpp", profile)
	}
	return simServer.URL, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if simServer != nil {
		simServer.Close()
	}
	os.Exit(code)
}
