package sim

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the presets table in doc.go")

// presetTable renders the doc's presets table from the model code.
func presetTable() string {
	var b strings.Builder
	row := func(cols ...string) {
		fmt.Fprintf(&b, "//\t%-26s %-46s %-33s %-8s %-12s %-33s %s\n", cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6])
	}
	row("preset", "hardware", "model", "weights", "decode b=1", "decode b=8 (per request, total)", "prefill 4096")
	for _, p := range Presets() {
		r8 := p.DecodeRate(8, 1024)
		row(p.Name, p.Hardware.Name, p.Model.ID,
			fmt.Sprintf("%.1f GB", p.Model.WeightBytes()/1e9),
			fmt.Sprintf("%.1f tok/s", p.DecodeRate(1, 1024)),
			fmt.Sprintf("%.1f tok/s, %.1f tok/s", r8, 8*r8),
			fmt.Sprintf("%.1f tok/s", p.PrefillRate(4096)))
	}
	return b.String()
}

func TestPresetTable(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "// Generated presets table:\n//\n", "//\n// (End of the generated table.)"
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	if i < 0 || j < i {
		t.Fatalf("doc.go: expected the markers %q and %q", begin, end)
	}
	got := string(doc[i+len(begin) : j])
	want := presetTable()
	if got == want {
		return
	}
	if *update {
		out := string(doc[:i+len(begin)]) + want + string(doc[j:])
		if err := os.WriteFile("doc.go", []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("doc.go presets table is stale (go test -run TestPresetTable -update):\ngot:\n%s\nwant:\n%s", got, want)
}

// handDecodeStep is the documented decode formula written out again,
// independently of the package's code, for one request at context c.
func handDecodeStep(p Preset, batch, c int) float64 {
	m, h := p.Model, p.Hardware
	w := m.Params * m.BitsPerWeight / 8
	kv := 2 * float64(m.Layers) * float64(m.KVHeads) * float64(m.HeadDim) * m.KVBytesPerElement
	bw := h.MemoryBandwidth * eff(h.MemoryEfficiency)
	fl := h.FLOPS * eff(h.ComputeEfficiency)
	n := m.Params
	if m.ActiveParams > 0 {
		n = m.ActiveParams
	}
	mem := (w + kv*float64(batch*c)) / bw
	comp := 2 * n * float64(batch) / fl
	return math.Max(mem, comp) + h.StepOverhead.Seconds()
}

// handPrefill is the documented prefill formula for p tokens after o
// cached ones, in chunks.
func handPrefill(pr Preset, p, o, chunk int) float64 {
	m, h := pr.Model, pr.Hardware
	w := m.Params * m.BitsPerWeight / 8
	kv := 2 * float64(m.Layers) * float64(m.KVHeads) * float64(m.HeadDim) * m.KVBytesPerElement
	a := 4 * float64(m.Layers) * float64(m.Heads) * float64(m.HeadDim)
	bw := h.MemoryBandwidth * eff(h.MemoryEfficiency)
	fl := h.FLOPS * eff(h.ComputeEfficiency)
	total := 0.0
	for done := 0; done < p; done += chunk {
		n := float64(min(chunk, p-done))
		off := float64(o + done)
		mem := (w + kv*off) / bw
		comp := (2*m.Params*n + a*(n*off+n*(n+1)/2)) / fl
		total += math.Max(mem, comp) + h.StepOverhead.Seconds()
	}
	return total
}

func eff(x float64) float64 {
	if x == 0 {
		return 1
	}
	return x
}

func within(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

func TestPresetRatesFollowFormula(t *testing.T) {
	for _, p := range Presets() {
		t.Run(p.Name, func(t *testing.T) {
			for _, b := range []int{1, 4, 8} {
				want := 1 / handDecodeStep(p, b, 1024)
				if got := p.DecodeRate(b, 1024); !within(got, want, 0.02) {
					t.Errorf("DecodeRate(%d, 1024) = %.2f tok/s, formula gives %.2f", b, got, want)
				}
			}
			for _, n := range []int{100, 4096, 10000} {
				want := float64(n) / handPrefill(p, n, 0, DefaultPrefillChunk)
				if got := p.PrefillRate(n); !within(got, want, 0.02) {
					t.Errorf("PrefillRate(%d) = %.2f tok/s, formula gives %.2f", n, got, want)
				}
			}
			// The rate per request falls as the batch grows.
			if r1, r8 := p.DecodeRate(1, 1024), p.DecodeRate(8, 1024); r8 >= r1 {
				t.Errorf("per-request decode rate at batch 8 = %.2f, at batch 1 = %.2f: expected it to fall", r8, r1)
			}
		})
	}
}

func TestPresetByName(t *testing.T) {
	for _, p := range Presets() {
		got, err := PresetByName(p.Name)
		if err != nil || got.Name != p.Name {
			t.Errorf("PresetByName(%q) = %v, %v", p.Name, got.Name, err)
		}
	}
	if _, err := PresetByName("nope"); err == nil || !strings.Contains(err.Error(), "fast") {
		t.Errorf("PresetByName(nope) error = %v, expected one naming the presets", err)
	}
}

func TestBandwidthBoundAtBatch8(t *testing.T) {
	// Every preset is bandwidth-bound at batch 8: aggregate throughput is
	// more than 4× that of one request.
	for _, p := range Presets() {
		if agg, one := 8*p.DecodeRate(8, 1024), p.DecodeRate(1, 1024); agg <= 4*one {
			t.Errorf("%s: aggregate at batch 8 = %.1f tok/s, batch 1 = %.1f: expected > 4×", p.Name, agg, one)
		}
	}
}

func TestPresetString(t *testing.T) {
	if got, want := Fast().String(), "fast (simulated: test machine (1 TB/s, 1 PFLOPS) + sim/tiny-1b-8bit)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
