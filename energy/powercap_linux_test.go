//go:build linux

package energy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakePowercap writes a powercap tree into a temporary directory: two
// packages with core and dram subzones, a psys zone, and the entries a
// real /sys/class/powercap holds beside them (intel-rapl without a
// number, intel-rapl-mmio:0), which must be ignored. Zone names with ':'
// cannot be committed (module zips reject them), so the tree is built
// here rather than kept under testdata.
func fakePowercap(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	zones := []struct {
		dir, name   string
		energy, max uint64
	}{
		{"intel-rapl:0", "package-0", 1_500_000, 262_143_328_850},
		{"intel-rapl:0:0", "core", 700_000, 262_143_328_850},
		{"intel-rapl:0:1", "dram", 250_000, 65_712_999_613},
		{"intel-rapl:1", "package-1", 3_000_000, 262_143_328_850},
		{"intel-rapl:1:0", "dram", 125_000, 65_712_999_613},
		{"intel-rapl:2", "psys", 9_000_000, 262_143_328_850},
		{"intel-rapl-mmio:0", "package-0", 1, 1},
	}
	for _, z := range zones {
		writePowercapZone(t, filepath.Join(root, z.dir), z.name, z.energy, z.max)
	}
	if err := os.Mkdir(filepath.Join(root, "intel-rapl"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func writePowercapZone(t *testing.T, dir, name string, energy, max uint64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for file, v := range map[string]string{
		"name":                name + "\n",
		"energy_uj":           strconv.FormatUint(energy, 10) + "\n",
		"max_energy_range_uj": strconv.FormatUint(max, 10) + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPowercapRead(t *testing.T) {
	root := fakePowercap(t)
	rs, err := Powercap{Root: root}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Reading{
		{Node: "package-0", Metric: MetricEnergy, Value: 1.5},
		{Node: "package-0/dram", Metric: MetricEnergy, Value: 0.25},
		{Node: "package-1", Metric: MetricEnergy, Value: 3},
		{Node: "package-1/dram", Metric: MetricEnergy, Value: 0.125},
	}
	if d := cmp.Diff(want, rs); d != "" {
		t.Errorf("Read (-want +got):\n%s", d)
	}
	rs, err = Powercap{Root: root, Domains: []string{"core", "psys"}}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want = []Reading{{Node: "package-0/core", Metric: MetricEnergy, Value: 0.7}, {Node: "psys", Metric: MetricEnergy, Value: 9}}
	if d := cmp.Diff(want, rs); d != "" {
		t.Errorf("Read core, psys (-want +got):\n%s", d)
	}
	m, err := Powercap{Root: root}.CounterMax(context.Background(), "package-0/dram")
	if err != nil || m != 65_712.999613 {
		t.Errorf("CounterMax(package-0/dram) = %v, %v; want 65712.999613 J", m, err)
	}
	if _, err := (Powercap{Root: root}).CounterMax(context.Background(), "package-9"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("CounterMax of a missing zone: error %v, want ErrUnavailable", err)
	}
}

func TestPowercapUnavailable(t *testing.T) {
	if _, err := (Powercap{Root: t.TempDir()}).Read(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("empty root: error %v, want ErrUnavailable", err)
	}
	root := fakePowercap(t)
	if err := os.WriteFile(filepath.Join(root, "intel-rapl:0", "energy_uj"), []byte("lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (Powercap{Root: root}).Read(context.Background()); !errors.Is(err, ErrParse) {
		t.Errorf("garbage energy_uj: error %v, want ErrParse", err)
	}
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	if err := os.Chmod(filepath.Join(root, "intel-rapl:1", "energy_uj"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := (Powercap{Root: root, Domains: []string{"package"}}).Read(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("unreadable energy_uj: error %v, want ErrUnavailable", err)
	}
}

// TestPowercapSampledWraps polls a fake zone whose counter wraps between
// polls and checks the energy the recording gives.
func TestPowercapSampledWraps(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "intel-rapl:0")
	s, err := NewSampler([]Source{Powercap{Root: root}}, WithClock(newStepClock(500*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	// Range 100 J; readings 90 J, 10 J, 30 J: 20 + 20 = 40 J.
	for _, uj := range []uint64{90_000_000, 10_000_000, 30_000_000} {
		writePowercapZone(t, dir, "package-0", uj, 100_000_000)
		if err := s.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	rec := s.Recording()
	cs := rec.Counters()
	if len(cs) != 1 || cs[0].Node != "package-0" || cs[0].Max != 100 {
		t.Fatalf("counters %+v, want package-0 with Max 100 J", cs)
	}
	e, err := cs[0].Energy(Window{Start: cs[0].Samples[0].At, End: cs[0].Samples[2].At})
	if err != nil {
		t.Fatal(err)
	}
	if e.Joules != 40 {
		t.Errorf("energy %v J, want 40", e.Joules)
	}
}
