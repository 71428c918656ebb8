package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/testkit"
)

// completionResp is the part of a non-streaming text_completion the tests
// read.
type completionResp struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Choices []struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens *int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Sim struct {
		PrefillStartS float64 `json:"prefill_start_s"`
		PrefillEndS   float64 `json:"prefill_end_s"`
		CachedTokens  int     `json:"cached_tokens"`
	} `json:"sim"`
}

// cached returns the reported cached_tokens, or -1 when not reported.
func (c completionResp) cached() int {
	if d := c.Usage.PromptTokensDetails; d != nil && d.CachedTokens != nil {
		return *d.CachedTokens
	}
	return -1
}

func completionBody(model string, prompt any, maxTokens int, extra string) string {
	p, _ := json.Marshal(prompt)
	return fmt.Sprintf(`{"model":%q,"prompt":%s,"max_tokens":%d%s}`, model, p, maxTokens, extra)
}

func complete(t *testing.T, s *Server, body string) completionResp {
	t.Helper()
	resp := post(t, s.VLLMURL+"/v1/completions", body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var c completionResp
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return c
}

// sharedPrefixPrompts returns the seed's ablation workload: n prompts of
// token ids, a shared prefix of shared random ids and unique random ids
// each, from a fixed source.
func sharedPrefixPrompts(n, shared, unique int) [][]int {
	r := rand.New(rand.NewPCG(4, 16))
	id := func() int { return 100 + r.IntN(9900) }
	prefix := make([]int, shared)
	for i := range prefix {
		prefix[i] = id()
	}
	out := make([][]int, n)
	for i := range out {
		p := append([]int(nil), prefix...)
		for range unique {
			p = append(p, id())
		}
		out[i] = p
	}
	return out
}

// TestPrefixCacheAblation reproduces the seed chapter's ablation through
// the vLLM API: 16 requests sharing a 400-token prefix plus 16 unique
// tokens each, sent one after another. Without reuse the sim prefills
// 16 × 416 = 6656 tokens; with the block cache the first request prefills
// 416 and each later one its 16 (the prefix is 25 whole blocks), 656 in
// all. The sums of what the responses report (prompt_tokens −
// cached_tokens) must equal the sim's own count of prefilled tokens, and
// each request's prefill must last what the cost model gives for its
// uncached tokens after its cached ones.
func TestPrefixCacheAblation(t *testing.T) {
	prompts := sharedPrefixPrompts(16, 400, 16)
	for _, tc := range []struct {
		mode             PrefixCacheMode
		prefilled, hits  int
		cachedAfterFirst int
	}{
		{PrefixCacheNaive, 6656, 0, 0},
		{PrefixCacheRadix, 656, 15 * 400, 400},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			s := newFast(t, Options{PrefixCache: tc.mode})
			p := s.Preset()
			var prefilled, hits int
			for i, ids := range prompts {
				c := complete(t, s, completionBody(s.Model(), ids, 8, `,"ignore_eos":true`))
				if c.Usage.PromptTokens != 416 || c.Usage.CompletionTokens != 8 {
					t.Fatalf("request %d: usage %+v, want 416 prompt tokens (the ids, exactly) and 8 generated", i, c.Usage)
				}
				cached := c.cached()
				want := tc.cachedAfterFirst
				if i == 0 {
					want = 0
				}
				if cached != want {
					t.Errorf("request %d: cached_tokens %d, want %d", i, cached, want)
				}
				hits += cached
				prefilled += c.Usage.PromptTokens - cached
				// The cost model prefills the uncached tokens but the last
				// (which the first decode step computes) after the cached
				// ones, on the schedule's own clock.
				span := time.Duration(math.Round((c.Sim.PrefillEndS - c.Sim.PrefillStartS) * 1e9))
				wantSpan := p.PrefillTime(416-cached-1, cached, 0)
				if d := span - wantSpan; d < -time.Microsecond || d > time.Microsecond {
					t.Errorf("request %d: prefill took %v on the schedule, the cost model gives %v for %d tokens after %d", i, span, wantSpan, 416-cached-1, cached)
				}
			}
			if prefilled != tc.prefilled || hits != tc.hits {
				t.Errorf("reported: %d tokens prefilled, %d cached; want %d and %d", prefilled, hits, tc.prefilled, tc.hits)
			}
			st := s.CacheStats()
			if st.PrefilledTokens != int64(tc.prefilled) || st.CachedTokens != int64(tc.hits) || st.PromptTokens != 16*416 {
				t.Errorf("the sim's own count: %+v, want %d prefilled and %d cached of %d", st, tc.prefilled, tc.hits, 16*416)
			}
		})
	}
}

