package main

import (
	"flag"
	"math"
	"slices"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/capacity"
)

// capacityFlags are --find-capacity and its settings; the ladder's start,
// ceiling and factor are --search-start, --search-max and
// --search-factor, shared with --find-max-rate.
type capacityFlags struct {
	on        bool
	runs      int
	tolerance float64
	rates     []float64 // --rate's list, run first
}

func (c *capacityFlags) addFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.on, "find-capacity", false, "sweep rates until the server over-saturates and find the knee, the capacity at the SLOs and their brackets (a --rate list runs first; else a ladder from --search-start times --search-factor up to --search-max); give --duration so that every rate runs as long")
	fs.IntVar(&c.runs, "capacity-runs", capacity.DefaultMaxRuns, "--find-capacity makes at most this many runs")
	fs.Float64Var(&c.tolerance, "capacity-tolerance", capacity.DefaultTolerance, "--find-capacity adds rates until the knee's and the capacity's brackets are within this relative width")
}

// check refuses what a capacity search cannot take, and keeps a --rate
// list as its first rates; a *cli.UsageError for anything wrong.
func (c *capacityFlags) check(o options, rateSet bool, rates []float64, settings int) error {
	if !c.on {
		return nil
	}
	switch {
	case o.findMaxRate:
		return cli.Usagef("--find-capacity and --find-max-rate are two searches; give one")
	case o.burst > 0 || o.users > 0:
		return cli.Usagef("--find-capacity sweeps open-loop rates; it takes no --burst or --users")
	case settings > 1:
		return cli.Usagef("--find-capacity searches under one thinking setting; --thinking and --reasoning-effort give %d", settings)
	case c.runs < 1:
		return cli.Usagef("--capacity-runs must be at least 1, got %d", c.runs)
	case !(c.tolerance > 0 && c.tolerance < math.Inf(1)):
		return cli.Usagef("--capacity-tolerance must be a positive number, got %g", c.tolerance)
	case o.searchStart <= 0 || math.IsNaN(o.searchStart) || math.IsInf(o.searchStart, 0):
		return cli.Usagef("--search-start must be a positive rate, got %g", o.searchStart)
	case !(o.searchFactor > 1 && o.searchFactor < math.Inf(1)):
		return cli.Usagef("--search-factor must be a finite number above 1, got %g", o.searchFactor)
	}
	if rateSet {
		for _, r := range rates {
			if math.IsInf(r, 1) {
				return cli.Usagef("--find-capacity sweeps finite rates; --rate inf sends every request at once")
			}
		}
		c.rates = rates
	}
	return nil
}

// options are the search's capacity.Options.
func (c capacityFlags) options(o options) *capacity.Options {
	return &capacity.Options{Attainment: o.attainment, Rates: c.rates, Start: o.searchStart,
		Factor: o.searchFactor, Max: o.searchMax, MaxRuns: c.runs, Tolerance: c.tolerance}
}

// byRate orders a capacity search's summaries by offered rate for the
// table (the document keeps the order the runs were made in).
func byRate(sums []benchkit.Summary) {
	slices.SortStableFunc(sums, func(a, b benchkit.Summary) int {
		ra, rb := math.Inf(1), math.Inf(1)
		if a.RequestRate != nil {
			ra = *a.RequestRate
		}
		if b.RequestRate != nil {
			rb = *b.RequestRate
		}
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
}
