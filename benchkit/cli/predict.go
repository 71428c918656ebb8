package cli

import (
	"strings"

	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/twin"
)

// PredictUsage is the help of a program's --predict flag, after what it
// predicts.
const PredictUsage = "on the embedded engine's virtual clock instead of sending it, in a fraction of its time (no server address; --sim-preset a built-in preset or a twin file): every figure labelled predicted (docs/PREDICT.md)"

// CheckPredict refuses --predict where the embedded engine is not what
// would be measured (another server's address), or serves a profile the
// prediction does not model (llama.cpp's slots, Ollama's API, a twin
// file of llama-server); a *UsageError.
func (t *Target) CheckPredict() error {
	switch {
	case !t.Embedded():
		flag := "--base-url"
		if t.Exo {
			flag = "--host"
		}
		return Usagef("--predict predicts the embedded engine; it takes no %s", flag)
	case t.SimProfile != "" && t.SimProfile != SimVLLM && t.SimProfile != SimSGLang:
		return Usagef("--predict predicts the embedded engine's vLLM API; --sim-profile %s is not predicted", t.SimProfile)
	}
	if strings.HasSuffix(t.Preset, ".json") {
		// A file that does not load is Check's to report.
		if _, tw, err := t.simPreset(); err == nil && tw.Profile == twin.ProfileLlamaCpp && !t.Exo {
			return Usagef("--predict does not predict a twin of llama-server (%s): its slot scheduler is not predicted", t.Preset)
		}
	}
	return nil
}

// PredictAPI is the API the Target's client speaks to the embedded engine,
// as package benchkit/predict names it: exo's bench API for an exo
// target, the vLLM API otherwise.
func (t *Target) PredictAPI() sim.PredictAPI {
	if t.Exo {
		return sim.PredictExoBench
	}
	return sim.PredictVLLM
}
