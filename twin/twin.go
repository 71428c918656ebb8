package twin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/sim"
)

// Version is the Twin file's format version.
const Version = 1

// ProfileLlamaCpp is Twin.Profile for a twin of llama.cpp's llama-server.
const ProfileLlamaCpp = "llamacpp"

// ErrBadTwin is wrapped by the errors of a Twin file that cannot be used.
var ErrBadTwin = errors.New("twin: bad twin file")

// A Twin is a cost model fitted to a measured server, with what it was
// fitted on, how well it fits those records, and how well it predicted
// runs it was not fitted to. It is written as JSON (Save) and loaded by
// the embedded engine as a preset (Preset).
type Twin struct {
	// Version is the file's format (Version).
	Version int `json:"version"`
	// Coefficients are the fitted cost model (sim.Coefficients has the
	// equations), in seconds.
	Coefficients sim.Coefficients `json:"coefficients"`
	// PrefillChunk is the prefill chunk, in tokens, the fit split long
	// prefills by: the engine loaded with the twin prefills in it too.
	PrefillChunk int `json:"prefill_chunk"`
	// Profile is the embedded engine's profile that schedules as the
	// measured server did: "" (exo's batch generator: a prompt prefilled
	// whole, the running batch stalled meanwhile, its first token from
	// the next decode step) or ProfileLlamaCpp (llama-server's slots,
	// prompt batches of PrefillChunk tokens mixed with the generating
	// slots' tokens, the first token sampled in the prompt's last batch).
	Profile string `json:"profile,omitempty"`
	// Batch is, for ProfileLlamaCpp, the most tokens one step takes over
	// all slots (0 means PrefillChunk, llama-server's n_batch, which one
	// prompt may fill). Ollama's runner takes at most PrefillChunk tokens
	// of each slot's prompt a step, PrefillChunk × slots in all (the
	// n_batch it gives llama.cpp), so a twin of Ollama has that.
	Batch int `json:"batch,omitempty"`
	// ClientOverheadS is the constant the client's TTFT held beyond the
	// server's work (the HTTP path, the network), in seconds: a
	// figure of the measured setup, not of the engine, whose own HTTP
	// path adds its own.
	ClientOverheadS float64 `json:"client_overhead_s"`
	// OverheadSlots is how many requests' ClientOverheadS the measured
	// server ran at once, read from the bursts (0: no bound seen, all of
	// them): the twin's RequestOverheadSlots.
	OverheadSlots int `json:"overhead_slots,omitempty"`
	// MaxBatchSeen is the largest batch a burst of the records showed
	// (requests that got a token at one step).
	MaxBatchSeen int `json:"max_batch_seen"`
	// Base is the built-in preset whose hardware and model shape size
	// what the coefficients do not time (memory, power).
	Base string `json:"base_preset"`
	// Server is what was measured.
	Server Server `json:"server"`
	// Residuals are the fit's own errors, per kind of observation, on
	// the records it was fitted to.
	Residuals []Residuals `json:"residuals"`
	// Notes say which terms the records could not identify and how the
	// fit settled them.
	Notes []string `json:"notes,omitempty"`
	// Fidelity is the error of the twin's predictions on runs it was not
	// fitted to; null until measured.
	Fidelity *Fidelity `json:"fidelity,omitempty"`
}

// Server names what a Twin was fitted on.
type Server struct {
	// Name is the server ("exo", "vllm", "ollama", "llama.cpp"), Model
	// the model the requests named and ServedModel the one the server
	// said answered, when it differs.
	Name        string `json:"name,omitempty"`
	Model       string `json:"model"`
	ServedModel string `json:"served_model,omitempty"`
	// Simulated says the records came from the embedded engine.
	Simulated bool `json:"simulated,omitempty"`
	// Requests counts the successful requests fitted.
	Requests int `json:"requests"`
	// Provenance is the measured run's, when known.
	Provenance *benchkit.Provenance `json:"provenance,omitempty"`
}

