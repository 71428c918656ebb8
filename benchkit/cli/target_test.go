package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/hostile"
	"github.com/inferbench/inferbench/internal/httpsafe"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/twin"
)

func parseTarget(t *testing.T, tg *Target, args ...string) {
	t.Helper()
	fs := flag.NewFlagSet(tg.Program, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	tg.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
}

// TestTargetEmbedded: without an address the target is the embedded
// engine, its model and its counter, labelled simulated, and said so.
func TestTargetEmbedded(t *testing.T) {
	for _, exoAPI := range []bool{false, true} {
		tg := &Target{Program: "prog", Exo: exoAPI}
		parseTarget(t, tg)
		tg.Host = "" // EXO_HOST may be set where the tests run
		ctx := context.Background()
		if err := tg.Check(ctx, nil, 0); err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		if err := tg.Start(ctx, &stderr); err != nil {
			t.Fatal(err)
		}
		if tg.Server == nil || !tg.Info.Simulated || tg.Info.Preset != sim.Fast().Name || tg.Model != tg.Server.Model() ||
			tg.Counter == nil || tg.Info.BaseURL != tg.URL || tg.Info.Provenance == nil {
			t.Errorf("exo %t: target %+v; want the embedded engine, its model and counter, simulated", exoAPI, tg)
		}
		if !strings.Contains(stderr.String(), "every figure is simulated") {
			t.Errorf("exo %t: stderr %q does not say the figures are simulated", exoAPI, stderr.String())
		}
		tg.Close()
	}
}

// TestTargetServer: against a server the target finds the model in its
// list, counts with its /tokenize, and asks it about itself.
func TestTargetServer(t *testing.T) {
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	tg := &Target{Program: "prog"}
	parseTarget(t, tg, "--base-url", srv.VLLMURL)
	ctx := context.Background()
	if err := tg.Check(ctx, []string{"--base-url", srv.VLLMURL}, 0); err != nil {
		t.Fatal(err)
	}
	if err := tg.Start(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if tg.Server != nil || tg.Info.Simulated || tg.Model != srv.Model() || tg.Info.Tokenizer != "the server's /tokenize" ||
		tg.Info.Provenance.Server == nil || tg.Info.Provenance.Command[0] != "prog" {
		t.Errorf("target %+v; want the server's model and /tokenize, and the provenance of prog", tg)
	}
	n, err := tg.Counter.Count(ctx, []promptsize.Message{{Role: "user", Content: "hello there"}})
	if err != nil || n < 1 {
		t.Errorf("the server's counter counted %d, %v", n, err)
	}
	c, err := tg.OpenAI(openaiOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	if _, err := c.Models(ctx); err != nil {
		t.Errorf("the target's client: %v", err)
	}
}

// TestTargetUsage: what Check refuses is a usage error, before anything
// starts.
func TestTargetUsage(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"--api-key-env", "INFERBENCH_TEST_UNSET_VARIABLE"},
		{"--timeout", "-1s"},
		{"--sim-preset", "no-such-preset"},
		{"--sim-preset", "no-such-twin.json"},
		{"--tokenizer", t.TempDir()},
	} {
		tg := &Target{Program: "prog"}
		parseTarget(t, tg, args...)
		var ue *UsageError
		if err := tg.Check(ctx, args, 0); !errors.As(err, &ue) {
			t.Errorf("%q: %v; want a usage error", args, err)
		}
		if tg.Server != nil {
			t.Errorf("%q: the embedded engine started", args)
		}
	}
}

func TestOutcome(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		err       error
		failed    int
		saturated bool
		allow     bool
		want      int
	}{
		{nil, 0, false, false, ExitOK},
		{boom, 3, true, false, ExitFailed},
		{nil, 1, true, false, ExitFailed},
		{nil, 0, true, false, ExitSaturated},
		{nil, 0, true, true, ExitOK},
		{context.Canceled, 0, false, false, ExitInterrupted},
	} {
		err := Outcome(c.err, c.failed, 4, c.saturated, "skew 9 ms", c.allow)
		if got := ExitCode(err); got != c.want {
			t.Errorf("Outcome(%v, %d failed, saturated %t, allow %t) = %v: exit %d, want %d", c.err, c.failed, c.saturated, c.allow, err, got, c.want)
		}
	}
}

func openaiOptions() openai.Options { return openai.Options{} }

const targetKey = "sk-target/9f2c+Zé😀x"

