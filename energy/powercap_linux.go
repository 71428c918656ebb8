//go:build linux

package energy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// zone is one powercap zone selected for reading.
type zone struct {
	node string // "package-0", "package-0/dram"
	dir  string
}

// zones finds the selected zones under the root, sorted by node.
func (p Powercap) zones() ([]zone, error) {
	root := p.root()
	dirs, err := filepath.Glob(filepath.Join(root, "intel-rapl:*"))
	if err != nil {
		return nil, fmt.Errorf("energy: powercap: %w", err)
	}
	names := map[string]string{} // "0" or "0:1" → zone name
	for _, d := range dirs {
		id := strings.TrimPrefix(filepath.Base(d), "intel-rapl:")
		b, err := os.ReadFile(filepath.Join(d, "name"))
		if err != nil {
			continue // not a zone (or unreadable): skipped
		}
		names[id] = strings.TrimSpace(string(b))
	}
	var zs []zone
	for _, d := range dirs {
		id := strings.TrimPrefix(filepath.Base(d), "intel-rapl:")
		name, ok := names[id]
		if !ok || !p.wants(name) {
			continue
		}
		parts := strings.Split(id, ":")
		if !validZoneID(parts) {
			continue
		}
		node := name
		if len(parts) == 2 {
			parent, ok := names[parts[0]]
			if !ok {
				parent = "zone-" + parts[0]
			}
			node = parent + "/" + name
		}
		zs = append(zs, zone{node: node, dir: d})
	}
	if len(zs) == 0 {
		return nil, fmt.Errorf("%w: no powercap zone named %s under %s", ErrUnavailable, p.domainList(), root)
	}
	slices.SortFunc(zs, func(a, b zone) int { return strings.Compare(a.node, b.node) })
	for i := 1; i < len(zs); i++ {
		if zs[i].node == zs[i-1].node {
			return nil, fmt.Errorf("energy: powercap: two zones named %q under %s (%s, %s)", zs[i].node, root, zs[i-1].dir, zs[i].dir)
		}
	}
	return zs, nil
}

func validZoneID(parts []string) bool {
	if len(parts) < 1 || len(parts) > 2 {
		return false
	}
	for _, s := range parts {
		if n, err := strconv.Atoi(s); err != nil || n < 0 {
			return false
		}
	}
	return true
}

func (p Powercap) domainList() string {
	if p.Domains == nil {
		return "package-N or dram"
	}
	return strings.Join(p.Domains, ", ")
}

func (p Powercap) read(ctx context.Context) ([]Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("energy: powercap: %w", err)
	}
	zs, err := p.zones()
	if err != nil {
		return nil, err
	}
	rs := make([]Reading, 0, len(zs))
	for _, z := range zs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("energy: powercap: %w", err)
		}
		uj, err := readMicrojoules(filepath.Join(z.dir, "energy_uj"))
		if err != nil {
			return nil, err
		}
		rs = append(rs, Reading{Node: z.node, Metric: MetricEnergy, Value: uj / 1e6})
	}
	return rs, nil
}

func (p Powercap) counterMax(ctx context.Context, node string) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("energy: powercap: %w", err)
	}
	zs, err := p.zones()
	if err != nil {
		return 0, err
	}
	for _, z := range zs {
		if z.node == node {
			uj, err := readMicrojoules(filepath.Join(z.dir, "max_energy_range_uj"))
			if err != nil {
				return 0, err
			}
			return uj / 1e6, nil
		}
	}
	return 0, fmt.Errorf("%w: no powercap zone %q under %s", ErrUnavailable, node, p.root())
}

// readMicrojoules reads a sysfs file holding one unsigned integer.
func readMicrojoules(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return 0, fmt.Errorf("%w: powercap: %w (energy_uj is root-only on kernels patched for CVE-2020-8694)", ErrUnavailable, err)
		}
		return 0, fmt.Errorf("energy: powercap: %w", err)
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: powercap %s: expected an unsigned integer of µJ, found %q", ErrParse, path, clip(s))
	}
	return float64(v), nil
}
