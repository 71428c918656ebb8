package energy

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The arguments NvidiaSMI passes to nvidia-smi.
const (
	nvidiaSMIQuery  = "--query-gpu=index,power.draw,total_energy_consumption"
	nvidiaSMIFormat = "--format=csv,noheader,nounits"
)

// NvidiaSMI is a Source of NVIDIA GPU power: it runs
//
//	nvidia-smi --query-gpu=index,power.draw,total_energy_consumption --format=csv,noheader,nounits
//
// and reports, for each GPU i, node Prefix+i ("gpu0" by default) with
// MetricPower from power.draw (W) and MetricEnergy from
// total_energy_consumption (mJ since the driver loaded, as joules) where
// the driver offers them; a GPU that reports neither is left out.
//
// Prefer the counter: NVML documents power.draw on Ampere and newer GPUs
// (GA100 aside) as an average over the last second, so it lags the load,
// while the energy counter (Volta and newer) integrates on the GPU. The
// counter is 64-bit and does not wrap in practice, so CounterMax is 0.
//
// The zero value runs "nvidia-smi" from PATH with ExecRunner.
type NvidiaSMI struct {
	// Path is the executable (default "nvidia-smi").
	Path string
	// Runner runs it (default ExecRunner()).
	Runner Runner
	// Prefix is put before each GPU index to name its node (default "gpu").
	Prefix string
}

var (
	_ Source  = NvidiaSMI{}
	_ Counter = NvidiaSMI{}
)

// Read runs nvidia-smi once and returns its readings.
func (n NvidiaSMI) Read(ctx context.Context) ([]Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("energy: nvidia-smi: %w", err)
	}
	path, run, prefix := n.Path, n.Runner, n.Prefix
	if path == "" {
		path = "nvidia-smi"
	}
	if run == nil {
		run = ExecRunner()
	}
	if prefix == "" {
		prefix = "gpu"
	}
	out, err := run.Run(ctx, path, nvidiaSMIQuery, nvidiaSMIFormat)
	if err != nil {
		return nil, fmt.Errorf("energy: nvidia-smi: %w", err)
	}
	gpus, err := ParseNvidiaSMI(out)
	if err != nil {
		return nil, err
	}
	var rs []Reading
	for _, g := range gpus {
		node := prefix + strconv.Itoa(g.Index)
		if !math.IsNaN(g.Watts) {
			rs = append(rs, Reading{Node: node, Metric: MetricPower, Value: g.Watts})
		}
		if !math.IsNaN(g.Joules) {
			rs = append(rs, Reading{Node: node, Metric: MetricEnergy, Value: g.Joules})
		}
	}
	return rs, nil
}

// CounterMax returns 0: NVML's total energy counter is 64-bit millijoules
// and does not wrap within any run.
func (NvidiaSMI) CounterMax(ctx context.Context, node string) (float64, error) { return 0, nil }

// A GPUReading is one line of nvidia-smi's output.
type GPUReading struct {
	Index int
	// Watts is power.draw, NaN when the driver has none ("[N/A]",
	// "[Not Supported]", any bracketed message).
	Watts float64
	// Joules is total_energy_consumption / 1000, NaN when the driver
	// has none.
	Joules float64
}

// ParseNvidiaSMI reads the CSV nvidia-smi prints for
// --query-gpu=index,power.draw,total_energy_consumption: one line per GPU
// of three comma-separated fields. It accepts the output with or without
// nounits ("71.5" or "71.5 W", "1234 mJ"), with or without the header
// line, CRLF line ends and blank lines. A value nvidia-smi replaces with a
// bracketed message ("[N/A]", "[Not Supported]", "[Unknown Error]") or
// "N/A" becomes NaN. Anything else that is not a finite, non-negative
// number, a line without three fields, or a GPU index seen twice is an
// error wrapping ErrParse that names the line.
func ParseNvidiaSMI(out []byte) ([]GPUReading, error) {
	var gpus []GPUReading
	seen := map[int]bool{}
	for i, line := range bytes.Split(out, []byte("\n")) {
		l := strings.TrimSpace(string(line))
		if l == "" {
			continue
		}
		f := strings.Split(l, ",")
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: nvidia-smi line %d: expected 3 comma-separated fields (index, power.draw, total_energy_consumption), found %d in %q",
				ErrParse, i+1, len(f), clip(l))
		}
		for k := range f {
			f[k] = strings.TrimSpace(f[k])
		}
		if strings.HasPrefix(f[0], "index") {
			continue // the header, when noheader was dropped
		}
		idx, err := strconv.Atoi(f[0])
		if err != nil || idx < 0 {
			return nil, fmt.Errorf("%w: nvidia-smi line %d: expected a GPU index ≥ 0, found %q", ErrParse, i+1, clip(f[0]))
		}
		if seen[idx] {
			return nil, fmt.Errorf("%w: nvidia-smi line %d: GPU %d listed twice", ErrParse, i+1, idx)
		}
		seen[idx] = true
		w, err := parseQuantity(f[1], "W", 1)
		if err != nil {
			return nil, fmt.Errorf("%w: nvidia-smi line %d: power.draw: %w", ErrParse, i+1, err)
		}
		j, err := parseQuantity(f[2], "mJ", 1e-3)
		if err != nil {
			return nil, fmt.Errorf("%w: nvidia-smi line %d: total_energy_consumption: %w", ErrParse, i+1, err)
		}
		gpus = append(gpus, GPUReading{Index: idx, Watts: w, Joules: j})
	}
	return gpus, nil
}

// parseQuantity reads "12.5", "12.5 W" (unit optional) or a missing-value
// marker (NaN), and returns the number × scale.
func parseQuantity(s, unit string, scale float64) (float64, error) {
	if s == "" || s == "N/A" || strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		return math.NaN(), nil
	}
	s = strings.TrimSpace(strings.TrimSuffix(s, unit))
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("expected a finite number ≥ 0 (unit %s optional), found %q", unit, clip(s))
	}
	return v * scale, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
