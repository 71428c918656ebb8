package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/metrics"
	"github.com/inferbench/inferbench/engine/metrics/view"
	"github.com/inferbench/inferbench/engine/ollama"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
	"github.com/inferbench/inferbench/promptsize/remote"
	"github.com/inferbench/inferbench/twin"
)

// A Target is what a program measures and how it counts: the embedded
// simulated engine or a server (an OpenAI-compatible one at BaseURL, or an
// exo cluster at Host and Port), the model, the tokenizer that counts
// prompts, and where the results come from. It is the preamble every
// example program shares, in three steps:
//
//	t := &cli.Target{Program: "serve-load"}
//	t.AddFlags(fs)           // --base-url (or --host/--port), --model, --tokenizer, …
//	// fs.Parse(args)
//	err := t.Check(ctx, args, shortest) // usage: nothing started, nothing sent
//	err = t.Start(ctx, stderr)          // the engine, the model, the counter
//	defer t.Close()
//
// after which Info is the results' run information (engine, address,
// simulated, preset, model, tokenizer, provenance) and Counter counts as
// the engine does.
type Target struct {
	// Program names the program in messages and the provenance.
	Program string
	// Exo targets an exo cluster (Host, Port; the embedded engine's exo
	// API) instead of an OpenAI-compatible server (BaseURL; the embedded
	// engine's vLLM-flavoured API).
	Exo bool
	// The flags: the server's root (empty: the embedded engine), the exo
	// API's host and port, the model, the tokenizer directory, the
	// environment variable holding the bearer token, the embedded
	// engine's preset, the bound on control-plane calls, and whether to
	// leave the host name out of the results.
	BaseURL, Host string
	Port          int
	Model         string
	Tokenizer     string
	APIKeyEnv     string
	Preset        string
	Timeout       time.Duration
	NoHostInfo    bool
	// API is --api: "openai" (the default: the OpenAI-compatible API at
	// BaseURL) or "ollama" (Ollama's native /api/chat at BaseURL, its
	// root, with the server's own timings on every response).
	API string
	// ServerMetricsURL is --server-metrics, the server's Prometheus
	// endpoint; empty: the server root's /metrics when it answers.
	// NoServerMetrics is --no-server-metrics.
	ServerMetricsURL string
	NoServerMetrics  bool
	// CounterKind is --server-counter: how the server counts prompts
	// without --tokenizer (CounterAuto, CounterTokenize or
	// CounterLlamaCpp; empty is CounterAuto).
	CounterKind string
	// ServerSamples is --server-samples, the interval of gauge samples
	// during each run (0: none).
	ServerSamples time.Duration
	// Sim is the embedded engine's configuration (its Preset and Counter
	// are the Target's).
	Sim sim.Options
	// SimProfile is --sim-profile, the server the embedded engine
	// behaves as: SimVLLM (the default), SimSGLang, SimLlamaCpp or
	// SimOllama.
	SimProfile string
	// DefaultPreset is the preset without --sim-preset; zero: sim.Fast().
	DefaultPreset sim.Preset

	// Set by Check and Start: the run's information and provenance, the
	// counter, the server's root URL, and the embedded engine when one
	// runs.
	Info    benchkit.RunInfo
	Counter promptsize.Counter
	URL     string
	Server  *sim.Server
	// Metrics reads the server's own view of each run (set by Start for
	// an OpenAI-compatible target whose /metrics answered); nil: none.
	Metrics *view.Scraper

	envErr   error        // a bad EXO_HOST or EXO_PORT, for Check
	llamaCpp bool         // the server is llama.cpp's (its Server header, or its counter)
	started  *sim.Options // the embedded engine's options as started
}

// SimOptions are the options the embedded engine was started with (its
// preset, a twin file's own prefill chunk and slots, the profile), as
// package benchkit/predict takes them to predict what it would serve;
// false before Start or with another server.
func (t *Target) SimOptions() (sim.Options, bool) {
	if t.started == nil {
		return sim.Options{}, false
	}
	return *t.started, true
}