// TestPrefixCacheConcurrentArrivals: the same 16 requests arriving at
// once, on a cold cache. The sim prefills admitted requests one after
// another, and a request is looked up just before its own prefill, so
// whichever goes first computes the prefix and every later one hits it:
// 656 tokens again, whatever the order of arrival.
func TestPrefixCacheConcurrentArrivals(t *testing.T) {
	s := newFast(t, Options{})
	prompts := sharedPrefixPrompts(16, 400, 16)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		sum    int
		misses int
	)
	for _, ids := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := complete(t, s, completionBody(s.Model(), ids, 4, `,"ignore_eos":true`))
			mu.Lock()
			defer mu.Unlock()
			sum += c.Usage.PromptTokens - c.cached()
			if c.cached() == 0 {
				misses++
			}
		}()
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	if sum != 656 || misses != 1 {
		t.Errorf("%d tokens prefilled, %d requests without a hit; want 656 and 1", sum, misses)
	}
	if st := s.CacheStats(); st.PrefilledTokens != 656 {
		t.Errorf("the sim prefilled %d tokens, want 656", st.PrefilledTokens)
	}
}

// TestPrefixCacheEviction: with a KV budget of 30 blocks, a second
// 416-token prompt that shares nothing evicts the first one's cached
// blocks, tail first (vLLM frees a request's blocks in reverse order), so
// only the head of the first prompt stays: 30 − 27 blocks held by the
// second = 3 blocks, 48 tokens, are a hit when the first comes again.
func TestPrefixCacheEviction(t *testing.T) {
	s := newFast(t, Options{KVCacheBlocks: 30})
	a := sharedPrefixPrompts(1, 400, 16)[0]
	b := make([]int, 416)
	for i := range b {
		b[i] = 20000 + i
	}
	for i, tc := range []struct {
		ids    []int
		cached int
	}{{a, 0}, {a, 400}, {b, 0}, {a, 48}} {
		c := complete(t, s, completionBody(s.Model(), tc.ids, 8, `,"ignore_eos":true`))
		if c.cached() != tc.cached {
			t.Errorf("request %d: cached_tokens %d, want %d", i, c.cached(), tc.cached)
		}
	}
	st := s.CacheStats()
	if st.EvictedBlocks == 0 || st.Blocks > st.BudgetBlocks || st.BudgetBlocks != 30 {
		t.Errorf("stats %+v: want evictions and at most 30 blocks held", st)
	}
}

