package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
)

// Start the sim, send one bench request with net/http, and print its
// generation_stats. The rates come from the simulated schedule, so they are
// the same on every run.
func Example() {
	s := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer s.Close()

	body := `{"model": "` + s.Model() + `", "messages": [{"role": "user", "content": "` +
		strings.Repeat("a ", 100) + `"}], "max_tokens": 16, "use_prefix_cache": false, "stream": false}`
	client := &http.Client{Timeout: time.Minute} // a sim that stops answering is an error, not a hang
	resp, err := client.Post(s.URL+"/bench/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var out struct {
		GenerationStats struct {
			PromptTPS        float64          `json:"prompt_tps"`
			GenerationTPS    float64          `json:"generation_tps"`
			PromptTokens     int              `json:"prompt_tokens"`
			GenerationTokens int              `json:"generation_tokens"`
			PeakMemoryUsage  map[string]int64 `json:"peak_memory_usage"`
			PrefixCacheHit   string           `json:"prefix_cache_hit"`
		} `json:"generation_stats"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		fmt.Println(err)
		return
	}
	st := out.GenerationStats
	fmt.Println(resp.Header.Get(sim.SimHeader))
	fmt.Printf("prompt_tokens=%d generation_tokens=%d prefix_cache_hit=%s\n", st.PromptTokens, st.GenerationTokens, st.PrefixCacheHit)
	fmt.Printf("prompt_tps=%.0f generation_tps=%.1f peak_memory=%d bytes\n", st.PromptTPS, st.GenerationTPS, st.PeakMemoryUsage["inBytes"])
	// Output:
	// simulated; preset=fast
	// prompt_tokens=109 generation_tokens=16 prefix_cache_hit=none
	// prompt_tps=102857 generation_tps=951.5 peak_memory=1074832539 bytes
}

// The built-in Counter counts a chat request exactly as the sim will: 3
// tokens of generation prompt, 5 around each message, and the message's
// tokens.
func ExampleCounter() {
	msgs := []promptsize.Message{{Role: "user", Content: "Hello, world!"}}
	n, err := sim.Counter{}.Count(context.Background(), msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q %d\n", sim.Tokenize("Hello, world!"), n)
	// Output: ["Hello" "," " world" "!"] 12
}

// The seed's prefix-cache ablation on the vLLM API: 16 prompts of token ids
// sharing a 400-token prefix, 16 unique tokens each, sent one after
// another. Server.CacheStats is the sim's own count of what it prefilled:
// every token of every prompt without reuse, the prefix once with the
// block cache.
func ExampleServer_CacheStats() {
	client := &http.Client{Timeout: time.Minute}
	for _, mode := range []sim.PrefixCacheMode{sim.PrefixCacheNaive, sim.PrefixCacheRadix} {
		s := sim.NewServer(sim.Options{Preset: sim.Fast(), PrefixCache: mode})
		for i := range 16 {
			ids := make([]int, 416)
			for k := range ids {
				ids[k] = 100 + k // the shared prefix
				if k >= 400 {
					ids[k] = 10000 + 16*i + k // this prompt's own tokens
				}
			}
			prompt, _ := json.Marshal(ids)
			body := `{"model":"` + s.Model() + `","prompt":` + string(prompt) + `,"max_tokens":4}`
			resp, err := client.Post(s.VLLMURL+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				fmt.Println(err)
				return
			}
			resp.Body.Close()
		}
		st := s.CacheStats()
		fmt.Printf("%s: %d of %d prompt tokens prefilled, %d cached\n", mode, st.PrefilledTokens, st.PromptTokens, st.CachedTokens)
		s.Close()
	}
	// Output:
	// naive: 6656 of 6656 prompt tokens prefilled, 0 cached
	// radix: 656 of 6656 prompt tokens prefilled, 6000 cached
}

// The llama.cpp profile: llama-server at the root, any model name, the
// BOS counted, and a slot that reuses a prompt's tokens: the second
// request shares all but its last token with the first.
func Example_llamaCpp() {
	s := sim.NewServer(sim.Options{Preset: sim.Fast(), Profile: sim.LlamaCpp})
	defer s.Close()
	client := &http.Client{Timeout: time.Minute}
	for range 2 {
		body := `{"model": "any", "messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 4}`
		resp, err := client.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			fmt.Println(err)
			return
		}
		var out struct {
			Model string `json:"model"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
			Timings struct {
				CacheN  int `json:"cache_n"`
				PromptN int `json:"prompt_n"`
			} `json:"timings"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s (%s): prompt_tokens=%d cache_n=%d prompt_n=%d\n", out.Model, resp.Header.Get("Server"),
			out.Usage.PromptTokens, out.Timings.CacheN, out.Timings.PromptN)
	}
	// Output:
	// sim/tiny-1b-8bit (llama.cpp): prompt_tokens=11 cache_n=0 prompt_n=11
	// sim/tiny-1b-8bit (llama.cpp): prompt_tokens=11 cache_n=10 prompt_n=1
}
