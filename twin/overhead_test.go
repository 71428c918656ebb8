package twin

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine"
)

// burstRows are bursts of conc requests (two of each size) whose TTFT is
// their server prefill plus ⌈k / slots⌉ overheads of o for the k-th (all
// at once for slots 0), with 10 % noise on each.
func burstRows(slots int, o float64, concs ...int) []benchkit.Request {
	rng := rand.New(rand.NewPCG(1, 2))
	var rows []benchkit.Request
	for run, c := range concs {
		for rep := range 2 {
			for k := range c {
				prefill := time.Duration(5+rng.IntN(20)) * time.Millisecond
				n := 1
				if slots > 0 {
					n = k/slots + 1
				}
				ttft := prefill.Seconds() + o*float64(n)*(0.9+0.2*rng.Float64())
				rows = append(rows, benchkit.Request{Run: run, Repeat: rep, Index: k, Concurrency: c, PPTarget: 64, TGTarget: 16, Stream: true,
					TTFTS: &ttft, Stats: &engine.ServerStats{Source: "ollama", Prefill: &prefill}})
			}
		}
	}
	return rows
}

// TestOverheadSlots: the overheads' slots are read back from bursts that
// pass them one or two at a time, and none from bursts that run them side
// by side; bursts larger than the running cap, or with no server prefill,
// are not read.
func TestOverheadSlots(t *testing.T) {
	const o = 0.035
	for _, c := range []struct {
		slots, want int
	}{{1, 1}, {2, 2}, {0, 0}} {
		got, bursts := overheadSlots(burstRows(c.slots, o, 2, 4), o, 4)
		if got != c.want || bursts != 4 {
			t.Errorf("bursts passing %d at a time: read %d slots from %d bursts, want %d from 4", c.slots, got, bursts, c.want)
		}
	}
	if got, bursts := overheadSlots(burstRows(1, o, 8), o, 4); got != 0 || bursts != 0 {
		t.Errorf("bursts of 8 over a cap of 4 read: %d slots from %d bursts", got, bursts)
	}
	rows := burstRows(1, o, 4)
	for i := range rows {
		rows[i].Stats = nil
	}
	if got, _ := overheadSlots(rows, o, 4); got != 0 {
		t.Errorf("bursts with no server prefill read %d slots", got)
	}
}

// TestDesignOverKV: with the attention over the whole cache, a prefill
// chunk's pair column is n · (offset + n) and a decode step of batch b
// over Σ contexts s adds b · s to it (in the compute regime); without,
// the chunk's own causal pairs and none for the step.
func TestDesignOverKV(t *testing.T) {
	th := make([]float64, nCols)
	th[cPrefillTok], th[cPrefillPair], th[cDecodeReq] = 1e-5, 1e-8, 1e-3 // compute rules every piece
	pre := obs{kind: obsPrefill, n: 256, off: 100}
	dec := obs{kind: obsDecode, steps: []step{{batch: 4, sumCtx: 2000}}}
	for _, over := range []bool{false, true} {
		pre.overKV, dec.overKV = over, over
		row, _ := pre.design(512, th, nil)
		want := 256.0*100 + 256.0*257/2
		if over {
			want = 256 * (100 + 256)
		}
		if row[cPrefillPair] != want {
			t.Errorf("over the cache %v: prefill pairs %v, want %v", over, row[cPrefillPair], want)
		}
		row, _ = dec.design(512, th, nil)
		want = 0
		if over {
			want = 4 * 2000
		}
		if row[cPrefillPair] != want || row[cDecodeReq] != 4 {
			t.Errorf("over the cache %v: decode step pairs %v and requests %v, want %v and 4", over, row[cPrefillPair], row[cDecodeReq], want)
		}
	}
}