// TestPrefixCacheBlocks: hits are whole blocks, stop short of the last
// prompt token, follow the cache_salt, and grow over generated tokens (a
// follow-up prompt that repeats a reply hits its blocks too).
func TestPrefixCacheBlocks(t *testing.T) {
	s := newFast(t, Options{BlockSize: 8})
	ids := make([]int, 40)
	for i := range ids {
		ids[i] = 300 + i
	}
	steps := []struct {
		ids    []int
		extra  string
		cached int
	}{
		{ids, "", 0},
		{ids, "", 32},      // 40 cached, but the last token is computed: ⌊39/8⌋ blocks
		{ids[:37], "", 32}, // a strict prefix: ⌊36/8⌋ = 4 blocks
		{ids[:20], "", 16}, // ⌊19/8⌋ = 2
		{ids, `,"cache_salt":"tenant-b"`, 0},
		{ids, `,"cache_salt":"tenant-b"`, 32},
	}
	for i, st := range steps {
		c := complete(t, s, completionBody(s.Model(), st.ids, 4, `,"ignore_eos":true`+st.extra))
		if c.cached() != st.cached {
			t.Errorf("step %d: cached_tokens %d, want %d", i, c.cached(), st.cached)
		}
	}
	// The reply's tokens are cached as they are computed: the prompt, the
	// reply's ids and one more token hit through the reply but its last
	// token (whose KV the request never computed).
	c := complete(t, s, completionBody(s.Model(), ids[:16], 16, `,"ignore_eos":true`))
	var follow []int
	follow = append(follow, ids[:16]...)
	for i := range 16 {
		follow = append(follow, tokenID(generatedWord(s.vocab, 42, i)))
	}
	follow = append(follow, 7)
	if got := complete(t, s, completionBody(s.Model(), follow, 2, `,"ignore_eos":true`)).cached(); got != 24 {
		// KV of ids[:16] + 15 reply tokens = 31 tokens: 3 full blocks.
		t.Errorf("follow-up after a reply of %q: cached_tokens %d, want 24", c.Choices[0].Text, got)
	}
}

// TestCompletionsPrompt: token ids count as their number exactly, text
// with the built-in tokenizer; max_tokens defaults to vLLM's 16; the
// answer is a text_completion.
func TestCompletionsPrompt(t *testing.T) {
	s := newFast(t, Options{})
	c := complete(t, s, fmt.Sprintf(`{"model":%q,"prompt":[5,6,7,8,9],"ignore_eos":true}`, s.Model()))
	if c.Object != "text_completion" || !strings.HasPrefix(c.ID, "cmpl-") || c.Usage.PromptTokens != 5 || c.Usage.CompletionTokens != 16 {
		t.Errorf("token prompt: %+v, want a text_completion of 5 prompt tokens and 16 generated", c)
	}
	if c.Choices[0].FinishReason != "length" || CountText(c.Choices[0].Text) != 16 {
		t.Errorf("choice %+v, want 16 words and finish_reason length", c.Choices[0])
	}
	text := "Once upon a time, in a land far away"
	c = complete(t, s, completionBody(s.Model(), text, 3, ""))
	if c.Usage.PromptTokens != CountText(text) {
		t.Errorf("text prompt: prompt_tokens %d, the built-in tokenizer counts %d", c.Usage.PromptTokens, CountText(text))
	}
	// One prompt in a list is that prompt.
	if c := complete(t, s, completionBody(s.Model(), [][]int{{1, 2, 3}}, 2, "")); c.Usage.PromptTokens != 3 {
		t.Errorf("[[1,2,3]]: prompt_tokens %d, want 3", c.Usage.PromptTokens)
	}
	for _, bad := range []string{
		`{"model":%q,"prompt":""}`,
		`{"model":%q,"prompt":[]}`,
		`{"model":%q,"prompt":[1,-2]}`,
		`{"model":%q,"prompt":[1,2.5]}`,
		`{"model":%q,"prompt":["a","b"]}`,
		`{"model":%q}`,
		`{"model":%q,"prompt":"a","stream_options":{"include_usage":true}}`,
		`{"model":%q,"prompt":"a","max_tokens":40000}`,
	} {
		resp := post(t, s.VLLMURL+"/v1/completions", fmt.Sprintf(bad, s.Model()))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d (%s), want 400", fmt.Sprintf(bad, "m"), resp.StatusCode, b)
		}
	}
}

