package timing_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/inferbench/inferbench/timing"
)

func ExampleGenerationTPS() {
	// 129 tokens, the first at 0.5 s and the last at 2.5 s: 128 intervals
	// in 2 s.
	rate, err := timing.GenerationTPS(129, 2*time.Second)
	fmt.Println(rate, err)

	// One token has no interval: the rate is undefined, not 0.
	_, err = timing.GenerationTPS(1, time.Second)
	fmt.Println(errors.Is(err, timing.ErrUndefined))
	// Output:
	// 64 <nil>
	// true
}

func ExampleTrace_Metrics() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(v int) time.Time { return start.Add(time.Duration(v) * time.Millisecond) }
	tr := timing.Trace{
		Start: start,
		Chunks: []timing.Chunk{
			{At: ms(120), Tokens: 1},
			{At: ms(160), Tokens: 4}, // the server batched 4 tokens into one chunk
			{At: ms(170), Tokens: 1},
		},
		End: ms(175),
	}
	m, err := tr.Metrics()
	if err != nil {
		panic(err)
	}
	fmt.Println("tokens:", m.Tokens)
	fmt.Println("TTFT:", m.TTFT)
	fmt.Println("TPOT:", m.TPOT)
	fmt.Println("ICL (per chunk):", m.ICL)
	fmt.Println("ITL (per token):", m.ITL)
	fmt.Printf("generation TPS: %.1f\n", m.GenerationTPS)
	// Output:
	// tokens: 6
	// TTFT: 120ms
	// TPOT: 11ms
	// ICL (per chunk): [40ms 10ms]
	// ITL (per token): [10ms 10ms 10ms 10ms 10ms]
	// generation TPS: 100.0
}

func ExampleAggregateBurst() {
	// A burst of 4: one request decoded faster than the rest.
	b := timing.AggregateBurst([]timing.BurstRequest{
		{Tokens: 128, GenerationTPS: 40, RateDefined: true},
		{Tokens: 128, GenerationTPS: 40, RateDefined: true},
		{Tokens: 128, GenerationTPS: 40, RateDefined: true},
		{Tokens: 128, GenerationTPS: 70, RateDefined: true},
	}, 4*time.Second)
	fmt.Printf("exo aggregate (max × N): %.0f tok/s\n", b.ExoAggregateTPS)
	fmt.Printf("Σ tokens / wall:         %.0f tok/s\n", b.ThroughputTPS)
	fmt.Printf("mean, median:            %.1f, %.0f tok/s\n", b.MeanTPS, b.MedianTPS)
	// Output:
	// exo aggregate (max × N): 280 tok/s
	// Σ tokens / wall:         128 tok/s
	// mean, median:            47.5, 40 tok/s
}

func ExampleConfidenceInterval() {
	// Generation TPS of five repeats of one cell: mean 51.28, s = 0.4868,
	// t(0.975, 4) = 2.7764, half width 2.7764 · 0.4868 / √5 = 0.6045.
	iv := timing.ConfidenceInterval([]float64{51.2, 50.8, 52.0, 51.5, 50.9}, 0.95)
	fmt.Printf("%.2f [%.2f, %.2f] at %.0f%%\n", iv.Center, iv.Lo, iv.Hi, 100*iv.Confidence)
	// Output:
	// 51.28 [50.68, 51.88] at 95%
}

func ExampleComputeGoodput() {
	slo := timing.SLO{TTFT: 200 * time.Millisecond, TPOT: 50 * time.Millisecond}
	ok := []timing.Metrics{
		{TTFT: 150 * time.Millisecond, TTFTDefined: true, TPOT: 40 * time.Millisecond, TPOTDefined: true},
		{TTFT: 250 * time.Millisecond, TTFTDefined: true, TPOT: 40 * time.Millisecond, TPOTDefined: true},
	}
	g := timing.ComputeGoodput(slo, ok, 1, 2*time.Second) // plus one failed request
	fmt.Printf("%s: %d of %d good, %.2f req/s\n", slo, g.Good, g.Total, g.Rate)
	// Output:
	// ttft≤200ms tpot≤50ms: 1 of 3 good, 0.50 req/s
}

func ExampleTrace_TTFA() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(v int) time.Time { return start.Add(time.Duration(v) * time.Millisecond) }
	tr := timing.Trace{
		Start: start,
		Chunks: []timing.Chunk{
			{At: ms(100), Tokens: 1, Kind: timing.Reasoning}, // the model thinks…
			{At: ms(110), Tokens: 1, Kind: timing.Reasoning},
			{At: ms(120), Tokens: 1, Kind: timing.Reasoning},
			{At: ms(150), Tokens: 1}, // …then answers
			{At: ms(165), Tokens: 1},
			{At: ms(180), Tokens: 1},
		},
		End: ms(180),
	}
	m, err := tr.Metrics()
	if err != nil {
		panic(err)
	}
	fmt.Println("TTFT:", m.TTFT, "TTFA:", m.TTFA, "last reasoning:", m.LastReasoning)
	fmt.Println("tokens:", m.Tokens, "=", m.ReasoningTokens, "reasoning +", m.AnswerTokens, "answer")
	fmt.Println("TPOT:", m.TPOT, "reasoning:", m.TPOTReasoning, "answer:", m.TPOTAnswer)
	// Output:
	// TTFT: 100ms TTFA: 150ms last reasoning: 120ms
	// tokens: 6 = 3 reasoning + 3 answer
	// TPOT: 16ms reasoning: 10ms answer: 15ms
}
