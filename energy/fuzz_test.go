package energy

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// FuzzIntegrate builds a trace from bytes (each 4 bytes: a gap in ms since
// the previous sample, then power in tenths of a watt) and a window, and
// checks that neither method panics and that, on a valid trace, energy is
// non-negative and at most max power × duration.
func FuzzIntegrate(f *testing.F) {
	f.Add([]byte{0xe8, 0x03, 0x64, 0x00, 0xe8, 0x03, 0xc8, 0x00}, int64(500), int64(1500))
	f.Add([]byte{0, 0, 1, 0}, int64(-1000), int64(10))
	f.Add([]byte{}, int64(0), int64(0))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 5, 0}, int64(0), int64(-3))
	f.Fuzz(func(t *testing.T, raw []byte, startMs, durMs int64) {
		if startMs < -1e9 || startMs > 1e9 || durMs < -1e9 || durMs > 1e9 {
			return
		}
		p := PowerTrace{Node: "fuzz"}
		tt := t0
		peak := 0.0
		for i := 0; i+4 <= len(raw); i += 4 {
			tt = tt.Add(time.Duration(binary.LittleEndian.Uint16(raw[i:])) * time.Millisecond)
			w := float64(binary.LittleEndian.Uint16(raw[i+2:])) / 10
			peak = math.Max(peak, w)
			p.Samples = append(p.Samples, Sample{At: tt, Value: w})
		}
		w := Window{Start: t0.Add(time.Duration(startMs) * time.Millisecond)}
		w.End = w.Start.Add(time.Duration(durMs) * time.Millisecond)
		limit := peak*w.Duration().Seconds()*(1+1e-9) + 1e-9
		for name, fn := range map[string]func(PowerTrace, Window) (Estimate, error){"Integrate": Integrate, "ExoWindowEnergy": ExoWindowEnergy} {
			e, err := fn(p, w)
			if err != nil {
				continue
			}
			if !(e.Joules >= 0 && e.Joules <= limit) {
				t.Errorf("%s: %v J over %v with peak %v W: want within [0, %v]", name, e.Joules, w.Duration(), peak, limit)
			}
			if name == "Integrate" && !(e.Bound >= 0) {
				t.Errorf("Integrate: bound %v, want ≥ 0", e.Bound)
			}
		}
	})
}
