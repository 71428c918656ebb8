package openai

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// countModels are the tokenizers of the module's test data
// (scripts/testdata.sh), against which countChunks is checked.
var countModels = []string{"qwen3", "llama3_1", "gptoss", "gemma3", "deepseek_v3"}

// loadCountModel loads a tokenizer of the test data, skipping when
// scripts/testdata.sh has not fetched it.
func loadCountModel(tb testing.TB, model string) *hf.Tokenizer {
	tb.Helper()
	dir := filepath.Join("..", "..", "testdata", "models", model)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		tb.Skipf("tokenizer files for %s are missing (%v): run scripts/testdata.sh", model, err)
	}
	tok, err := hf.Load(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// corpusText returns the first n bytes of promptsize/hf's golden corpus.
func corpusText(tb testing.TB, n int) string {
	tb.Helper()
	f, err := os.Open(filepath.Join("..", "..", "promptsize", "hf", "testdata", "corpus.txt.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, int64(n)))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// streamOf cuts text into the chunks a server streams it in: the text of
// one, two or three of its tokens each (in turn), so that every chunk
// boundary is a token boundary, as a server's detokenizer makes it. It
// returns the stream state countChunks reads.
func streamOf(tok *hf.Tokenizer, text string) *streamState {
	ids := tok.Encode(text)
	st := &streamState{}
	for i, k := 0, 0; i < len(ids); k++ {
		j := min(len(ids), i+1+k%3)
		st.text.WriteString(tok.Decode(ids[i:j]))
		st.ends = append(st.ends, st.text.Len())
		i = j
	}
	return st
}

// prefixCounts is the definition countChunks computes faster: the count
// of every prefix of the text that ends at a chunk's end.
func prefixCounts(tok *hf.Tokenizer, st *streamState) []int {
	text := st.text.String()
	out := make([]int, len(st.ends))
	for i, end := range st.ends {
		out[i] = tok.CountText(text[:end])
	}
	return out
}

// textCounter hides a Counter's TokenEnds, as a server's /tokenize does.
type textCounter struct{ c promptsize.Counter }

func (t textCounter) Count(ctx context.Context, ms []promptsize.Message) (int, error) {
	return t.c.Count(ctx, ms)
}

// TestCountChunksMatchesPrefixes checks that both ways countChunks counts
// (token ends from one encode; a bounded left context, with CountText and
// with a Counter that has no token ends) give every chunk the count of its
// whole prefix, on 6 KiB of the golden corpus streamed as 1–3 tokens a
// chunk, for every tokenizer of the test data: the windows move many times
// over that text, and no merge reaches back across them.
func TestCountChunksMatchesPrefixes(t *testing.T) {
	text := corpusText(t, 6<<10)
	ctx := context.Background()
	for _, model := range countModels {
		t.Run(model, func(t *testing.T) {
			tok := loadCountModel(t, model)
			if tok.Decode(tok.Encode(text)) != text {
				t.Skipf("%s does not decode the corpus to itself", model)
			}
			st := streamOf(tok, text)
			want := prefixCounts(tok, st)
			if want[len(want)-1] != tok.CountText(text) {
				t.Fatalf("the last prefix counts %d, the text %d", want[len(want)-1], tok.CountText(text))
			}
			for _, tc := range []struct {
				name string
				opts Options
			}{
				{"token ends", Options{Counter: tok}},
				{"CountText window", Options{CountText: func(_ context.Context, s string) (int, error) { return tok.CountText(s), nil }}},
			} {
				c := &Client{opts: tc.opts}
				got, err := c.countChunks(ctx, st)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					for i := range got {
						if got[i] != want[i] {
							t.Errorf("%s: chunk %d of %d (ending at byte %d) counts %d, its prefix %d", tc.name, i, len(got), st.ends[i], got[i], want[i])
							break
						}
					}
				}
			}
		})
	}
}

// TestCountChunksWithChatCounter checks the window with a Counter that
// renders a chat template and has no token ends: the template's overhead
// cancels and the counts are the prefixes' plain-text counts, for a
// template that does not touch the assistant text.
func TestCountChunksWithChatCounter(t *testing.T) {
	tok := loadCountModel(t, "qwen3")
	text := corpusText(t, 3<<10)
	st := streamOf(tok, text)
	c := &Client{opts: Options{Counter: textCounter{promptsize.CounterFunc(func(_ context.Context, ms []promptsize.Message) (int, error) {
		return 7 + tok.CountText(ms[0].Content), nil
	})}}}
	got, err := c.countChunks(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if want := prefixCounts(tok, st); !slices.Equal(got, want) {
		t.Errorf("counts differ from the prefixes':\n got %v\nwant %v", got, want)
	}
}

// TestCountChunksUnkeptText checks that chunks past the kept text count
// −1 in both ways, and the kept ones are still counted.
func TestCountChunksUnkeptText(t *testing.T) {
	tok := loadCountModel(t, "qwen3")
	st := streamOf(tok, "Hello there, how are you today?")
	st.ends = append(st.ends, st.ends[len(st.ends)-1]+10, st.ends[len(st.ends)-1]+20)
	n := len(st.ends)
	for _, opts := range []Options{{Counter: tok}, {CountText: func(_ context.Context, s string) (int, error) { return tok.CountText(s), nil }}} {
		c := &Client{opts: opts}
		got, err := c.countChunks(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		if got[n-1] != -1 || got[n-2] != -1 || got[n-3] != tok.CountText(st.text.String()) {
			t.Errorf("counts %v: expected the last two −1 and the one before %d", got, tok.CountText(st.text.String()))
		}
	}
}

// BenchmarkCountChunks counts a 4k-token stream of 1–3 tokens a chunk
// after it has ended: "prefixes" is the former way (every prefix
// counted, quadratic), "window" the bounded left context through
// CountText, "token ends" one encode through promptsize.TokenEnder.
func BenchmarkCountChunks(b *testing.B) {
	tok := loadCountModel(b, "qwen3")
	full := corpusText(b, 64<<10)
	ids := tok.Encode(full)
	text := tok.Decode(ids[:4096])
	st := streamOf(tok, text)
	ctx := context.Background()
	b.Run("prefixes", func(b *testing.B) {
		for b.Loop() {
			prefixCounts(tok, st)
		}
		b.ReportMetric(float64(len(ids[:4096])), "tokens")
	})
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"window", Options{CountText: func(_ context.Context, s string) (int, error) { return tok.CountText(s), nil }}},
		{"token_ends", Options{Counter: tok}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := &Client{opts: bc.opts}
			for b.Loop() {
				if _, err := c.countChunks(ctx, st); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReplayRecountTokenizers checks the re-count truth of the replays
// that have one against the tokenizers it names (scripts/replay_corpus.py):
// each piece the stream shows is one token of Llama 3's tokenizer (the
// model's), the re-count is gemma3's encoding of the shown text, and
// read with gemma3's tokenizer itself as the Counter (its token ends) the
// stream still gives the truth: one token a chunk, where the stream says
// so, however the counter splits the text.
func TestReplayRecountTokenizers(t *testing.T) {
	model := loadCountModel(t, "llama3_1")
	recount := loadCountModel(t, "gemma3")
	seen := 0
	for _, r := range loadReplays(t) {
		if r.recount == nil {
			continue
		}
		seen++
		t.Run(r.name, func(t *testing.T) {
			for i, p := range r.pieces {
				if r.hidden[i] || p == "" {
					continue
				}
				if ids := model.Encode(p); len(ids) != 1 {
					t.Errorf("piece %d %q is %d tokens of Llama 3's tokenizer, want 1", i, p, len(ids))
				}
			}
			var got []string
			for _, id := range recount.Encode(r.shown()) {
				got = append(got, recount.Decode([]int{id}))
			}
			if !slices.Equal(got, r.recount) {
				t.Errorf("gemma3 splits the text as %q, the truth says %q", got, r.recount)
			}
			clk := &fakeClock{}
			base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			clk.set(base)
			c, err := New("http://127.0.0.1:9", &Options{Now: clk.Now, Counter: recount})
			if err != nil {
				t.Fatal(err)
			}
			res := engine.Result{Trace: engineTraceAt(base)}
			rerr := c.readStream(context.Background(), &scheduledReader{clk: clk, base: base, writes: r.writes}, nil, engine.Request{MaxTokens: r.maxTokens}, &res)
			checkReplay(t, r, res, rerr, base, time.Millisecond, true)
			if len(res.Warnings) != 0 {
				t.Errorf("warnings %v, want none: the stream states every count", res.Warnings)
			}
		})
	}
	if seen == 0 {
		t.Fatal("no replay has a re-count")
	}
}
