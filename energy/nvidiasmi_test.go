package energy

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseNvidiaSMI(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		in   string
		want []GPUReading
	}{
		{"nounits", "0, 71.53, 123456789\n1, 300.10, 5000\n", []GPUReading{{0, 71.53, 123456.789}, {1, 300.10, 5}}},
		{"with units", "0, 71.53 W, 123456789 mJ\n", []GPUReading{{0, 71.53, 123456.789}}},
		{"header and CRLF", "index, power.draw [W], total_energy_consumption [mJ]\r\n0, 40.00, 1000\r\n\r\n", []GPUReading{{0, 40, 1}}},
		{"not supported", "0, [N/A], [Not Supported]\n1, 55.5, [N/A]\n2, [Unknown Error], 42\n", []GPUReading{{0, nan, nan}, {1, 55.5, nan}, {2, nan, 0.042}}},
		{"bare N/A", "3, N/A, N/A\n", []GPUReading{{3, nan, nan}}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNvidiaSMI([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, cmpopts.EquateNaNs(), approx); d != "" {
				t.Errorf("ParseNvidiaSMI (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseNvidiaSMIErrors(t *testing.T) {
	for _, in := range []string{
		"0, 71.5\n",          // two fields
		"0, 1, 2, 3\n",       // four
		"x, 1, 2\n",          // index
		"-1, 1, 2\n",         // negative index
		"0, -5, 2\n",         // negative power
		"0, NaN, 2\n",        // not finite
		"0, 1, +Inf\n",       // not finite
		"0, 12 kW, 2\n",      // wrong unit
		"0, 1, 2\n0, 3, 4\n", // GPU twice
		"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
	} {
		if _, err := ParseNvidiaSMI([]byte(in)); !errors.Is(err, ErrParse) {
			t.Errorf("ParseNvidiaSMI(%q): error %v, want ErrParse", in, err)
		}
	}
}

func TestNvidiaSMIRead(t *testing.T) {
	var gotName string
	var gotArgs []string
	run := RunnerFunc(func(ctx context.Context, name string, args ...string) ([]byte, error) {
		gotName, gotArgs = name, args
		return []byte("0, 71.5, 2000\n1, [N/A], 3000\n"), nil
	})
	rs, err := NvidiaSMI{Runner: run, Path: "/opt/nvidia-smi"}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Reading{
		{Node: "gpu0", Metric: MetricPower, Value: 71.5},
		{Node: "gpu0", Metric: MetricEnergy, Value: 2},
		{Node: "gpu1", Metric: MetricEnergy, Value: 3},
	}
	if d := cmp.Diff(want, rs); d != "" {
		t.Errorf("Read (-want +got):\n%s", d)
	}
	wantArgs := []string{"--query-gpu=index,power.draw,total_energy_consumption", "--format=csv,noheader,nounits"}
	if gotName != "/opt/nvidia-smi" || !slices.Equal(gotArgs, wantArgs) {
		t.Errorf("ran %s %q, want /opt/nvidia-smi %q", gotName, gotArgs, wantArgs)
	}
	boom := errors.New("driver gone")
	_, err = NvidiaSMI{Runner: RunnerFunc(func(context.Context, string, ...string) ([]byte, error) { return nil, boom })}.Read(context.Background())
	if !errors.Is(err, boom) {
		t.Errorf("runner failure: error %v, want it wrapped", err)
	}
}

// FuzzParseNvidiaSMI checks that the parser never panics, and that what it
// accepts is well formed: distinct indices, values NaN or finite ≥ 0.
func FuzzParseNvidiaSMI(f *testing.F) {
	for _, s := range []string{
		"0, 71.53, 123456789\n1, 300.10, 5000\n",
		"0, 71.53 W, 123456789 mJ\n",
		"index, power.draw [W], total_energy_consumption [mJ]\r\n0, 40.00, 1000\r\n",
		"0, [N/A], [Not Supported]\n",
		"0, 1e308, 1e308\n",
		"0,,\n",
		"NVIDIA-SMI has failed\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		gpus, err := ParseNvidiaSMI(in)
		if err != nil {
			return
		}
		seen := map[int]bool{}
		for _, g := range gpus {
			if seen[g.Index] || g.Index < 0 {
				t.Fatalf("index %d repeated or negative in %q", g.Index, in)
			}
			seen[g.Index] = true
			for _, v := range []float64{g.Watts, g.Joules} {
				if !math.IsNaN(v) && (math.IsInf(v, 0) || v < 0) {
					t.Fatalf("value %v accepted from %q", v, in)
				}
			}
		}
	})
}