// TestTargetTokenizeCarriesTheKey: without --tokenizer the server's
// /tokenize counts, with the bearer token of --api-key-env; its 401 that
// echoes the token, fully escaped, fails Start without the token in the
// error or on stderr, and nothing else is asked.
func TestTargetTokenizeCarriesTheKey(t *testing.T) {
	t.Setenv("INFERBENCH_TEST_TARGET_KEY", targetKey)
	srv := hostile.New(t, hostile.EchoAuth(http.StatusUnauthorized, hostile.EscapeAll))
	tg := &Target{Program: "prog"}
	args := []string{"--base-url", srv.URL, "--model", "m", "--api-key-env", "INFERBENCH_TEST_TARGET_KEY"}
	parseTarget(t, tg, args...)
	ctx := context.Background()
	if err := tg.Check(ctx, args, 0); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	err := tg.Start(ctx, &stderr)
	if err == nil || !strings.Contains(err.Error(), "/tokenize") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Start = %v, want the /tokenize 401", err)
	}
	for what, text := range map[string]string{"error": err.Error(), "stderr": stderr.String()} {
		if hostile.Leaks(text, targetKey) || httpsafe.Contains(text, targetKey) {
			t.Errorf("%s holds the key: %s", what, text)
		}
	}
	if rs := srv.Requests(); len(rs) != 1 || rs[0].Path != "/tokenize" || rs[0].Header.Get("Authorization") != "Bearer "+targetKey {
		t.Errorf("requests %+v, want one /tokenize with the token", rs)
	}
	if c := tg.Info.Provenance.Command; strings.Contains(strings.Join(c, " "), targetKey) {
		t.Errorf("the provenance's command line holds the key: %q", c)
	}
}

// TestTargetDefaultTimeout: without --timeout, requests and control-plane
// calls are bounded by DefaultRequestTimeout, and the help says so.
func TestTargetDefaultTimeout(t *testing.T) {
	tg := &Target{Program: "prog"}
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	var help strings.Builder
	fs.SetOutput(&help)
	tg.AddFlags(fs)
	if err := fs.Parse(nil); err != nil || tg.Timeout != DefaultRequestTimeout {
		t.Errorf("timeout %v (%v), want %v", tg.Timeout, err, DefaultRequestTimeout)
	}
	fs.PrintDefaults()
	if !strings.Contains(help.String(), "-timeout duration") || !strings.Contains(help.String(), "(default "+DefaultRequestTimeout.String()+")") {
		t.Errorf("the help does not give --timeout and its default:\n%s", help.String())
	}
}

// TestTargetTwinPreset: --sim-preset FILE.json serves the twin file's
// fitted coefficients.
func TestTargetTwinPreset(t *testing.T) {
	tw := twin.Twin{Version: twin.Version, PrefillChunk: 512, Base: "fast", Server: twin.Server{Model: "m"},
		Coefficients: sim.Coefficients{StepOverhead: 1e-4, DecodeBase: 1e-3, DecodePerRequest: 1e-5, PrefillBase: 1e-3, PrefillPerToken: 1e-5}}
	path := filepath.Join(t.TempDir(), "twin.json")
	if err := tw.Save(path); err != nil {
		t.Fatal(err)
	}
	tg := &Target{Program: "prog"}
	parseTarget(t, tg, "--sim-preset", path)
	ctx := context.Background()
	if err := tg.Check(ctx, []string{"--sim-preset", path}, 0); err != nil {
		t.Fatal(err)
	}
	if err := tg.Start(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	p := tg.Server.Preset()
	if p.Fitted == nil || *p.Fitted != tw.Coefficients || tg.Info.Preset != "twin:m" {
		t.Errorf("the embedded engine serves %+v (%q), want the twin's coefficients %+v", p.Fitted, tg.Info.Preset, tw.Coefficients)
	}
	if got, want := p.DecodeStep([]int{10}), time.Duration(1100)*time.Microsecond; got != want {
		t.Errorf("a decode step of the twin takes %v, want %v", got, want)
	}
}

// TestTargetTwinLlamaCpp: a twin of llama-server is served by the
// llamacpp profile.
func TestTargetTwinLlamaCpp(t *testing.T) {
	tw := twin.Twin{Version: twin.Version, PrefillChunk: 512, Profile: twin.ProfileLlamaCpp,
		Coefficients: sim.Coefficients{DecodeBase: 1e-3, PrefillBase: 1e-3, MaxRunning: 2}}
	path := filepath.Join(t.TempDir(), "twin.json")
	if err := tw.Save(path); err != nil {
		t.Fatal(err)
	}
	tg := &Target{Program: "prog"}
	parseTarget(t, tg, "--sim-preset", path)
	ctx := context.Background()
	if err := tg.Check(ctx, []string{"--sim-preset", path}, 0); err != nil {
		t.Fatal(err)
	}
	if err := tg.Start(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if tg.SimProfile != SimLlamaCpp || tg.Server.OpenAIURL() != tg.Server.URL {
		t.Errorf("profile %q, OpenAI API at %s (root %s); want llama.cpp's at the root", tg.SimProfile, tg.Server.OpenAIURL(), tg.Server.URL)
	}
}
