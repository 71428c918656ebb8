package sim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
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

// TestRequestOverheadCountsTheHandler: the overhead runs from the
// request's arrival at the server, so the time its handler already spent
// counts toward it: a request that arrived 900 ms before admit waits
// about 100 ms of a 1 s overhead, not all of it, and one that arrived
// longer ago than the overhead waits nothing.
func TestRequestOverheadCountsTheHandler(t *testing.T) {
	s := &Server{opts: Options{RequestOverhead: time.Second}}
	for _, c := range []struct {
		ago      time.Duration
		min, max time.Duration
	}{{900 * time.Millisecond, 50 * time.Millisecond, 800 * time.Millisecond}, {2 * time.Second, 0, 800 * time.Millisecond}} {
		ctx := context.WithValue(context.Background(), arrivedKey{}, time.Now().Add(-c.ago))
		start := time.Now()
		if !s.admit(ctx) {
			t.Fatal("admit refused a live request")
		}
		if took := time.Since(start); took < c.min || took > c.max {
			t.Errorf("arrived %v ago: admit waited %v, want within [%v, %v]", c.ago, took, c.min, c.max)
		}
	}
}

// TestRequestOverheadSlots: with one overhead slot, four requests sent
// together pass the overhead one after another, live and predicted: the
// last of them waits about four overheads, where without a bound on the
// slots all four wait one (TestRequestOverhead).
func TestRequestOverheadSlots(t *testing.T) {
	const d = 100 * time.Millisecond
	s := newFast(t, Options{RequestOverhead: d, RequestOverheadSlots: 1})
	var wg sync.WaitGroup
	took := make([]time.Duration, 4)
	for i := range took {
		wg.Go(func() {
			t0 := time.Now()
			resp := post(t, s.URL+"/v1/chat/completions", chatBody(s.Model(), prompt(8), 2, ""))
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took[i] = time.Since(t0)
		})
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	if longest := slices.Max(took); longest < 4*d {
		t.Errorf("live: the slowest of four requests took %v, less than four overheads of %v passed one at a time", longest, d)
	}
	msgs := []promptsize.Message{{Role: "user", Content: prompt(8)}}
	var reqs []PredictRequest
	for range 4 {
		reqs = append(reqs, PredictRequest{Messages: msgs, MaxTokens: 2})
	}
	for _, slots := range []int{1, 2} {
		got, err := Predict(context.Background(), Options{Preset: Fast(), RequestOverhead: d, RequestOverheadSlots: slots}, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range got {
			if want := time.Duration(i/slots+1) * d; p.Arrival != want {
				t.Errorf("predicted, %d slots: request %d reaches the queue at %v, want %v", slots, i, p.Arrival, want)
			}
		}
	}
	if _, err := PredictDynamic(context.Background(), Options{Preset: Fast(), RequestOverhead: d, RequestOverheadSlots: 1}, reqs,
		func(int, Predicted) []PredictRequest { return nil }); !errors.Is(err, ErrPredict) {
		t.Errorf("overhead slots with a loop that waits on replies: error %v, want ErrPredict", err)
	}
	if err := (Options{RequestOverheadSlots: -1}).check(); err == nil {
		t.Error("negative RequestOverheadSlots accepted")
	}
}