// AddFlags registers the target's flags on fs.
func (t *Target) AddFlags(fs *flag.FlagSet) {
	if t.Exo {
		envHost, port, err := exo.AddrFromEnv()
		if err != nil {
			envHost, port, t.envErr = "", exo.DefaultPort, err
		}
		fs.StringVar(&t.Host, "host", envHost, "exo API host (env EXO_HOST); none: the embedded simulated engine")
		fs.IntVar(&t.Port, "port", port, "exo API port (env EXO_PORT)")
		fs.StringVar(&t.Model, "model", t.Model, "model id or short id (default: the embedded engine's model)")
		fs.StringVar(&t.Tokenizer, "tokenizer", "", "directory with the model's tokenizer.json and tokenizer_config.json (default: the embedded engine's)")
		fs.StringVar(&t.Preset, "preset", "", "preset of the embedded engine, or a twin file FILE.json fitted to a measured server (without --host)")
		fs.BoolVar(&t.NoHostInfo, "no-host-info", false, "leave the host name out of the results files")
		t.addReasoningFlag(fs, "--host")
		return
	}
	fs.StringVar(&t.BaseURL, "base-url", "", "server root, e.g. http://127.0.0.1:8000 (default: start the embedded simulated engine)")
	fs.StringVar(&t.Model, "model", "", "model id (default: the server's first model)")
	fs.StringVar(&t.Tokenizer, "tokenizer", "", "directory with the model's tokenizer.json and tokenizer_config.json (default: the server's /tokenize, or the embedded engine's tokenizer)")
	fs.StringVar(&t.APIKeyEnv, "api-key-env", "", "environment variable holding the bearer token")
	fs.StringVar(&t.CounterKind, "server-counter", CounterAuto, "without --tokenizer, how the server counts prompts: auto (vLLM's or SGLang's /tokenize, else llama.cpp's), tokenize (vLLM, SGLang), or llamacpp (llama.cpp's /apply-template and /tokenize)")
	fs.StringVar(&t.Preset, "sim-preset", t.defaultPreset().Name, "preset of the embedded engine, or a twin file FILE.json fitted to a measured server (without --base-url)")
	fs.DurationVar(&t.Timeout, "timeout", DefaultRequestTimeout, "bound on each request, from dialing to the end of its answer, and on each model-list and /tokenize call (0: none)")
	fs.BoolVar(&t.NoHostInfo, "no-host-info", false, "leave the host name out of the results files")
	fs.StringVar(&t.API, "api", APIOpenAI, "the server's API: openai (OpenAI-compatible, at --base-url), or ollama (Ollama's native /api/chat at its root, e.g. http://127.0.0.1:11434: an exact token stream and the server's timings; needs --tokenizer)")
	fs.StringVar(&t.ServerMetricsURL, "server-metrics", "", "the server's Prometheus endpoint, scraped before and after each run for its own figures (default: the server root's /metrics when it answers)")
	fs.BoolVar(&t.NoServerMetrics, "no-server-metrics", false, "read no server metrics")
	fs.DurationVar(&t.ServerSamples, "server-samples", 0, "also read the server's gauges (requests running and waiting, KV cache usage) at this interval during each run, e.g. 500ms; each costs the client a scrape (0: none)")
	fs.Func("sim-metrics", "the embedded engine's /metrics (without --base-url): vllm (vLLM's families and default buckets), sglang (SGLang's), or off (404) (default vllm)", func(v string) error {
		m, err := sim.ParseMetricsMode(v)
		t.Sim.Metrics = m
		return err
	})
	fs.Func("sim-profile", "the server the embedded engine behaves as (without --base-url): vllm (vLLM's OpenAI API and metrics), sglang (SGLang's metrics), llamacpp (llama.cpp's llama-server: its slots, streams, connections and metrics), or ollama (Ollama's native API; implies --api ollama) (default vllm)", func(v string) error {
		v = strings.ToLower(strings.TrimSpace(v))
		switch v {
		case SimVLLM, SimSGLang, SimLlamaCpp, SimOllama:
			t.SimProfile = v
			return nil
		}
		return fmt.Errorf("want %s, %s, %s or %s", SimVLLM, SimSGLang, SimLlamaCpp, SimOllama)
	})
	fs.Func("prefix-cache", "the embedded engine's prefix cache (without --base-url): radix reuses cached blocks, naive reuses nothing (default radix)", func(v string) error {
		m, err := sim.ParsePrefixCacheMode(v)
		t.Sim.PrefixCache = m
		return err
	})
	t.addReasoningFlag(fs, "--base-url")
}

