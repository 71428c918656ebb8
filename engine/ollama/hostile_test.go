package ollama

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
)

// endless is a reader of an endless line: n bytes of 'x' per Read, with
// no newline ever, counting what it gave.
type endless struct{ given int }

func (e *endless) Read(p []byte) (int, error) {
	n := min(len(p), 4096)
	for i := range n {
		p[i] = 'x'
	}
	e.given += n
	return n, nil
}

// TestEndlessLine: a line without an end is refused once it passes
// MaxLineBytes, having read no more than that and one read.
func TestEndlessLine(t *testing.T) {
	const max = 64 << 10
	c := newClient(t, "http://127.0.0.1:9", &Options{MaxLineBytes: max, Now: adaptertest.NewStepClock().Now})
	src := &endless{}
	var res engine.Result
	err := c.readStream(context.Background(), src, nil, engine.Request{MaxTokens: 8, Stream: true}, &res)
	if engine.KindOf(err) != engine.KindMalformed || !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("error %v, want kind malformed wrapping ErrLineTooLong", err)
	}
	if src.given > max+4096 {
		t.Errorf("read %d bytes of the line, want at most MaxLineBytes (%d) and one read", src.given, max)
	}
}

const (
	okLine   = `{"model":"m","created_at":"2025-04-08T10:00:00Z","message":{"role":"assistant","content":"a"},"done":false}` + "\n"
	doneHead = `{"model":"m","created_at":"2025-04-08T10:00:01Z","message":{"role":"assistant","content":""},"done_reason":"length","done":true`
)

// doneLine is a final object with the given metric members.
func doneLine(metrics string) string { return doneHead + metrics + "}\n" }

// TestHostileStreams: counts, durations and lines no Ollama writes end
// the request with a typed error, and a result that keeps nothing
// untrusted.
func TestHostileStreams(t *testing.T) {
	good := `,"prompt_eval_count":5,"prompt_eval_duration":1000000,"eval_count":1,"eval_duration":1000000`
	cases := []struct {
		name string
		body string
		max  int
		kind engine.Kind
	}{
		{"huge eval_count", okLine + doneLine(`,"prompt_eval_count":5,"eval_count":1000000000000`), 8, engine.KindImplausibleUsage},
		{"eval_count past int64", okLine + doneLine(`,"eval_count":1e30`), 8, engine.KindMalformed},
		{"eval_count beyond max_tokens", okLine + doneLine(`,"prompt_eval_count":5,"eval_count":100`), 8, engine.KindImplausibleUsage},
		{"negative eval_count", okLine + doneLine(`,"prompt_eval_count":5,"eval_count":-1`), 8, engine.KindImplausibleUsage},
		{"huge prompt_eval_count", okLine + doneLine(`,"prompt_eval_count":99999999,"eval_count":1`), 8, engine.KindImplausibleUsage},
		{"negative duration", okLine + doneLine(good+`,"total_duration":-5`), 8, engine.KindImplausibleUsage},
		{"duration over a week", okLine + doneLine(good+`,"load_duration":9000000000000000000`), 8, engine.KindImplausibleUsage},
		{"NaN duration", okLine + doneLine(good+`,"eval_duration":NaN`), 8, engine.KindMalformed},
		{"fractional duration", okLine + doneLine(good+`,"total_duration":1.5`), 8, engine.KindMalformed},
		{"string duration", okLine + doneLine(good+`,"total_duration":"1s"`), 8, engine.KindMalformed},
		{"decode rate beyond any machine", okLine + okLine + doneLine(`,"prompt_eval_count":5,"eval_count":2,"eval_duration":1`), 8, engine.KindImplausibleUsage},
		{"not JSON", okLine + "data: {\"x\":1}\n", 8, engine.KindMalformed},
		{"null", "null\n", 8, engine.KindMalformed},
		{"array", "[1,2,3]\n", 8, engine.KindMalformed},
		{"binary", "\x00\x01\x02\xff\n", 8, engine.KindMalformed},
		{"more lines than tokens could be", strings.Repeat(okLine, 100) + doneLine(good), 4, engine.KindImplausibleUsage},
		{"more text than tokens could be", `{"message":{"content":"` + strings.Repeat("y", 100<<10) + `"}}` + "\n", 4, engine.KindImplausibleUsage},
		{"error object", okLine + `{"error":{"message":"boom"}}` + "\n", 8, engine.KindStreamError},
		{"nothing", "", 8, engine.KindTruncated},
		{"no final object", strings.Repeat(okLine, 3), 8, engine.KindTruncated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := parseRecorded(t, []byte(tc.body), engine.Request{MaxTokens: tc.max, Stream: true})
			if engine.KindOf(err) != tc.kind {
				t.Fatalf("error %v (kind %q), want kind %q", err, engine.KindOf(err), tc.kind)
			}
			if tc.kind == engine.KindImplausibleUsage && (res.Trace.Chunks != nil || res.Usage != nil || res.ServerStats != nil) {
				t.Errorf("an implausible answer kept chunks %v, usage %+v, stats %+v", res.Trace.Chunks, res.Usage, res.ServerStats)
			}
			if len(res.Text) > engine.MaxKeptText {
				t.Errorf("kept %d bytes of text", len(res.Text))
			}
		})
	}
}

// TestPromptRateFromCache: a prompt whose count (cached tokens included)
// over its duration passes any real prefill rate is not an error: the
// rate is 0, with a warning.
func TestPromptRateFromCache(t *testing.T) {
	msgs := []engine.Message{{Role: "user", Content: strings.Repeat("word ", 20000)}}
	body := okLine + doneLine(`,"prompt_eval_count":20000,"prompt_eval_duration":1000,"eval_count":1,"eval_duration":1000000`)
	res, _, err := parseRecorded(t, []byte(body), engine.Request{MaxTokens: 8, Stream: true, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if res.ServerStats == nil || res.ServerStats.PromptTPS != 0 || len(res.Warnings) != 1 || !errors.Is(res.Warnings[0], ErrPromptRate) {
		t.Fatalf("stats %+v, warnings %v: want PromptTPS 0 and one warning wrapping ErrPromptRate", res.ServerStats, res.Warnings)
	}
}

// TestHugeTextKept: text beyond engine.MaxKeptText that the token bound
// allows is cut in Result.Text, with a warning, and counted whole.
func TestHugeTextKept(t *testing.T) {
	line := `{"message":{"content":"` + strings.Repeat("z", 1000) + `"}}` + "\n"
	n := engine.MaxKeptText/1000 + 10
	var b bytes.Buffer
	for range n {
		b.WriteString(line)
	}
	b.WriteString(doneLine(fmt.Sprintf(`,"prompt_eval_count":5,"eval_count":%d`, n)))
	res, _, err := parseRecorded(t, b.Bytes(), engine.Request{MaxTokens: n, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Text) != engine.MaxKeptText || len(res.Trace.Chunks) != n || len(res.Warnings) != 1 || !errors.Is(res.Warnings[0], ErrTextCut) {
		t.Errorf("kept %d bytes in %d chunks, warnings %v", len(res.Text), len(res.Trace.Chunks), res.Warnings)
	}
}
