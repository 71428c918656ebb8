package energy

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
)

// Command is a Source that runs a command printing power in watts, for
// meters this package does not know (a smart plug's CLI, ipmitool wrapped
// in a script, a script over ssh). Each non-empty output line is either
//
//	<watts>          the power of node Node
//	<node> <watts>   the power of the named node
//
// where watts may carry a unit ("212.5W" or "212.5 W"); lines starting
// with # are comments. See ParseWatts.
type Command struct {
	// Name and Args are the command; Name is required.
	Name string
	Args []string
	// Runner runs it (default ExecRunner()).
	Runner Runner
	// Node names the power of a bare number (default: Name).
	Node string
}

var _ Source = Command{}

// Read runs the command once and returns its readings as MetricPower.
func (c Command) Read(ctx context.Context) ([]Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("energy: command %s: %w", c.Name, err)
	}
	if c.Name == "" {
		return nil, fmt.Errorf("%w: command source with no command name", ErrUnavailable)
	}
	run := c.Runner
	if run == nil {
		run = ExecRunner()
	}
	out, err := run.Run(ctx, c.Name, c.Args...)
	if err != nil {
		return nil, fmt.Errorf("energy: command %s: %w", c.Name, err)
	}
	node := c.Node
	if node == "" {
		node = c.Name
	}
	return ParseWatts(out, node)
}

// ParseWatts reads the output format of Command (see there) and returns
// MetricPower readings, bare numbers named node. A value that is not a
// finite number ≥ 0, a line of more than two fields, a node named twice or
// output with no reading at all is an error wrapping ErrParse.
func ParseWatts(out []byte, node string) ([]Reading, error) {
	var rs []Reading
	seen := map[string]bool{}
	for i, line := range bytes.Split(out, []byte("\n")) {
		l := strings.TrimSpace(string(line))
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		if len(f) >= 2 && f[len(f)-1] == "W" {
			f = f[:len(f)-1]
		}
		name := node
		switch len(f) {
		case 1:
		case 2:
			name = f[0]
		default:
			return nil, fmt.Errorf("%w: line %d: expected \"<watts>\" or \"<node> <watts>\", found %q", ErrParse, i+1, clip(l))
		}
		w, err := parseQuantity(f[len(f)-1], "W", 1)
		if err != nil || math.IsNaN(w) {
			if err == nil {
				err = fmt.Errorf("expected a number of watts, found %q", clip(f[len(f)-1]))
			}
			return nil, fmt.Errorf("%w: line %d: %w", ErrParse, i+1, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: line %d: node %q named twice", ErrParse, i+1, name)
		}
		seen[name] = true
		rs = append(rs, Reading{Node: name, Metric: MetricPower, Value: w})
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("%w: expected at least one reading of watts, found none in %q", ErrParse, clip(string(out)))
	}
	return rs, nil
}