// addReasoningFlag registers --sim-reasoning, the embedded engine's
// reasoning mode (sim.ReasoningOptions): off, on, or MIN-MAX, the range
// of its drawn thinking lengths in tokens.
func (t *Target) addReasoningFlag(fs *flag.FlagSet, server string) {
	fs.Func("sim-reasoning", "the embedded engine's reasoning mode (without "+server+"): on (the model thinks before it answers, in each API's reasoning fields, honouring the thinking controls), MIN-MAX (on, thinking MIN to MAX tokens), or off (default off)", func(v string) error {
		r, err := ParseSimReasoning(v)
		t.Sim.Reasoning = r
		return err
	})
}

// ParseSimReasoning reads --sim-reasoning: "off" (or empty), "on", or
// "MIN-MAX", the range of the drawn thinking lengths in tokens (the mode
// on).
func ParseSimReasoning(v string) (sim.ReasoningOptions, error) {
	switch v = strings.ToLower(strings.TrimSpace(v)); v {
	case "", "off", "false", "no":
		return sim.ReasoningOptions{}, nil
	case "on", "true", "yes":
		return sim.ReasoningOptions{Enabled: true}, nil
	}
	lo, hi, ok := strings.Cut(v, "-")
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || a < 1 || b < a {
		return sim.ReasoningOptions{}, fmt.Errorf("want on, off or MIN-MAX thinking tokens with 1 ≤ MIN ≤ MAX, got %q", v)
	}
	return sim.ReasoningOptions{Enabled: true, MinTokens: a, MaxTokens: b}, nil
}

func (t *Target) defaultPreset() sim.Preset {
	if t.DefaultPreset.Name != "" {
		return t.DefaultPreset
	}
	return sim.Fast()
}

// The embedded engine's profiles (--sim-profile).
const (
	SimVLLM     = "vllm"
	SimSGLang   = "sglang"
	SimLlamaCpp = "llamacpp"
	SimOllama   = "ollama"
)

// Embedded reports whether the target is the embedded engine.
func (t *Target) Embedded() bool {
	if t.Exo {
		return t.Host == ""
	}
	return t.BaseURL == ""
}

// Secret is the bearer token the target's requests carry, "" without one:
// for redacting it from what the program writes.
func (t *Target) Secret() string {
	if t.APIKeyEnv == "" {
		return ""
	}
	return os.Getenv(t.APIKeyEnv)
}

