package benchkit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/inferbench/inferbench/internal/httpsafe"
)

// fixedProvenance is a Provenance with every field set to a known value,
// for golden files that must not depend on the machine.
func fixedProvenance() *Provenance {
	p := &Provenance{
		Module: "github.com/inferbench/inferbench", Version: "v0.3.0", Revision: "0123456789abcdef", Modified: true,
		GoVersion: "go1.27.3", OS: "linux", Arch: "amd64", CPUs: 2, CPUModel: "Example CPU @ 2.00GHz", Host: "bench-host",
		Command: redactArgs([]string{"serve-load", "--api-key-env", "KEY", "--rate", "4", "--api-key=sk-live-1", "--base-url", "http://u:pw@h:8000"}, "sk-live-1"),
		Nonce:   "k3f9x2ab", Seed: 7, Seeded: true,
		Server: &ServerInfo{Header: "uvicorn", Version: "0.9.1"},
	}
	p.SetTokenizer([]byte("{}"), "{{ messages }}")
	return p
}

// TestProvenanceGolden locks the provenance's JSON and benchfmt forms, and
// reads the benchfmt back: every key is a file configuration line of
// every result, so benchstat keeps reading the file.
func TestProvenanceGolden(t *testing.T) {
	p := fixedProvenance()
	var buf bytes.Buffer
	js, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(js)
	buf.WriteString("\n")
	var bf bytes.Buffer
	if err := WriteBenchfmt(&bf, fixtureRows(), BenchfmtOptions{Name: "ExoBench", Config: p.Config()}); err != nil {
		t.Fatal(err)
	}
	buf.Write(bf.Bytes())
	golden(t, "provenance.golden", buf.Bytes())

	rd := benchfmt.NewReader(bytes.NewReader(bf.Bytes()), "bench.txt")
	results := 0
	for rd.Scan() {
		switch r := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Errorf("benchfmt reader: %v", r)
		case *benchfmt.Result:
			results++
			for _, kv := range p.Config() {
				if got := r.GetConfig(kv[0]); got != kv[1] {
					t.Errorf("%s: config %s = %q, want %q", r.Name, kv[0], got, kv[1])
				}
			}
		}
	}
	if err := rd.Err(); err != nil || results == 0 {
		t.Fatalf("read %d results back, err %v", results, err)
	}
}

func TestRedactArgs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"--api-key-env", "OPENAI_KEY"}, []string{"--api-key-env", "OPENAI_KEY"}},
		{[]string{"--api-key", "sk-1", "--rate", "4"}, []string{"--api-key", httpsafe.Redacted, "--rate", "4"}},
		{[]string{"-token=abc"}, []string{"-token=" + httpsafe.Redacted}},
		{[]string{"--base-url", "https://user:pw@h/v1"}, []string{"--base-url", "https://user:" + httpsafe.Redacted + "@h/v1"}},
		{[]string{"--base-url", "https://tok@h"}, []string{"--base-url", "https://" + httpsafe.Redacted + "@h"}},
		{[]string{"--model", "the-secret-s3"}, []string{"--model", "the-" + httpsafe.Redacted}},
	} {
		if got := redactArgs(tc.in, "secret-s3"); !slices.Equal(got, tc.want) {
			t.Errorf("redactArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNewProvenance: the build, platform and host are this process's, and
// noHost leaves the host out.
func TestNewProvenance(t *testing.T) {
	p := NewProvenance([]string{"x"}, false)
	host, _ := os.Hostname()
	if p.GoVersion != runtime.Version() || p.OS != runtime.GOOS || p.Arch != runtime.GOARCH || p.CPUs != runtime.NumCPU() || p.Host != host {
		t.Errorf("provenance %+v does not describe this process", p)
	}
	if p.Module == "" {
		t.Errorf("no module path from the build info")
	}
	if NewProvenance(nil, true).Host != "" {
		t.Errorf("noHost: host recorded")
	}
}

func TestHashTokenizerDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"chat_template":"{{ messages }}"}`), 0o644)
	var p Provenance
	if err := p.HashTokenizerDir(dir); err != nil {
		t.Fatal(err)
	}
	want := fixedProvenance()
	if p.TokenizerSHA256 != want.TokenizerSHA256 || p.ChatTemplateSHA256 != want.ChatTemplateSHA256 {
		t.Errorf("hashes %s %s, want %s %s", p.TokenizerSHA256, p.ChatTemplateSHA256, want.TokenizerSHA256, want.ChatTemplateSHA256)
	}
	if !strings.HasPrefix(want.TokenizerSHA256, "44136fa3") { // sha256("{}")
		t.Errorf("sha256 of {} = %s", want.TokenizerSHA256)
	}
}
