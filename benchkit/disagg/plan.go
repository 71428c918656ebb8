package disagg

import (
	"fmt"

	"github.com/inferbench/inferbench/benchkit"
)

// RemotePrefillMinTokens is exo's REMOTE_PREFILL_MIN_TOKENS: a decode
// instance hands a prompt's prefill to a linked prefill instance only when
// more than this many of its tokens are not in the prefix cache.
const RemotePrefillMinTokens = 1000

// The phases of a disaggregation benchmark, as exo's
// bench/prefill_decode_bench.py names them.
const (
	// PhaseDisaggregated: requests for the decode model go to the decode
	// instance, which hands each prefill to the linked prefill instance.
	PhaseDisaggregated = "disaggregated"
	// PhaseDecodeAlone: the link and the prefill instance are gone; the
	// decode instance prefills and decodes by itself.
	PhaseDecodeAlone = "decode_alone"
	// PhasePrefillAlone: before the decode instance exists, requests for
	// the prefill model are served by the prefill instance by itself.
	PhasePrefillAlone = "prefill_alone"
)

// CheckPlan checks that every prompt length of plan exceeds
// RemotePrefillMinTokens, so that each request of the disaggregated phase
// is eligible for remote prefill, and that plan is otherwise valid
// ([benchkit.Plan.Validate] without the template overhead). The error
// wraps [benchkit.ErrBadPlan] and names the length at fault and the
// threshold.
func CheckPlan(plan benchkit.Plan) error {
	for _, pp := range plan.PP {
		if pp <= RemotePrefillMinTokens {
			return fmt.Errorf("%w: pp=%d must exceed %d: exo prefills remotely only when more than %d prompt tokens are uncached", benchkit.ErrBadPlan, pp, RemotePrefillMinTokens, RemotePrefillMinTokens)
		}
	}
	for _, tg := range plan.TG {
		if tg == 1 {
			return fmt.Errorf("%w: tg=1: the decode phase is measured by its generation rate, which needs at least 2 generated tokens ((tg − 1) / span)", benchkit.ErrBadPlan)
		}
	}
	if plan.UsePrefixCache {
		return fmt.Errorf("%w: use_prefix_cache with disaggregation: a repeated prompt would be a cache hit with at most 1 uncached token, below the %d-token remote prefill threshold", benchkit.ErrBadPlan, RemotePrefillMinTokens)
	}
	return plan.Validate(-1)
}
