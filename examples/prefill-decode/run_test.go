package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/benchkit/disagg"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/progtest"
)

// embedded returns an env whose embedded engine starts with the options
// run asked for, adjusted by extra, and a function that fails the test
// unless that engine held no instance and no link when the run ended (it
// is looked at as run stops it).
func embedded(t *testing.T, extra func(*sim.Options)) (env, func()) {
	left := errors.New("the embedded engine was never started")
	e := env{sim: extra, stopping: func(s *sim.Server) { left = leftovers(s) }}
	return e, func() {
		t.Helper()
		if left != nil {
			t.Error(left)
		}
	}
}

// noEngine is an env that fails the test if the embedded engine starts.
func noEngine(t *testing.T) env {
	return env{sim: func(*sim.Options) { t.Error("the embedded engine was started") }}
}

// assertClean fails unless the engine holds no instance and no link.
func assertClean(t *testing.T, s *sim.Server) {
	t.Helper()
	if err := leftovers(s); err != nil {
		t.Error(err)
	}
}

// leftovers says what instances and links the engine holds, nil when none.
func leftovers(s *sim.Server) error {
	c, err := exo.New(s.URL, nil)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var errs []error
	if ins, err := c.Instances(ctx); err != nil || len(ins) != 0 {
		errs = append(errs, fmt.Errorf("instances left on the engine: %v (%v)", ins, err))
	}
	if links, err := c.Links(ctx); err != nil || len(links) != 0 {
		errs = append(errs, fmt.Errorf("links left on the engine: %v (%v)", links, err))
	}
	return errors.Join(errs...)
}

func readDoc(t *testing.T, path string) disagg.Document {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc disagg.Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestNoFlags(t *testing.T) {
	t.Chdir(t.TempDir())
	e, clean := embedded(t, nil)
	var out, errOut bytes.Buffer
	if err := runEnv(context.Background(), nil, &out, &errOut, e); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, errOut.String())
	}
	clean()
	first, _, _ := strings.Cut(errOut.String(), "\n")
	if !strings.Contains(first, "embedded simulated engine") || !strings.Contains(first, "every figure is simulated") {
		t.Errorf("first stderr line does not say the engine is simulated: %q", first)
	}
	for _, want := range []string{"SIMULATED (fast)", "disaggregated vs", "decode_alone", "prefill_alone", "disaggregated: ok"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	progtest.Fits(t, "stdout", out.String())
	// stderr less its log records (level=…), which are one structured line each.
	var prose []string
	for _, l := range strings.Split(errOut.String(), "\n") {
		if !strings.HasPrefix(l, "level=") && !strings.HasPrefix(l, "time=") {
			prose = append(prose, l)
		}
	}
	progtest.Fits(t, "stderr", strings.Join(prose, "\n"))
	doc := readDoc(t, filepath.Join("results", "prefill-decode.json"))
	// The embedded defaults: pp 4096, tg 128, 2 repeats, three phases.
	if len(doc.Runs) != 6 || !doc.Meta.Simulated || !doc.Meta.CompareBaseline || doc.Meta.LinkID == "" {
		t.Fatalf("%d runs, meta %+v", len(doc.Runs), doc.Meta)
	}
	for _, r := range doc.Runs {
		if r.Error != "" || !r.Simulated || r.PPTokens != 4096 || r.TG != 128 || r.TTFTS == nil {
			t.Errorf("row %s: error %q simulated %v pp %d tg %d ttft %v", r.Phase, r.Error, r.Simulated, r.PPTokens, r.TG, r.TTFTS)
		}
	}
	for _, p := range doc.Phases {
		if p.Check == nil || p.Check.OK == nil || !*p.Check.OK {
			t.Errorf("phase %s check %+v", p.Phase, p.Check)
		}
	}
	if len(doc.Comparison) != 1 || len(doc.Comparison[0].Speedups) != 2 {
		t.Errorf("comparison %+v", doc.Comparison)
	}
}

// view is what TestConfigPrecedence compares of a parsed config.
type view struct {
	Host            string
	Port, Repeat    int
	PP, TG          []int
	Compare, Stream bool
	Prefill, Decode sideView
}

type sideView struct {
	Model, Node, InstanceMeta, Sharding string
	MinNodes, MaxNodes                  int
}

