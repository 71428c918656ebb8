package chunkjson

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The reference: what encoding/json decodes, with pointers so that null
// and absent can be told from empty.
type refChunk struct {
	ID              *string         `json:"id"`
	Model           *string         `json:"model"`
	Choices         []refChoice     `json:"choices"`
	Usage           *refUsage       `json:"usage"`
	Error           json.RawMessage `json:"error"`
	GenerationStats json.RawMessage `json:"generation_stats"`
	PowerUsage      json.RawMessage `json:"power_usage"`
}

type refChoice struct {
	Index        *int      `json:"index"`
	Delta        *refDelta `json:"delta"`
	Message      *refDelta `json:"message"`
	Text         *string   `json:"text"`
	FinishReason *string   `json:"finish_reason"`
}

type refDelta struct {
	Content          *string           `json:"content"`
	ReasoningContent *string           `json:"reasoning_content"`
	Reasoning        *string           `json:"reasoning"`
	ToolCalls        []json.RawMessage `json:"tool_calls"`
}

type refUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// view is the comparable form of both.
type view struct {
	ID, Model                            *string
	Choices, Index                       int
	DeltaSet                             bool
	Content, ReasoningContent, Reasoning *string
	Text, FinishReason                   *string
	UsageSet, DetailsSet                 bool
	Prompt, Completion, Total            int
	Cached                               *int
	CompletionDetailsSet                 bool
	ReasoningTokens                      *int
}

func (s Str) ptr() *string {
	if !s.Set {
		return nil
	}
	v := string(s.Val)
	return &v
}

func viewOf(c *Chunk) view {
	v := view{ID: c.ID.ptr(), Model: c.Model.ptr(), Choices: c.Choices, Index: c.Index, DeltaSet: c.DeltaSet,
		Content: c.Delta.Content.ptr(), ReasoningContent: c.Delta.ReasoningContent.ptr(), Reasoning: c.Delta.Reasoning.ptr(),
		Text: c.Text.ptr(), FinishReason: c.FinishReason.ptr(), UsageSet: c.UsageSet, DetailsSet: c.Usage.DetailsSet,
		Prompt: c.Usage.PromptTokens, Completion: c.Usage.CompletionTokens, Total: c.Usage.TotalTokens}
	if c.Usage.CachedSet {
		n := c.Usage.CachedTokens
		v.Cached = &n
	}
	v.CompletionDetailsSet = c.Usage.CompletionDetailsSet
	if c.Usage.ReasoningSet {
		n := c.Usage.ReasoningTokens
		v.ReasoningTokens = &n
	}
	return v
}

func viewOfRef(r *refChunk) view {
	v := view{ID: r.ID, Model: r.Model, Choices: len(r.Choices)}
	if len(r.Choices) > 0 {
		ch := r.Choices[0]
		if ch.Index != nil {
			v.Index = *ch.Index
		}
		if ch.Delta != nil {
			v.DeltaSet = true
			v.Content, v.ReasoningContent, v.Reasoning = ch.Delta.Content, ch.Delta.ReasoningContent, ch.Delta.Reasoning
		}
		v.Text, v.FinishReason = ch.Text, ch.FinishReason
	}
	if u := r.Usage; u != nil {
		v.UsageSet = true
		v.Prompt, v.Completion, v.Total = u.PromptTokens, u.CompletionTokens, u.TotalTokens
		if u.PromptTokensDetails != nil {
			v.DetailsSet, v.Cached = true, u.PromptTokensDetails.CachedTokens
		}
		if u.CompletionTokensDetails != nil {
			v.CompletionDetailsSet, v.ReasoningTokens = true, u.CompletionTokensDetails.ReasoningTokens
		}
	}
	return v
}

// check parses data both ways: where Parse accepts, encoding/json must
// accept too and decode the same values, with none of the refused members.
func check(t *testing.T, c *Chunk, data []byte) bool {
	t.Helper()
	if !c.Parse(data) {
		return false
	}
	var ref refChunk
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatalf("Parse accepted %q, encoding/json refuses it: %v", data, err)
	}
	if ref.Error != nil || ref.GenerationStats != nil || ref.PowerUsage != nil || len(ref.Choices) > 1 ||
		(len(ref.Choices) == 1 && ref.Choices[0].Message != nil) ||
		(len(ref.Choices) == 1 && ref.Choices[0].Delta != nil && len(ref.Choices[0].Delta.ToolCalls) > 0) {
		t.Fatalf("Parse accepted %q, which has a member it must refuse", data)
	}
	if diff := cmp.Diff(viewOfRef(&ref), viewOf(c)); diff != "" {
		t.Fatalf("Parse(%q) differs from encoding/json (-json +Parse):\n%s", data, diff)
	}
	return true
}