// Check does what can be done before anything is started or sent, and
// returns a *UsageError for what is wrong: the token's variable set, the
// timeout, the preset; the provenance of the run (args is the command
// line after the program's name); the tokenizer loaded and hashed, and the
// shortest prompt the program will build (shortest tokens; 0 to skip)
// checked against its chat template's overhead.
func (t *Target) Check(ctx context.Context, args []string, shortest int) error {
	if t.API != "" && t.API != APIOpenAI && t.API != APIOllama {
		return &UsageError{Err: fmt.Errorf("--api %q: want %s or %s", t.API, APIOpenAI, APIOllama)}
	}
	if !slices.Contains(append(counterKinds, ""), t.CounterKind) {
		return &UsageError{Err: fmt.Errorf("--server-counter %q: want one of %s", t.CounterKind, strings.Join(counterKinds, ", "))}
	}
	if t.ServerSamples < 0 {
		return &UsageError{Err: fmt.Errorf("--server-samples %v: want an interval > 0, or 0 for none", t.ServerSamples)}
	}
	switch {
	case t.envErr != nil:
		return &UsageError{Err: t.envErr}
	case t.APIKeyEnv != "" && os.Getenv(t.APIKeyEnv) == "":
		return Usagef("--api-key-env %s: the variable is unset or empty", t.APIKeyEnv)
	case t.Timeout < 0:
		return Usagef("--timeout must not be negative, got %v", t.Timeout)
	}
	if t.Embedded() && t.Preset != "" {
		_, tw, err := t.simPreset()
		if err != nil {
			return Usagef("--%s: %v", map[bool]string{true: "preset", false: "sim-preset"}[t.Exo], err)
		}
		if tw != nil && tw.Profile == twin.ProfileLlamaCpp && !t.Exo && t.SimProfile == "" {
			// A twin of llama-server schedules as llama-server.
			t.SimProfile = SimLlamaCpp
		}
	}
	if t.Embedded() && !t.Exo {
		switch t.SimProfile {
		case SimOllama:
			t.API = APIOllama
		case SimLlamaCpp:
			if t.API == APIOllama {
				return Usagef("--sim-profile llamacpp serves llama.cpp's OpenAI-compatible API: drop --api ollama")
			}
			if m := t.Sim.Metrics; m != "" && m != sim.MetricsOff {
				return Usagef("--sim-metrics %s: the llamacpp profile serves llama.cpp's metrics (or none with off)", m)
			}
		}
	}
	prov := benchkit.NewProvenance(append([]string{t.Program}, args...), t.NoHostInfo, t.Secret())
	t.Info = benchkit.RunInfo{Tool: "inferbench", Engine: "openai", Provenance: prov}
	if t.Exo {
		t.Info.Tool, t.Info.Engine = "inferbench "+t.Program, "exo"
	} else if t.API == APIOllama {
		t.Info.Engine = APIOllama
	}
	if t.Tokenizer == "" {
		return nil
	}
	tok, err := hf.Load(t.Tokenizer)
	if err != nil {
		return Usagef("--tokenizer %s: %v", t.Tokenizer, err)
	}
	if err := prov.HashTokenizerDir(t.Tokenizer); err != nil {
		return Usagef("--tokenizer %s: %v", t.Tokenizer, err)
	}
	overhead, err := (&promptsize.Builder{Counter: tok}).Overhead(ctx)
	if err != nil {
		return Usagef("--tokenizer %s: %v", t.Tokenizer, err)
	}
	if shortest > 0 && shortest < overhead {
		return Usagef("--tokenizer %s: pp=%d is below the chat template's overhead of %d tokens (the shortest prompt asked for)", t.Tokenizer, shortest, overhead)
	}
	t.Counter = tok
	t.Info.Tokenizer = "tokenizer.json and chat template in " + t.Tokenizer
	return nil
}

