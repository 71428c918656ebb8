package cli

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/testkit"
)

// TestSimReasoningFlag: --sim-reasoning starts the embedded engine in its
// reasoning mode, on the OpenAI API and on exo's, says so, and takes a
// range of thinking lengths; a value it does not know is refused at parse
// time.
func TestSimReasoningFlag(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		exo   bool
		path  string
		field string
	}{
		{false, "/v1/chat/completions", `"reasoning":`},
		{true, "/v1/chat/completions", `"reasoning_content":`},
	} {
		tg := &Target{Program: "prog", Exo: tc.exo}
		parseTarget(t, tg, "--sim-reasoning", "3-5")
		tg.Host = "" // EXO_HOST may be set where the tests run
		if err := tg.Check(ctx, nil, 0); err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		if err := tg.Start(ctx, &stderr); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr.String(), "reasoning mode") {
			t.Errorf("exo %t: stderr %q does not say the engine reasons", tc.exo, stderr.String())
		}
		body := `{"model":"` + tg.Model + `","messages":[{"role":"user","content":"hi"}],"max_tokens":30,"stream":true}`
		resp, err := testkit.Client.Post(tg.URL+tc.path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if n := strings.Count(string(b), tc.field); n < 3 || n > 5 {
			t.Errorf("exo %t: %d deltas with %s in %s; want 3 to 5", tc.exo, n, tc.field, b)
		}
		tg.Close()
	}
	for _, v := range []string{"maybe", "5-3", "0-4", "x-y"} {
		fs := flag.NewFlagSet("prog", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		(&Target{}).AddFlags(fs)
		if err := fs.Parse([]string{"--sim-reasoning", v}); err == nil {
			t.Errorf("--sim-reasoning %s parsed", v)
		}
	}
	for v, want := range map[string]sim.ReasoningOptions{
		"off": {}, "on": {Enabled: true}, "10-20": {Enabled: true, MinTokens: 10, MaxTokens: 20},
	} {
		if got, err := ParseSimReasoning(v); err != nil || got != want {
			t.Errorf("ParseSimReasoning(%q) = %+v, %v; want %+v", v, got, err, want)
		}
	}
}