// Check reports a twin no engine can run: a wrong version, a negative
// or non-finite coefficient, no decode or prefill cost.
func (t Twin) Check() error {
	if t.Version != Version {
		return fmt.Errorf("%w: version %d, expected %d", ErrBadTwin, t.Version, Version)
	}
	c := t.Coefficients
	for _, v := range []struct {
		name string
		x    float64
	}{{"step_overhead_s", c.StepOverhead}, {"decode_base_s", c.DecodeBase}, {"decode_per_context_token_s", c.DecodePerContextToken},
		{"decode_per_request_s", c.DecodePerRequest}, {"prefill_base_s", c.PrefillBase}, {"prefill_per_token_s", c.PrefillPerToken},
		{"prefill_per_pair_s", c.PrefillPerPair}, {"prefill_per_cached_token_s", c.PrefillPerCachedToken}} {
		if v.x < 0 || math.IsNaN(v.x) || math.IsInf(v.x, 0) || v.x > 3600 {
			return fmt.Errorf("%w: coefficients.%s = %v, expected a duration in seconds in [0, 3600]", ErrBadTwin, v.name, v.x)
		}
	}
	if c.StepOverhead+c.DecodeBase+c.DecodePerRequest <= 0 {
		return fmt.Errorf("%w: a decode step would take no time", ErrBadTwin)
	}
	if c.StepOverhead+c.PrefillBase+c.PrefillPerToken <= 0 {
		return fmt.Errorf("%w: a prefill would take no time", ErrBadTwin)
	}
	if t.Profile != "" && t.Profile != ProfileLlamaCpp {
		return fmt.Errorf("%w: profile %q, expected \"\" or %q", ErrBadTwin, t.Profile, ProfileLlamaCpp)
	}
	if c.MaxRunning < 0 || t.PrefillChunk < 0 || t.Batch < 0 || t.OverheadSlots < 0 {
		return fmt.Errorf("%w: max_running %d, prefill_chunk %d, batch %d and overhead_slots %d must not be negative", ErrBadTwin,
			c.MaxRunning, t.PrefillChunk, t.Batch, t.OverheadSlots)
	}
	if t.Base != "" {
		if _, err := sim.PresetByName(t.Base); err != nil {
			return fmt.Errorf("%w: base_preset: %v", ErrBadTwin, err)
		}
	}
	return nil
}

// Parse decodes and checks a Twin file's JSON; unknown fields are errors.
func Parse(b []byte) (Twin, error) {
	var t Twin
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&t); err != nil {
		return Twin{}, fmt.Errorf("%w: %v", ErrBadTwin, err)
	}
	if d.More() {
		return Twin{}, fmt.Errorf("%w: data after the twin object", ErrBadTwin)
	}
	return t, t.Check()
}

// Load reads and checks the Twin file at path.
func Load(path string) (Twin, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Twin{}, err
	}
	t, err := Parse(b)
	if err != nil {
		return Twin{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Save writes t to path as indented JSON, through a temporary file
// renamed into place, so that a failed write leaves no half file.
func (t Twin) Save(path string) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Preset is the embedded engine's preset for the twin: the Base preset's
// hardware and model (memory, power, the model id the engine serves)
// with the fitted Coefficients in place of its roofline's time terms.
// Serve it with Options.PrefillChunk = t.PrefillChunk (Options).
func (t Twin) Preset() sim.Preset {
	p := sim.Fast()
	if t.Base != "" {
		if b, err := sim.PresetByName(t.Base); err == nil {
			p = b
		}
	}
	c := t.Coefficients
	p.Fitted = &c
	name := t.Server.Model
	if name == "" {
		name = "unknown model"
	}
	p.Name = "twin:" + name
	p.Hardware.Name = fmt.Sprintf("twin of %s on %s", name, orString(t.Server.Name, "a measured server"))
	return p
}

// Options are the embedded engine's options for the twin: its Preset,
// its prefill chunk, ClientOverheadS as the engine's RequestOverhead
// (OverheadSlots of them at once) (the
// measured server's path outside its engine, which dominates the TTFT of
// a small model on Ollama; served live, the engine's handler counts its
// own parsing toward it, and only the client's and loopback's fraction
// of a millisecond adds), and for a twin of llama.cpp the LlamaCpp profile
// with MaxRunning slots and batches of PrefillChunk tokens.
func (t Twin) Options() sim.Options {
	o := sim.Options{Preset: t.Preset(), PrefillChunk: t.PrefillChunk,
		RequestOverhead: time.Duration(t.ClientOverheadS * float64(time.Second)), RequestOverheadSlots: t.OverheadSlots}
	if t.Profile == ProfileLlamaCpp {
		o.Profile = sim.LlamaCpp
		o.LlamaCpp.Slots = t.Coefficients.MaxRunning
		o.LlamaCpp.Batch = t.PrefillChunk
		if t.Batch > 0 {
			o.LlamaCpp.Batch = t.Batch
		}
	}
	return o
}

func orString(s, or string) string {
	if s == "" {
		return or
	}
	return s
}