// Start starts the embedded engine, or names the server, and says which on
// stderr. For an OpenAI-compatible server it also finds the model (the
// server's first, without --model) and, without --tokenizer, the counter
// (--server-counter: the server's /tokenize, or llama.cpp's
// /apply-template and /tokenize; see ResolveServerCounter), and asks the
// server about itself for the provenance; a --model the server does not
// list is warned about on stderr (llama.cpp serves its one model under
// any name). An exo target's model is the program's to resolve (its
// model cards). Check must have run first.
func (t *Target) Start(ctx context.Context, stderr io.Writer) error {
	if t.Info.Provenance == nil {
		return errors.New("cli: Target.Start before Check")
	}
	if t.Embedded() {
		if err := t.startSim(ctx, stderr); err != nil {
			return err
		}
	} else if t.Exo {
		t.URL = "http://" + net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
	} else {
		t.URL = t.BaseURL
		fmt.Fprintf(stderr, "%s: measuring %s\n", t.Program, t.URL)
	}
	t.Info.BaseURL = t.URL
	if t.Exo {
		return nil
	}
	modelGiven := t.Model != ""
	if t.Model == "" {
		c, err := t.Client(openai.Options{})
		if err != nil {
			return err
		}
		models, err := c.Models(ctx)
		c.CloseIdleConnections()
		if err != nil {
			return fmt.Errorf("no --model given and the server's model list failed: %w", err)
		}
		if len(models) == 0 {
			return fmt.Errorf("no --model given and the server lists no model")
		}
		t.Model = models[0].ID
	}
	t.Info.Model = t.Model
	if t.Counter == nil && t.API == APIOllama {
		return fmt.Errorf("no --tokenizer given and Ollama has no /tokenize to count prompts with; pass --tokenizer DIR with the model's tokenizer.json")
	}
	if t.Counter == nil {
		timeout := t.Timeout
		if timeout == 0 {
			timeout = -1 // --timeout 0: no bound but the run's context
		}
		c, what, err := ResolveServerCounter(ctx, t.URL, t.Model, AuthHeader(t.APIKeyEnv), timeout, t.CounterKind)
		if err != nil {
			return fmt.Errorf("no --tokenizer given and the server cannot count (%w); pass --tokenizer DIR with the model's tokenizer.json", err)
		}
		t.Counter, t.Info.Tokenizer = c, what
		_, t.llamaCpp = c.(*remote.LlamaCpp)
	}
	si := ProbeServer(ctx, nil, t.URL, AuthHeader(t.APIKeyEnv), 5*time.Second)
	t.Info.Provenance.Server = &si
	t.llamaCpp = t.llamaCpp || strings.HasPrefix(si.Header, "llama.cpp")
	if modelGiven {
		t.checkModel(ctx, stderr)
	}
	t.Metrics = t.probeMetrics(ctx, stderr)
	return nil
}

// probeMetrics scrapes the server's metrics endpoint once: the endpoint
// the run will read when it answered, nil otherwise. An endpoint named on
// the command line that fails is said on stderr; the run goes on without
// it, as it would lose the figures of a scrape that fails later. One
// that serves families, none of them a known server's (vLLM without
// stats logging serves only its process's), is refused; one that serves
// none yet (a fresh SGLang) is kept, and the run's view says whether it
// served a server's after the run.
func (t *Target) probeMetrics(ctx context.Context, stderr io.Writer) *view.Scraper {
	if t.NoServerMetrics {
		return nil
	}
	url := t.ServerMetricsURL
	if url == "" {
		// The server root's, whether --base-url named the root or its
		// OpenAI API under /v1 (vLLM and SGLang serve /metrics beside
		// /v1, not under it).
		url = strings.TrimSuffix(strings.TrimRight(t.URL, "/"), "/v1") + "/metrics"
	}
	m := &view.Scraper{URL: url, Timeout: 3 * time.Second, SampleEvery: t.ServerSamples}
	// The token goes only where the requests go: the server's own origin.
	if sameOrigin(url, t.URL) {
		m.Header = AuthHeader(t.APIKeyEnv)
	}
	snap, err := m.Probe(ctx)
	switch {
	case err != nil && t.ServerMetricsURL != "":
		fmt.Fprintf(stderr, "%s: --server-metrics %s: %v; no server figures\n", t.Program, url, err)
		return nil
	case err != nil:
		return nil
	case len(snap.Families) > 0 && snap.Server() == metrics.ServerUnknown:
		fmt.Fprintf(stderr, "%s: %s serves none of vLLM's, SGLang's, TGI's or llama.cpp's metric families (vLLM without stats logging?); no server figures\n", t.Program, url)
		return nil
	case len(snap.Families) == 0:
		// A fresh SGLang (its multiprocess collector) serves nothing
		// before its first request: the run tells, and says so if it
		// still serves no server's families after.
		fmt.Fprintf(stderr, "%s: the server's own view from %s (before and after each run; it serves no metric family yet)\n", t.Program, url)
		return m
	}
	fmt.Fprintf(stderr, "%s: the server's own view from %s (%s, before and after each run)\n", t.Program, url, snap.Server())
	return m
}

