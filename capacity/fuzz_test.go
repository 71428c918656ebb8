package capacity

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"
)

// FuzzAnalyze feeds Analyze points read from arbitrary bytes (rates,
// instants and counts a results file could hold, NaN and infinities
// among them): it must never panic, every result must encode as JSON (a
// NaN would lose the results document), and every bracket must hold its
// estimate.
func FuzzAnalyze(f *testing.F) {
	f.Add([]byte{0x40, 0x24, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() float64 {
			if len(data) < 8 {
				return 0
			}
			v := math.Float64frombits(binary.LittleEndian.Uint64(data))
			data = data[8:]
			return v
		}
		var pts []Point
		for len(data) >= 16 && len(pts) < 8 {
			p := Point{Rate: math.Abs(next()), Latency: next()}
			if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
				p.Rate = 1
			}
			if len(data) == 0 {
				break
			}
			n := int(data[0] % 40)
			data = data[1:]
			for range n {
				s := Span{Start: next(), End: next(), OK: len(data)%2 == 0}
				p.Spans = append(p.Spans, s)
			}
			p.Total = n
			p.Good = n / 2
			pts = append(pts, p)
		}
		res, err := Analyze(pts, "e2e≤1s", Options{})
		if err != nil {
			t.Fatalf("Analyze: %v", err)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("the result does not encode: %v\n%+v", err, res)
		}
		for name, iv := range map[string]Interval{"knee": res.Knee, "capacity": res.Capacity, "latency knee": res.LatencyKnee} {
			if iv.Bracketed() && !(iv.Lo <= iv.Rate && iv.Rate <= iv.Hi) {
				t.Errorf("%s %+v: estimate outside its bracket", name, iv)
			}
		}
	})
}