func viewOf(c *config) view {
	sv := func(s side) sideView {
		return sideView{s.model, s.node, s.filter.InstanceMeta, s.filter.Sharding, s.filter.MinNodes, s.filter.MaxNodes}
	}
	return view{c.Host, c.Port, c.repeat, c.pp, c.tg, c.compareBaseline, c.stream, sv(c.prefill), sv(c.decode)}
}

func TestConfigPrecedence(t *testing.T) {
	t.Setenv("EXO_HOST", "")
	t.Setenv("EXO_PORT", "")
	both := sideView{InstanceMeta: "both", Sharding: "both", MinNodes: 1, MaxNodes: 4}
	side := func(model, node, meta string) sideView {
		s := both
		s.Model, s.Node = model, node
		if meta != "" {
			s.InstanceMeta = meta
		}
		return s
	}
	cluster := "host = \"james\"\nport = 1234\nrepeat = 3\nmodel = \"m\"\npp = [2048, 4096]\ntg = [64]\n"
	sides := "instance_meta = \"ring\"\n[prefill]\ninstance_meta = \"jaccl\"\nnode = \"mike\"\n[decode]\nnode = \"james\"\n"
	models := "model = \"A\"\n[prefill]\nmodel = \"P\"\n[decode]\nmodel = \"D\"\n"
	tests := []struct {
		name, file string
		args       []string
		env        string // EXO_HOST
		want       view
	}{
		{"the file beats the defaults", cluster, nil, "",
			view{Host: "james", Port: 1234, Repeat: 3, PP: []int{2048, 4096}, TG: []int{64}, Stream: true, Prefill: side("m", "", ""), Decode: side("m", "", "")}},
		{"a flag set to its default still beats the file", cluster, []string{"--port", "52415", "--repeat", "1", "--pp", "3000"}, "",
			view{Host: "james", Port: 52415, Repeat: 1, PP: []int{3000}, TG: []int{64}, Stream: true, Prefill: side("m", "", ""), Decode: side("m", "", "")}},
		{"the file beats the environment", cluster, nil, "envhost",
			view{Host: "james", Port: 1234, Repeat: 3, PP: []int{2048, 4096}, TG: []int{64}, Stream: true, Prefill: side("m", "", ""), Decode: side("m", "", "")}},
		{"the command line beats the environment", cluster, []string{"--host", "cli"}, "envhost",
			view{Host: "cli", Port: 1234, Repeat: 3, PP: []int{2048, 4096}, TG: []int{64}, Stream: true, Prefill: side("m", "", ""), Decode: side("m", "", "")}},
		{"sections beat top-level keys", sides, nil, "",
			view{PP: []int{4096}, TG: []int{128}, Repeat: 2, Port: exo.DefaultPort, Compare: true, Stream: true, Prefill: side("", "mike", "jaccl"), Decode: side("", "james", "ring")}},
		{"flags beat sections", sides, []string{"--instance-meta", "both", "--prefill-node", "zed"}, "",
			view{PP: []int{4096}, TG: []int{128}, Repeat: 2, Port: exo.DefaultPort, Compare: true, Stream: true, Prefill: side("", "zed", ""), Decode: side("", "james", "")}},
		{"per-side models", models, nil, "",
			view{PP: []int{4096}, TG: []int{128}, Repeat: 2, Port: exo.DefaultPort, Compare: true, Stream: true, Prefill: side("P", "", ""), Decode: side("D", "", "")}},
		{"--model names both sides", models, []string{"--model", "X"}, "",
			view{PP: []int{4096}, TG: []int{128}, Repeat: 2, Port: exo.DefaultPort, Compare: true, Stream: true, Prefill: side("X", "", ""), Decode: side("X", "", "")}},
		{"--prefill-model names one", models, []string{"--prefill-model", "Y"}, "",
			view{PP: []int{4096}, TG: []int{128}, Repeat: 2, Port: exo.DefaultPort, Compare: true, Stream: true, Prefill: side("Y", "", ""), Decode: side("D", "", "")}},
		{"the prefill side falls back to the top-level model", "model = \"A\"\n", nil, "",
			view{PP: []int{4096}, TG: []int{128}, Repeat: 2, Port: exo.DefaultPort, Compare: true, Stream: true, Prefill: side("A", "", ""), Decode: side("A", "", "")}},
		{"a false boolean in the file beats a target default", "compare_baseline = false\nstream = false\n", nil, "",
			view{PP: []int{4096}, TG: []int{128}, Repeat: 2, Port: exo.DefaultPort, Prefill: both, Decode: both}},
		{"a boolean flag beats the file", "compare_baseline = true\n", []string{"--compare-baseline=false"}, "",
			view{PP: []int{4096}, TG: []int{128}, Repeat: 2, Port: exo.DefaultPort, Stream: true, Prefill: both, Decode: both}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("EXO_HOST", tc.env)
			path := filepath.Join(t.TempDir(), "pd.toml")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := parse(append([]string{"--config", path}, tc.args...), &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, viewOf(c)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestBadUsageSendsNothing(t *testing.T) {
	// A cluster that counts every request it receives.
	var mu sync.Mutex
	var seen []string
	cluster := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer cluster.Close()
	u, _ := url.Parse(cluster.URL)
	host := []string{"--host", u.Hostname(), "--port", u.Port(), "--model", "m"}

	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--pp", "1000"}, "pp=1000 must exceed 1000"},
		{append(host, "--pp", "512", "--tg", "8"), "pp=512 must exceed 1000"},
		{append(host, "--pp", "2048"), "--pp and --tg are required"},
		{append(host, "--pp", "2048", "--tg", "1"), "tg=1"},
		{[]string{"--host", "h"}, "--model"},
		{[]string{"--repeat", "0"}, "--repeat=0"},
		{[]string{"--format", "xml"}, `--format="xml"`},
		{[]string{"--prefill-node", "a", "--decode-node", "a"}, "different nodes"},
		{[]string{"--preset", "nope"}, `--preset: sim: unknown preset "nope"`},
		{[]string{"--pp", "x"}, "not an integer"},
		{[]string{"stray"}, "unexpected argument"},
		{[]string{"--config", filepath.Join(dir, "missing.toml")}, "missing.toml"},
		{[]string{"--config", write("typo.toml", "rpeat = 3\n")}, `unknown key "rpeat"`},
		{[]string{"--config", write("side.toml", "[prefill]\nnodes = \"x\"\n")}, "unknown key prefill.nodes"},
		{[]string{"--config", write("meta.toml", "[decode]\ninstance_meta = \"mesh\"\n")}, `decode side: instance_meta="mesh"`},
		{[]string{"--config", write("pp.toml", "pp = [512]\n")}, "pp=512 must exceed 1000"},
		{[]string{"--config", write("bad.toml", "pp = [\n")}, "bad.toml"},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		err := runEnv(context.Background(), tc.args, &out, &errOut, noEngine(t))
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want a usage error saying %q", tc.args, err, tc.want)
		}
		if code := cli.ExitCode(err); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, code, cli.ExitUsage)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Errorf("bad usage sent requests: %v", seen)
	}
}

func TestFailedRequestsStillCleanUp(t *testing.T) {
	e, clean := embedded(t, func(o *sim.Options) {
		o.Fault, o.FaultEvery = sim.Fault{Kind: sim.FaultStatus500}, 2
	})
	out := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	err := runEnv(context.Background(), []string{"--tg", "8", "--json-out", out}, &stdout, &stderr, e)
	if !errors.Is(err, cli.ErrRequestsFailed) || cli.ExitCode(err) != cli.ExitFailed {
		t.Fatalf("err = %v, want ErrRequestsFailed (exit 1)\n%s", err, stderr.String())
	}
	clean()
	doc := readDoc(t, out)
	failed := 0
	for _, r := range doc.Runs {
		if r.Error != "" {
			failed++
		}
	}
	// Every second chat request fails: 3 of the 6.
	if len(doc.Runs) != 6 || failed != 3 {
		t.Errorf("%d runs, %d failed; want 6 and 3", len(doc.Runs), failed)
	}
}

// onMessage is a slog.Handler that calls fn on every record with message
// msg.
type onMessage struct {
	msg string
	fn  func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.fn()
	}
	return nil
}
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onMessage) WithGroup(string) slog.Handler      { return h }

func TestInterruptCleansUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Every request stalls for a minute; Ctrl-C comes as the first one
	// reaches the engine.
	e, clean := embedded(t, func(o *sim.Options) {
		o.Fault = sim.Fault{Kind: sim.FaultStall, After: -1, Duration: time.Minute}
		o.Logger = slog.New(onMessage{"sim: injecting a fault", cancel})
	})
	out := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	err := runEnv(ctx, []string{"--json-out", out}, &stdout, &stderr, e)
	if code := cli.ExitCode(err); code != cli.ExitInterrupted {
		t.Fatalf("err = %v (exit %d), want exit %d\n%s", err, code, cli.ExitInterrupted, stderr.String())
	}
	clean()
	if doc := readDoc(t, out); !doc.Meta.Interrupted {
		t.Errorf("results do not say the run was interrupted: %+v", doc.Meta)
	}
}

func TestDryRunCreatesNothing(t *testing.T) {
	s := sim.NewServer(sim.Options{Preset: sim.Fast(), Nodes: 2, NoInstance: true})
	defer s.Close()
	target, _ := url.Parse(s.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var changes []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.URL.Path != "/tokenize" {
			mu.Lock()
			changes = append(changes, r.Method+" "+r.URL.Path)
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	u, _ := url.Parse(front.URL)
	out := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	err := runEnv(context.Background(), []string{"--host", u.Hostname(), "--port", u.Port(), "--model", s.Model(),
		"--pp", "2048", "--tg", "8", "--settle-timeout", "0", "--json-out", out, "--dry-run", "--prefill-node", "sim-node-1"},
		&stdout, &stderr, noEngine(t))
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"PREFILL: MlxRing / Pipeline / nodes=[12D3KooWSimNode01 (sim-node-1", "DECODE:", "LINK:    would link prefill instance", "nothing created"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	mu.Lock()
	if len(changes) != 0 {
		t.Errorf("the dry run sent %v", changes)
	}
	mu.Unlock()
	assertClean(t, s)
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dry run wrote results: %v", err)
	}
}

func FuzzLoadConfig(f *testing.F) {
	f.Add("host = \"james\"\nport = 52415\npp = [4096]\n[prefill]\nnode = \"mike\"\n")
	f.Add("timeout = 7200.0\nsettle_timeout = 60.0\n[decode]\nmin_nodes = 1\n")
	f.Add("pp = 4096\n")
	f.Add("[prefill]\nmodel = [1, [2]]\n")
	f.Add("prefill = 3\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		path := filepath.Join(dir, "c.toml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := parse([]string{"--config", path, "--host", "h", "--model", "m"}, &bytes.Buffer{})
		if err != nil {
			var ue *cli.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v is not a usage error", err)
			}
			return
		}
		// Flags given on the command line always win.
		if c.Host != "h" || c.decode.model != "m" || c.prefill.model != "m" {
			t.Errorf("host %q models %q/%q", c.Host, c.prefill.model, c.decode.model)
		}
	})
}