// checkModel says on stderr when the model asked for (--model) is not
// one the server lists: a server with one model may serve it under any
// name (llama.cpp does: every request succeeds, labelled with the wrong
// name), another refuses every request. A server whose list fails or is
// empty is not judged.
func (t *Target) checkModel(ctx context.Context, stderr io.Writer) {
	c, err := t.Client(openai.Options{})
	if err != nil {
		return
	}
	models, err := c.Models(ctx)
	c.CloseIdleConnections()
	if err != nil || len(models) == 0 {
		return
	}
	ids := make([]string, 0, len(models))
	for _, m := range models {
		// Ollama lists "name:latest" for "name".
		if m.ID == t.Model || m.Name == t.Model || m.ID == t.Model+":latest" {
			return
		}
		ids = append(ids, fmt.Sprintf("%q", m.ID))
	}
	list := strings.Join(ids, ", ")
	if t.llamaCpp {
		fmt.Fprintf(stderr, "%s: warning: --model %q is not the model this llama.cpp server serves (%s): llama.cpp answers under any name, so the requests will succeed and the results be labelled %q; pass --model with the served name\n",
			t.Program, t.Model, list, t.Model)
		return
	}
	fmt.Fprintf(stderr, "%s: warning: --model %q is not among the server's models (%s); its requests may fail\n", t.Program, t.Model, list)
}

// simPreset is the embedded engine's preset: the built-in one --sim-preset
// (exo-bench's --preset) names, or the twin file it names (a path ending
// in .json, as package twin writes it), then returned too.
func (t *Target) simPreset() (sim.Preset, *twin.Twin, error) {
	if strings.HasSuffix(t.Preset, ".json") {
		tw, err := twin.Load(t.Preset)
		if err != nil {
			return sim.Preset{}, nil, err
		}
		return tw.Preset(), &tw, nil
	}
	p, err := sim.PresetByName(t.Preset)
	return p, nil, err
}

// startSim starts the embedded engine on loopback; it lives until Close,
// past an interrupt, so that requests in flight can finish.
func (t *Target) startSim(ctx context.Context, stderr io.Writer) error {
	opts := t.Sim
	opts.Preset = t.defaultPreset()
	if t.Preset != "" {
		var tw *twin.Twin
		opts.Preset, tw, _ = t.simPreset()
		if tw != nil {
			// The twin's own chunk, slots and batch, where not set.
			o := tw.Options()
			if opts.PrefillChunk == 0 {
				opts.PrefillChunk = o.PrefillChunk
			}
			if opts.LlamaCpp.Slots == 0 {
				opts.LlamaCpp.Slots = o.LlamaCpp.Slots
			}
			if opts.LlamaCpp.Batch == 0 {
				opts.LlamaCpp.Batch = o.LlamaCpp.Batch
			}
		}
	}
	if t.Counter != nil {
		opts.Counter = t.Counter
	}
	switch t.SimProfile {
	case SimSGLang:
		if opts.Metrics == "" {
			opts.Metrics = sim.MetricsSGLang
		}
	case SimLlamaCpp:
		opts.Profile = sim.LlamaCpp
	}
	if t.Exo && opts.Reasoning.Enabled {
		// exo's thinking models generate <think> and </think>: its
		// /v1 parser swallows them, its bench path, which runs no
		// parser, sends them as content, where the exo client reads the
		// block as reasoning.
		opts.Reasoning.HiddenMarkers = true
	}
	srv, err := sim.Start(context.WithoutCancel(ctx), "127.0.0.1:0", opts)
	if err != nil {
		return fmt.Errorf("start the embedded engine: %w", err)
	}
	t.started = &opts
	t.Server, t.URL = srv, srv.OpenAIURL()
	switch {
	case t.Exo:
		t.URL = srv.URL
	case t.API == APIOllama:
		t.URL = srv.OllamaURL()
	}
	if t.Model == "" {
		t.Model = srv.Model()
	}
	if t.Counter == nil {
		t.Counter, t.Info.Tokenizer = srv.Counter(), "the embedded engine's built-in tokenizer"
	}
	t.Info.Simulated, t.Info.Preset = true, opts.Preset.Name
	t.Info.PrefixCache = string(opts.PrefixCache)
	if t.Info.PrefixCache == "" {
		t.Info.PrefixCache = string(sim.PrefixCacheRadix)
	}
	flag := "--base-url"
	if t.Exo {
		flag = "--host"
	}
	as := ""
	if t.SimProfile != "" && t.SimProfile != SimVLLM && !t.Exo {
		as = ", as " + t.SimProfile
	}
	// The reasoning mode on a line of its own: the engine's line stays
	// within a terminal's 120 columns.
	if opts.Reasoning.Enabled {
		as += "\n" + t.Program + ": the embedded engine is in its reasoning mode (the model thinks before it answers)"
	}
	fmt.Fprintf(stderr, "%s: no %s: measuring the embedded simulated engine; every figure is simulated\n%s: the embedded engine at %s, preset %s%s\n", t.Program, flag, t.Program, t.URL, opts.Preset.Name, as)
	return nil
}

