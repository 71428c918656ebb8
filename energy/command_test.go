package energy

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseWatts(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Reading
	}{
		{"bare", "212.5\n", []Reading{{Node: "plug", Metric: MetricPower, Value: 212.5}}},
		{"unit attached", "212.5W", []Reading{{Node: "plug", Metric: MetricPower, Value: 212.5}}},
		{"unit apart", "212.5 W\n", []Reading{{Node: "plug", Metric: MetricPower, Value: 212.5}}},
		{"named", "# meter\nrack1 100\nrack2 50.5 W\n", []Reading{
			{Node: "rack1", Metric: MetricPower, Value: 100}, {Node: "rack2", Metric: MetricPower, Value: 50.5}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseWatts([]byte(tc.in), "plug")
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ParseWatts (-want +got):\n%s", d)
			}
		})
	}
	for _, in := range []string{"", "# nothing\n", "abc", "-3", "a b c", "n 1\nn 2\n", "NaN", "[N/A]"} {
		if _, err := ParseWatts([]byte(in), "plug"); !errors.Is(err, ErrParse) {
			t.Errorf("ParseWatts(%q): error %v, want ErrParse", in, err)
		}
	}
}

func TestCommandRead(t *testing.T) {
	run := RunnerFunc(func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if name != "meter" || len(args) != 1 || args[0] != "--watts" {
			return nil, errors.New("unexpected command")
		}
		return []byte("88\n"), nil
	})
	rs, err := Command{Name: "meter", Args: []string{"--watts"}, Runner: run}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Reading{{Node: "meter", Metric: MetricPower, Value: 88}}, rs); d != "" {
		t.Errorf("Read (-want +got):\n%s", d)
	}
	if _, err := (Command{}).Read(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("no command: error %v, want ErrUnavailable", err)
	}
}

// TestExecRunner runs real processes: a shell that prints a number, one
// that fails, and a command that does not exist.
func TestExecRunner(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	rs, err := Command{Name: "sh", Args: []string{"-c", "echo 42.5 W"}, Node: "sh"}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Value != 42.5 {
		t.Errorf("readings %v, want 42.5 W", rs)
	}
	_, err = ExecRunner().Run(context.Background(), "sh", "-c", "echo broken >&2; exit 3")
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("failing command: error %v, want one quoting its stderr", err)
	}
	_, err = ExecRunner().Run(context.Background(), "inferbench-no-such-meter")
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("missing command: error %v, want ErrUnavailable", err)
	}
}

// FuzzParseWatts checks that the parser never panics and accepts only
// finite, non-negative watts under distinct node names.
func FuzzParseWatts(f *testing.F) {
	for _, s := range []string{"212.5\n", "rack1 100\nrack2 50.5 W\n", "# c\n1W", "a b c", "1e400", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		rs, err := ParseWatts(in, "n")
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, r := range rs {
			if seen[r.Node] || math.IsNaN(r.Value) || math.IsInf(r.Value, 0) || r.Value < 0 {
				t.Fatalf("accepted %+v from %q", r, in)
			}
			seen[r.Node] = true
		}
	})
}
