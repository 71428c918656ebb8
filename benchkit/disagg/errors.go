package disagg

import "errors"

var (
	// ErrNoDistinctPlacements: no prefill placement and decode placement
	// share no node, so the two instances cannot run side by side.
	ErrNoDistinctPlacements = errors.New("disagg: no prefill and decode placements on distinct nodes")
	// ErrNodeNotFound: a node name matched no node of the cluster, or
	// several.
	ErrNodeNotFound = errors.New("disagg: node not found")
	// ErrPrefillNotRemote: the engine reports that a request of the
	// disaggregated phase was prefilled by the decode instance itself (exo
	// falls back to local prefill without saying so; the embedded engine
	// says so), or that another instance than the run's served it.
	ErrPrefillNotRemote = errors.New("disagg: the disaggregated phase's prefill did not run on the prefill instance")
	// ErrCleanup: the link or an instance the run created could not be
	// removed; the message names what is left on the cluster.
	ErrCleanup = errors.New("disagg: cleanup failed")
)
