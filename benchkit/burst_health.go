package benchkit

import (
	"fmt"
	"strings"
)

// BurstHealth is how well the client released one burst of a Runner's
// plan (exo-bench): its dispatch skew, the spread of its requests' send
// instants, against the bound of 0.5 ms a request, max(5 ms, 0.5 ms × n).
// A skew beyond it means the client could not hand the burst to the
// network at once, so the burst's latencies include its own queueing.
//
// The bound is far above what a free client does: docs/PERFORMANCE.md
// measures a p99 arrival skew of 0.16–0.25 ms for 8 requests, 1.3–2.3 ms
// for 64 and 5.4–7.8 ms for 256 through the real adapters, against bounds
// of 5, 32 and 128 ms.
type BurstHealth struct {
	// Burst names the burst: its placement (when there is one), cell and
	// repeat, "placement=…/pp=512/tg=128/conc=8/repeat=0".
	Burst string `json:"burst"`
	// N is the burst's size; SkewS its dispatch skew and BoundS the skew
	// allowed, in seconds.
	N      int     `json:"n"`
	SkewS  float64 `json:"dispatch_skew_s"`
	BoundS float64 `json:"dispatch_skew_bound_s"`
	// Saturated is true when SkewS exceeds BoundS; Reason says so.
	Saturated bool   `json:"client_saturated"`
	Reason    string `json:"reason,omitempty"`
}

// burstSkewBound is the dispatch skew allowed a burst of n requests:
// max(saturationMinLag, saturationSkewPerRequest × n), in seconds.
func burstSkewBound(n int) float64 {
	return max(saturationMinLag.Seconds(), saturationSkewPerRequest.Seconds()*float64(n))
}

// CheckBursts judges every burst of more than one request of the report
// (its requests grouped by placement, cell and repeat: an ExoSweep's too)
// and returns those whose skew exceeded its bound; saturated is true when
// there is one. A burst of one request has no skew and is not judged.
func (rep Report) CheckBursts() (bad []BurstHealth, saturated bool) {
	type key struct {
		cell   string
		repeat int
	}
	var order []key
	bursts := map[key]*BurstHealth{}
	for _, r := range rep.Requests {
		if r.Concurrency < 2 {
			continue
		}
		name := Summary{Key: ByCell, Labels: r.Labels, Cell: r.Cell()}.Name()
		k := key{name, r.Repeat}
		b, ok := bursts[k]
		if !ok {
			b = &BurstHealth{Burst: fmt.Sprintf("%s/repeat=%d", name, r.Repeat), N: r.Concurrency, BoundS: burstSkewBound(r.Concurrency)}
			bursts[k] = b
			order = append(order, k)
		}
		b.SkewS = max(b.SkewS, r.DispatchSkewS)
	}
	for _, k := range order {
		b := bursts[k]
		if b.SkewS > b.BoundS {
			b.Saturated = true
			b.Reason = fmt.Sprintf("dispatch skew %.1f ms > %.1f ms (max(%v, %v × %d requests))",
				b.SkewS*1e3, b.BoundS*1e3, saturationMinLag, saturationSkewPerRequest, b.N)
			bad = append(bad, *b)
		}
	}
	return bad, len(bad) > 0
}

// burstReasons joins the reasons of the bursts in bs: "pp=…/repeat=0:
// dispatch skew …; …".
func burstReasons(bs []BurstHealth) string {
	rs := make([]string, 0, len(bs))
	for _, b := range bs {
		rs = append(rs, b.Burst+": "+b.Reason)
	}
	return strings.Join(rs, "; ")
}