func TestSampleConfig(t *testing.T) {
	t.Setenv("EXO_HOST", "")
	c, err := parse([]string{"--config", "prefill-decode.toml"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ring := sideView{InstanceMeta: "ring", Sharding: "pipeline", MinNodes: 1, MaxNodes: 1}
	p, d := ring, ring
	p.Node, d.Node = "sim-node-1", "sim-node-2"
	want := view{Port: exo.DefaultPort, Repeat: 2, PP: []int{2048, 4096}, TG: []int{64}, Compare: true, Stream: true, Prefill: p, Decode: d}
	if diff := cmp.Diff(want, viewOf(c)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestResultsCarryProvenance: the results file says where it came from,
// as every program's does, and --no-host-info leaves the host out.
func TestResultsCarryProvenance(t *testing.T) {
	for _, noHost := range []bool{false, true} {
		e, _ := embedded(t, nil)
		out := filepath.Join(t.TempDir(), "out.json")
		args := []string{"--tg", "8", "--json-out", out}
		if noHost {
			args = append(args, "--no-host-info")
		}
		var stdout, stderr bytes.Buffer
		if err := runEnv(context.Background(), args, &stdout, &stderr, e); err != nil {
			t.Fatalf("run: %v\n%s", err, stderr.String())
		}
		p := readDoc(t, out).Meta.Provenance
		if p == nil {
			t.Fatal("results meta has no provenance")
		}
		if p.GoVersion == "" || p.OS == "" || p.CPUs < 1 || p.Nonce == "" || len(p.Command) == 0 || p.Command[0] != "prefill-decode" {
			t.Errorf("provenance %+v lacks the build, platform, nonce or command", p)
		}
		if host, _ := os.Hostname(); (p.Host == host) == noHost {
			t.Errorf("--no-host-info=%v: host %q", noHost, p.Host)
		}
	}
}
