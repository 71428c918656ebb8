package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
)

// TestServeLoadProvenance: the results JSON's meta and the JSONL run
// header both carry the provenance (build, platform, command line, nonce,
// seed, server), the key named by --api-key-env appears in neither file,
// and --no-host-info leaves the host name out of both.
func TestServeLoadProvenance(t *testing.T) {
	t.Setenv("SERVE_LOAD_TEST_KEY", "sk-provenance-secret")
	for _, noHost := range []bool{false, true} {
		dir := t.TempDir()
		jsonl, out := filepath.Join(dir, "rows.jsonl"), filepath.Join(dir, "run.json")
		// --allow-saturated: the provenance is under test, not the
		// client's schedule, which a loaded machine may lag past the gate.
		args := []string{"--allow-saturated", "--num-requests", "2", "--pp", "64", "--tg", "2", "--seed", "5", "--api-key-env", "SERVE_LOAD_TEST_KEY",
			"--jsonl", jsonl, "--json-out", out}
		if noHost {
			args = append(args, "--no-host-info")
		}
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("run: %v\n%s", err, stderr.String())
		}
		doc := readDoc(t, out)
		b, err := os.ReadFile(jsonl)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := bytes.Cut(b, []byte("\n"))
		h, ok := benchkit.ParseRunHeader(first)
		if !ok || h.Provenance == nil {
			t.Fatalf("JSONL line 1 %q: no run header with provenance", first)
		}
		for name, p := range map[string]*benchkit.Provenance{"results JSON": doc.Meta.Provenance, "JSONL header": h.Provenance} {
			if p == nil {
				t.Fatalf("%s: no provenance", name)
			}
			host, _ := os.Hostname()
			wantHost := host
			if noHost {
				wantHost = ""
			}
			switch {
			case p.Module != "github.com/inferbench/inferbench" && !strings.HasPrefix(p.Module, "github.com/inferbench/inferbench"):
				t.Errorf("%s: module %q", name, p.Module)
			case p.GoVersion != runtime.Version() || p.OS != runtime.GOOS || p.Arch != runtime.GOARCH || p.CPUs < 1:
				t.Errorf("%s: platform %+v", name, p)
			case p.Host != wantHost:
				t.Errorf("%s: host %q, want %q", name, p.Host, wantHost)
			case !slices.Equal(p.Command, append([]string{"serve-load"}, args...)):
				t.Errorf("%s: command %q, want %q", name, p.Command, args)
			case p.Nonce != cli.RunNonce(5, true) || p.Seed != 5 || !p.Seeded:
				t.Errorf("%s: nonce %q seed %d seeded %v, want the nonce --seed 5 draws", name, p.Nonce, p.Seed, p.Seeded)
			case p.Server == nil:
				t.Errorf("%s: no server information", name)
			}
		}
		if noHost && h.Host != "" {
			t.Errorf("--no-host-info: run header host %q", h.Host)
		}
		res, _ := os.ReadFile(out)
		for _, f := range [][]byte{b, res} {
			if bytes.Contains(f, []byte("sk-provenance-secret")) {
				t.Errorf("a results file holds the key")
			}
		}
	}
}
