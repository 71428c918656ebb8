package sim

import (
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/testkit"
)

// RequestOverhead delays every generation request by itself before the
// scheduler, in every profile, and the requests wait it side by side:
// four at once take well under four times it.
func TestRequestOverhead(t *testing.T) {
	const d = 150 * time.Millisecond
	for _, prof := range []Profile{ProfileSim, LlamaCpp} {
		s := newFast(t, Options{Profile: prof, RequestOverhead: d})
		start := time.Now()
		var wg sync.WaitGroup
		took := make([]time.Duration, 4)
		for i := range took {
			wg.Go(func() {
				t0 := time.Now()
				resp := post(t, s.URL+"/v1/chat/completions", chatBody(s.Model(), prompt(8), 2, ""))
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("profile %v: status %d", prof, resp.StatusCode)
				}
				took[i] = time.Since(t0)
			})
		}
		testkit.WaitWithin(t, &wg, testkit.Patience)
		for i, x := range took {
			if x < d {
				t.Errorf("profile %v request %d took %v, less than the overhead %v", prof, i, x, d)
			}
		}
		if all := time.Since(start); all >= 4*d {
			t.Errorf("profile %v: four requests took %v together: they waited the overhead in turn, not side by side", prof, all)
		}
	}
}