// TestCompletionsStream: vLLM's completion stream: no role chunk, one
// text_completion chunk per token with the cumulative usage under
// continuous_usage_stats, the finish reason on the last, then the usage
// chunk with choices [] and prompt_tokens_details, then [DONE].
func TestCompletionsStream(t *testing.T) {
	s := newFast(t, Options{})
	ids := sharedPrefixPrompts(1, 32, 3)[0]
	complete(t, s, completionBody(s.Model(), ids, 2, "")) // cache the prefix
	resp := post(t, s.VLLMURL+"/v1/completions", completionBody(s.Model(), ids, 5,
		`,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`))
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	type chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Index        int     `json:"index"`
			Text         *string `json:"text"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens        int `json:"prompt_tokens"`
			CompletionTokens    int `json:"completion_tokens"`
			PromptTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	var chunks []chunk
	var raw []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		raw = append(raw, line)
		if line == "[DONE]" {
			break
		}
		var c chunk
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		chunks = append(chunks, c)
	}
	if len(chunks) != 6 || raw[len(raw)-1] != "[DONE]" {
		t.Fatalf("%d chunks, want 5 token chunks, the usage chunk and [DONE]: %q", len(chunks), raw)
	}
	for i, c := range chunks[:5] {
		if c.Object != "text_completion" || len(c.Choices) != 1 || c.Choices[0].Text == nil || *c.Choices[0].Text == "" {
			t.Errorf("chunk %d: %s, want a text_completion with one token's text", i, raw[i])
		}
		if c.Usage == nil || c.Usage.CompletionTokens != i+1 || c.Usage.PromptTokensDetails != nil {
			t.Errorf("chunk %d: usage %+v, want completion_tokens %d and no details", i, c.Usage, i+1)
		}
		if last := i == 4; (c.Choices[0].FinishReason != nil) != last {
			t.Errorf("chunk %d: finish_reason %v", i, c.Choices[0].FinishReason)
		}
	}
	if !strings.Contains(raw[0], `"choices":[{"index":0,"text":`) || !strings.Contains(raw[0], `"logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]`) {
		t.Errorf("first chunk %s: want vLLM's choice fields in its order", raw[0])
	}
	u := chunks[5]
	if len(u.Choices) != 0 || u.Usage == nil || u.Usage.CompletionTokens != 5 || u.Usage.PromptTokens != 35 ||
		u.Usage.PromptTokensDetails == nil || u.Usage.PromptTokensDetails.CachedTokens != 32 {
		t.Errorf("usage chunk %s: want choices [], 35 prompt tokens of which 32 cached, 5 generated", raw[5])
	}
}

// TestVLLMChatCachedTokens: the chat path of the vLLM API reports
// cached_tokens too, only when something was cached (as vLLM's chat
// serving does), and not at all with NoPromptTokensDetails.
func TestVLLMChatCachedTokens(t *testing.T) {
	sys := strings.Repeat("You are a careful assistant who answers briefly. ", 8)
	body := func(user string) string {
		return fmt.Sprintf(`{"model":"sim/tiny-1b-8bit","messages":[{"role":"system","content":%q},{"role":"user","content":%q}],"max_tokens":2}`, sys, user)
	}
	read := func(s *Server, b string) (prompt int, cached *int) {
		t.Helper()
		resp := post(t, s.VLLMURL+"/v1/chat/completions", b)
		defer resp.Body.Close()
		var r struct {
			Usage struct {
				PromptTokens        int `json:"prompt_tokens"`
				PromptTokensDetails *struct {
					CachedTokens *int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		if d := r.Usage.PromptTokensDetails; d != nil {
			cached = d.CachedTokens
		}
		return r.Usage.PromptTokens, cached
	}
	s := newFast(t, Options{})
	if _, c := read(s, body("first question")); c != nil {
		t.Errorf("first request: cached_tokens %d reported, want none (nothing cached)", *c)
	}
	// The shared part: the system message rendered, and the user turn's
	// header, 3 + len(system) + 5 + 3 tokens; hits are whole 16-token
	// blocks of it.
	shared := 3 + CountText(sys) + 2 + 3
	_, c := read(s, body("second question"))
	if want := shared / 16 * 16; c == nil || *c != want {
		t.Errorf("second request: cached_tokens %v, want %d", c, want)
	}
	quiet := newFast(t, Options{NoPromptTokensDetails: true})
	read(quiet, body("first question"))
	if _, c := read(quiet, body("second question")); c != nil {
		t.Errorf("NoPromptTokensDetails: cached_tokens %d reported", *c)
	}
	if quiet.CacheStats().CachedTokens == 0 {
		t.Errorf("NoPromptTokensDetails: the cache itself must still hit")
	}
}