// OpenAI returns a client of the target's OpenAI-compatible API with
// opts, the target's token, timeout and counter in it (the client counts
// generated text with the prompts' counter when a server sends no
// per-chunk usage), and the llama.cpp flavour when Start found the
// server to be llama.cpp's and opts names none.
func (t *Target) OpenAI(opts openai.Options) (*openai.Client, error) {
	opts.APIKeyEnv, opts.Timeout = t.APIKeyEnv, t.Timeout
	if opts.Flavour == openai.FlavourGeneric && t.llamaCpp {
		opts.Flavour = openai.FlavourLlamaCpp
	}
	if opts.Counter == nil {
		opts.Counter = t.Counter
	}
	return openai.New(t.URL, &opts)
}

// The APIs a Target speaks (--api).
const (
	APIOpenAI = "openai"
	APIOllama = "ollama"
)

// A Client is the engine a Target measures: it sends requests, lists
// models and closes its idle connections when the program is done.
type Client interface {
	engine.Engine
	engine.ModelLister
	CloseIdleConnections()
}

// Client returns a client of the target's API (--api): OpenAI's with
// opts (see OpenAI), or Ollama's native API with the target's token,
// timeout and opts.MaxBurst.
func (t *Target) Client(opts openai.Options) (Client, error) {
	if t.API == APIOllama {
		return ollama.New(t.URL, &ollama.Options{APIKeyEnv: t.APIKeyEnv, Timeout: t.Timeout, MaxBurst: opts.MaxBurst})
	}
	return t.OpenAI(opts)
}

// Close stops the embedded engine, if one runs.
func (t *Target) Close() {
	if t.Server != nil {
		t.Server.Close()
	}
}

// Outcome is a program's error once its results are written: runErr when
// the run itself failed; else ErrRequestsFailed when failed of total
// requests failed; else ErrClientSaturated with why (reasons) when the
// client was the bottleneck and allowSaturated is false; else nil.
// ExitCode maps it to the exit status.
func Outcome(runErr error, failed, total int, saturated bool, reasons string, allowSaturated bool) error {
	switch {
	case runErr != nil:
		return runErr
	case failed > 0:
		return fmt.Errorf("%w: %d of %d requests; their rows say why", ErrRequestsFailed, failed, total)
	case saturated && !allowSaturated:
		return fmt.Errorf("%w: %s (--allow-saturated to accept)", ErrClientSaturated, reasons)
	}
	return nil
}

// sameOrigin reports whether a and b have one scheme, host and port.
func sameOrigin(a, b string) bool {
	ua, err1 := neturl.Parse(a)
	ub, err2 := neturl.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}
