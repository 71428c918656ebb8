//go:build linux

package energy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/energy/sourcetest"
)

func TestPowercapConforms(t *testing.T) {
	root := t.TempDir()
	for _, z := range []struct{ dir, name, energy string }{
		{"intel-rapl:0", "package-0", "123456789"},
		{"intel-rapl:0:0", "dram", "23456"},
	} {
		dir := filepath.Join(root, z.dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, v := range map[string]string{"name": z.name, "energy_uj": z.energy, "max_energy_range_uj": "262143328850"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sourcetest.Run(t, energy.Powercap{Root: root})
}