// fastChunks are chunks Parse must decode itself; slowChunks are chunks it
// must leave to encoding/json (valid or not).
var (
	fastChunks = []string{
		`{"id":"3f7e2a64","object":"chat.completion","created":1767225603,"model":"mlx-community/Llama-3.2-1B-Instruct-4bit","choices":[{"index":0,"delta":{"role":"assistant","content":" a"}}]}`,
		`{"id":"chatcmpl-8f","object":"chat.completion.chunk","created":1764420000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":21,"total_tokens":22,"completion_tokens":1}}`,
		`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":21,"total_tokens":25,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":16}}}`,
		`{"id":"x","choices":[{"index":0,"delta":{"reasoning_content":"Let me think\n\"quoted\" \u00e9\u4e2d\/","content":null},"finish_reason":"length"}]}`,
		`{"id":"x","choices":[{"index":0,"delta":{"reasoning":"ok","content":""}}],"usage":null}`,
		` {"id" : "x" , "choices" : [ { "delta" : { "content" : "é中🙂" } } ] } `,
		`{"id":"x","usage":{"completion_tokens":-3}}`,
		`{"id":"x","extra":{"a":[1,2,{"b":null,"c":true,"d":false,"e":-0.5e+3}]}}`,
		`{"id":"x","choices":[{"index":0,"delta":null,"finish_reason":"stop"}]}`,
		`{"id":"cmpl-1","object":"text_completion","created":1764600600,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}],"usage":{"prompt_tokens":416,"total_tokens":417,"completion_tokens":1}}`,
		`{"id":"cmpl-1","object":"text_completion","created":1764600600,"model":"m","choices":[],"usage":{"prompt_tokens":416,"total_tokens":424,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":400}}}`,
		`{"id":"x","usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":null}}}`,
		`{"id":"x","choices":[{"index":0,"delta":{"role":null,"content":"a","reasoning_content":null,"tool_calls":null}}]}`,
		`{"id":"x","choices":[{"index":0,"delta":{"content":"a","tool_calls":[ ]}}]}`,
		`{"id":"x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":7,"total_tokens":16,"completion_tokens_details":{"reasoning_tokens":4}}}`,
		`{"id":"x","usage":{"completion_tokens":7,"completion_tokens_details":{"reasoning_tokens":null,"accepted_prediction_tokens":0}}}`,
		`{"id":"x","usage":{"completion_tokens":7,"completion_tokens_details":null}}`,
		`{}`,
	}
	slowChunks = []string{
		`{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`,
		`{"error":{"message":"boom","type":"server_error","code":500}}`,
		`{"ID":"upper","choices":null}`,
		`{"id":"a","id":"b"}`,
		`{"id":"x","usage":{"completion_tokens":1.0}}`,
		`{"id":"x","usage":{"completion_tokens":1e2}}`,
		`{"id":"x","usage":{"completion_tokens":0123}}`,
		`{"id":"\ud83d\ude00"}`,
		`{"id":"x"} trailing`,
		`null`,
		`{"id":"x","choices":[{"delta":"not an object"}]}`,
		`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
		`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":{}}}]}`,
		`{"id":"x","usage":{"completion_tokens_details":{"reasoning_tokens":1.5}}}`,
		`{"id":"x","choices":[{"index":"0"}]}`,
		`{"id":"x","model":5}`,
		"{\"id\":\"bad\xff\"}",
		"{\"id\":\"ctl\x01\"}",
		`{"id":"x","generation_stats":{"prompt_tps":1}}`,
		`{"id":"x","choices":[{"message":{"content":"whole"}}]}`,
		`{"id":"x",}`,
		`{"id":"x"`,
	}
)

// TestParseAgreesWithEncodingJSON checks both lists both ways.
func TestParseAgreesWithEncodingJSON(t *testing.T) {
	var c Chunk
	for _, s := range fastChunks {
		if !check(t, &c, []byte(s)) {
			t.Errorf("Parse refused %q", s)
		}
	}
	for _, s := range slowChunks {
		if check(t, &c, []byte(s)) {
			t.Errorf("Parse accepted %q, which should go to encoding/json", s)
		}
	}
}

func TestParseUnescapes(t *testing.T) {
	var c Chunk
	if !c.Parse([]byte(`{"id":"a\tb","model":"\u00e9\\","choices":[{"delta":{"content":"line\nnext \"q\""}}]}`)) {
		t.Fatal("refused")
	}
	got := []string{string(c.ID.Val), string(c.Model.Val), string(c.Delta.Content.Val)}
	want := []string{"a\tb", "é\\", "line\nnext \"q\""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unescaped (-want +got):\n%s", diff)
	}
}

func TestParseAllocatesNothing(t *testing.T) {
	var c Chunk
	data := []byte(fastChunks[1])
	c.Parse(data)
	if n := testing.AllocsPerRun(100, func() {
		if !c.Parse(data) {
			t.Fatal("refused")
		}
	}); n != 0 {
		t.Errorf("%v allocations per Parse, expected 0", n)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range append(fastChunks, slowChunks...) {
		f.Add([]byte(s))
	}
	var c Chunk
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, &c, data)
	})
}

func BenchmarkParse(b *testing.B) {
	data := []byte(fastChunks[1])
	var c Chunk
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if !c.Parse(data) {
			b.Fatal("refused")
		}
	}
}
