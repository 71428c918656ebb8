package disagg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/inferbench/inferbench/engine/exo"
)

// A PrefillCheck says where the engine reports that a phase's prefill ran,
// from one extra request (a probe) sent after the phase's measured
// requests.
type PrefillCheck struct {
	// Reported is true when the engine said where the probe's prefill ran
	// (the embedded engine does, in its "sim" block; exo says nothing and
	// falls back to local prefill silently).
	Reported bool `json:"reported"`
	// Remote is whether the probe's prefill ran on a linked prefill
	// instance; ServedBy the instance that answered it. Both are empty
	// when not reported.
	Remote   *bool  `json:"remote_prefill,omitempty"`
	ServedBy string `json:"served_by,omitempty"`
	// WantRemote and WantServedBy are what the phase should show.
	WantRemote   bool   `json:"want_remote_prefill"`
	WantServedBy string `json:"want_served_by"`
	// OK is whether the report matches what the phase should show; null
	// when not reported.
	OK *bool `json:"ok"`
	// Note says in words what was found.
	Note string `json:"note"`
}

// simHeader is the embedded engine's response header (engine/sim's
// SimHeader), by which it labels itself simulated.
const simHeader = "X-Inferbench-Sim"

// probe asks the engine where a prompt of pp tokens for model is
// prefilled; see Benchmark.NoProbe.
func (d *Benchmark) probe(ctx context.Context, model string, pp int, wantRemote bool, wantID string) (PrefillCheck, error) {
	chk := PrefillCheck{WantRemote: wantRemote, WantServedBy: wantID}
	hc := d.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	base := d.Client.BaseURL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/node_id", nil)
	if err != nil {
		return chk, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return chk, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Header.Get(simHeader) == "" {
		chk.Note = "the engine does not report where a request's prefill ran (exo falls back to local prefill without saying so): compare this phase's TTFT and prompt TPS with decode_alone's (--compare-baseline)"
		return chk, nil
	}
	p, err := d.Runner.Builder.Build(ctx, pp)
	if err != nil {
		return chk, fmt.Errorf("build a %d-token probe: %w", pp, err)
	}
	body, err := json.Marshal(map[string]any{"model": model, "messages": p.Messages, "max_tokens": 1, "stream": false})
	if err != nil {
		return chk, err
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+exo.BenchPath, bytes.NewReader(body))
	if err != nil {
		return chk, err
	}
	req.Header.Set("Content-Type", "application/json")
	// The embedded engine's fault injection must not hit the probe.
	req.Header.Set("X-Sim-Fault", "none")
	resp, err = hc.Do(req)
	if err != nil {
		return chk, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return chk, err
	}
	if resp.StatusCode != http.StatusOK {
		return chk, fmt.Errorf("POST %s: status %d, want 200: %.200s", exo.BenchPath, resp.StatusCode, b)
	}
	return parseSimReport(b, chk)
}

// parseSimReport reads the "sim" block of an embedded engine's bench
// response into chk.
func parseSimReport(body []byte, chk PrefillCheck) (PrefillCheck, error) {
	var out struct {
		Sim *struct {
			RemotePrefill *bool  `json:"remote_prefill"`
			InstanceID    string `json:"instance_id"`
		} `json:"sim"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return chk, fmt.Errorf("decode the probe's response: %w", err)
	}
	if out.Sim == nil || out.Sim.RemotePrefill == nil {
		chk.Note = "the engine labels itself simulated but its response has no sim.remote_prefill: it cannot tell where prefill ran"
		return chk, nil
	}
	chk.Reported, chk.Remote, chk.ServedBy = true, out.Sim.RemotePrefill, out.Sim.InstanceID
	ok := *chk.Remote == chk.WantRemote && chk.ServedBy == chk.WantServedBy
	chk.OK = &ok
	where := "locally on the serving instance"
	if *chk.Remote {
		where = "remotely, on a linked prefill instance"
	}
	want := "locally"
	if chk.WantRemote {
		want = "remotely"
	}
	switch {
	case ok:
		chk.Note = fmt.Sprintf("the engine reports the prefill ran %s, served by instance %s, as expected", where, chk.ServedBy)
	case chk.ServedBy != chk.WantServedBy:
		chk.Note = fmt.Sprintf("the engine reports instance %s served the request, not %s (prefill ran %s): the phase measured another instance", chk.ServedBy, chk.WantServedBy, where)
	default:
		chk.Note = fmt.Sprintf("the engine reports the prefill ran %s; it should have run %s", where, want)
	}
	return chk, nil
}
