package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// renderDate pins strftime_now, as the package's tests do.
var renderDate = time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)

// loadModel loads a model of cfg.modelsDir. gpt-oss's npm files ship no
// chat template; the official harmony template is taken from the
// ardanlabs/jinja module in the module cache, as promptsize's tests do. It
// returns a reason to skip when the files are missing.
func loadModel(ctx context.Context, cfg config, model string, needTemplate bool) (*hf.Tokenizer, string, error) {
	dir := filepath.Join(cfg.modelsDir, model)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		return nil, fmt.Sprintf("%s: tokenizer files missing in %s (run scripts/testdata.sh)", model, dir), nil
	}
	opts := []hf.Option{hf.WithRenderOptions(hf.RenderOptions{Date: renderDate})}
	if model == "gptoss" && needTemplate {
		out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/ardanlabs/jinja").Output()
		if err != nil {
			return nil, fmt.Sprintf("gptoss: its chat template comes from the ardanlabs/jinja module, which go list could not locate (%v)", err), nil
		}
		opts = append(opts, hf.WithChatTemplateFile(filepath.Join(strings.TrimSpace(string(out)), "testdata", "templates", "gpt-oss-20b-Q8_0.jinja")))
	}
	tok, err := hf.Load(dir, opts...)
	return tok, "", err
}

// callCounter counts the calls made to a Counter.
type callCounter struct {
	c promptsize.Counter
	n atomic.Int64
}

func (c *callCounter) Count(ctx context.Context, m []promptsize.Message) (int, error) {
	c.n.Add(1)
	return c.c.Count(ctx, m)
}

// runPrompt builds exact prompts with a fresh Builder (nothing cached or
// remembered) and with exo's method, on the same tokenizer, and compares
// counter calls and time.
func runPrompt(ctx context.Context, cfg config, rep *report) error {
	for _, model := range cfg.models {
		tok, skip, err := loadModel(ctx, cfg, model, true)
		if err != nil {
			return fmt.Errorf("%s: %w", model, err)
		}
		if skip != "" {
			rep.skip("prompt %s", skip)
			continue
		}
		// One count first, so that compiling the template and filling the
		// first pieces are not charged to whichever method runs first.
		if _, err := tok.Count(ctx, []promptsize.Message{{Role: "user", Content: "warm up"}}); err != nil {
			return fmt.Errorf("%s: %w", model, err)
		}
		for _, pp := range cfg.promptPPs {
			if err := ctx.Err(); err != nil {
				return err
			}
			cc := &callCounter{c: tok}
			b := &promptsize.Builder{Counter: cc}
			t0 := time.Now()
			p, err := b.Build(ctx, pp)
			took := time.Since(t0)
			if err != nil {
				rep.skip("prompt %s pp=%d: Builder failed: %v", model, pp, err)
				continue
			}
			calls := cc.n.Load()
			n, err := tok.Count(ctx, p.Messages) // verified outside the timing
			if err != nil {
				return err
			}
			exact := n == pp

			ec := &callCounter{c: tok}
			t0 = time.Now()
			_, exoErr := promptsize.ExoSearch(ctx, ec, pp, "a ")
			exoTook := time.Since(t0)
			exoCalls := ec.n.Load()

			name := fmt.Sprintf("%s pp=%d Builder", model, pp)
			callRow := Row{Section: "prompt", Name: name + ", tokenizer calls", Value: float64(calls), Unit: "calls",
				Ref: ptr(float64(exoCalls)), RefName: "exo", Ratio: ptr(float64(calls) / float64(exoCalls))}
			timeRow := Row{Section: "prompt", Name: name + ", time", Value: float64(took), Unit: "ns",
				Ref: ptr(float64(exoTook)), RefName: "exo", Ratio: ptr(float64(took) / float64(exoTook))}
			if !exact {
				timeRow.Note = fmt.Sprintf("NOT EXACT: the tokenizer counts %d tokens", n)
			}
			if exoErr != nil {
				callRow.Note = fmt.Sprintf("exo's method failed after %d calls: %v", exoCalls, exoErr)
			}
			if pp == 32768 {
				callRow.Target, callRow.Met = target("≤ ½ exo's", 2*calls <= exoCalls)
				timeRow.Target, timeRow.Met = target("exact, < 1s", exact && took < time.Second)
			}
			rep.add(callRow)
			rep.add(timeRow)
		}
	}
	return nil
}

// tokenizerText returns a text of exactly size bytes (cut at a rune
// boundary): the mixed golden corpus of promptsize/hf (English, Chinese,
// code) when it is there, then the Builder's prose.
func tokenizerText(size int) string {
	var b strings.Builder
	if f, err := os.Open(filepath.Join("promptsize", "hf", "testdata", "corpus.txt.gz")); err == nil {
		if zr, err := gzip.NewReader(f); err == nil {
			io.Copy(&b, zr)
		}
		f.Close()
	}
	if b.Len() < size {
		b.WriteString(promptsize.Prose(size - b.Len()))
	}
	s := b.String()[:size]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// runTokenizer encodes the same text with promptsize/hf, with Hugging
// Face's Rust tokenizers library (npm tokenizers@0.23.2, what vLLM and
// SGLang count with: the reference, scripts/node/speed_rust.mjs) and with
// transformers.js (@lenml/tokenizers, scripts/node/speed.mjs), each with a
// fresh tokenizer (cold: empty caches; the scripts time one cold encode) and
// again (warm: best of further runs). Each row's reference is the Rust
// library; the target of issue 11 is stated against transformers.js, whose
// figure is in the note.
func runTokenizer(ctx context.Context, cfg config, rep *report) error {
	text := tokenizerText(cfg.tokBytes)
	rust, rustErr := nodeSpeed(ctx, cfg, text, "speed_rust.mjs")
	if rustErr != nil {
		rep.skip("tokenizer: Hugging Face's Rust tokenizers: %v", rustErr)
	}
	node, nodeErr := nodeSpeed(ctx, cfg, text, "speed.mjs")
	if nodeErr != nil {
		rep.skip("tokenizer: JavaScript reference: %v", nodeErr)
	}
	for _, model := range cfg.models {
		// cold: a fresh tokenizer's first encode, the fastest of three
		// fresh loads (one load's first encode is easily disturbed on a
		// shared machine); warm: the fastest of three more encodes.
		var tok *hf.Tokenizer
		var n int
		cold, warm := time.Duration(1<<63-1), time.Duration(1<<63-1)
		skip := ""
		for range 3 {
			var err error
			tok, skip, err = loadModel(ctx, cfg, model, false)
			if err != nil {
				return fmt.Errorf("%s: %w", model, err)
			}
			if skip != "" {
				break
			}
			t0 := time.Now()
			n = tok.CountText(text)
			cold = min(cold, time.Since(t0))
		}
		if skip != "" {
			rep.skip("tokenizer %s", skip)
			continue
		}
		for range 3 {
			t0 := time.Now()
			tok.CountText(text)
			warm = min(warm, time.Since(t0))
		}
		for _, m := range []struct {
			mode string
			d    time.Duration
		}{{"cold", cold}, {"warm", warm}} {
			v := float64(n) / m.d.Seconds()
			row := Row{Section: "tokenizer", Name: fmt.Sprintf("%s %s, %d bytes → %d tokens", model, m.mode, len(text), n), Value: v, Unit: "tok/s"}
			var notes []string
			if rs, ok := rust[model]; ok {
				ref := rs.pick(m.mode)
				row.Ref, row.RefName, row.Ratio = ptr(ref), "HF Rust", ptr(v/ref)
				if rs.tokens != n {
					notes = append(notes, fmt.Sprintf("the Rust library made %d tokens of the same text", rs.tokens))
				}
			}
			if js, ok := node[model]; ok {
				ref := js.pick(m.mode)
				if row.Ref == nil {
					row.Ref, row.RefName, row.Ratio = ptr(ref), "node", ptr(v/ref)
				} else {
					notes = append(notes, fmt.Sprintf("transformers.js %s tok/s (%.3g×)", siTok(ref), v/ref))
				}
				row.Target, row.Met = target("≥ 2× node", v >= 2*ref)
				if js.tokens != n {
					notes = append(notes, fmt.Sprintf("the JavaScript reference made %d tokens of the same text", js.tokens))
				}
			}
			row.Note = strings.Join(notes, "; ")
			rep.add(row)
		}
	}
	return nil
}

// jsSpeed is one model's line of speed.mjs or speed_rust.mjs.
type jsSpeed struct {
	tokens     int
	cold, warm float64 // tok/s
}

// pick returns the cold or the warm figure.
func (s jsSpeed) pick(mode string) float64 {
	if mode == "warm" {
		return s.warm
	}
	return s.cold
}

// siTok formats tokens/s as the table does: 410k, 1.23M.
func siTok(v float64) string {
	if v >= 1e6 {
		return fmt.Sprintf("%.3gM", v/1e6)
	}
	return fmt.Sprintf("%.3gk", v/1e3)
}

// nodeSpeed runs a speed script of scripts/node (speed.mjs or
// speed_rust.mjs) on text (written gzipped to a temporary file) and parses
// its lines:
//
//	qwen3	262144 tokens	cold 410k tok/s	warm 1234k tok/s
func nodeSpeed(ctx context.Context, cfg config, text, script string) (map[string]jsSpeed, error) {
	if cfg.quick {
		return nil, errors.New("not run in -quick mode")
	}
	if _, err := exec.LookPath("node"); err != nil {
		return nil, fmt.Errorf("node is not installed: %w", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.nodeDir, "node_modules")); err != nil {
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = cfg.nodeDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s/node_modules is missing and npm ci failed: %w\n%s", cfg.nodeDir, err, out)
		}
	}
	f, err := os.CreateTemp("", "perf-text-*.txt.gz")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	zw := gzip.NewWriter(f)
	zw.Write([]byte(text))
	if err := errors.Join(zw.Close(), f.Close()); err != nil {
		return nil, err
	}
	models, err := filepath.Abs(cfg.modelsDir)
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", script, models, f.Name())
	cmd.Dir = cfg.nodeDir
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("node %s: %w: %s", script, err, stderr.Bytes())
	}
	return parseSpeed(out)
}

// parseSpeed reads speed.mjs's output.
func parseSpeed(out []byte) (map[string]jsSpeed, error) {
	res := map[string]jsSpeed{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("speed.mjs line %q: expected 4 tab-separated fields", line)
		}
		var s jsSpeed
		var err1, err2, err3 error
		s.tokens, err1 = strconv.Atoi(strings.TrimSuffix(f[1], " tokens"))
		s.cold, err2 = kTokPerSec(f[2], "cold ")
		s.warm, err3 = kTokPerSec(f[3], "warm ")
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("speed.mjs line %q: %w", line, err)
		}
		res[f[0]] = s
	}
	return res, nil
}

// kTokPerSec parses "cold 410k tok/s" into 410000.
func kTokPerSec(field, prefix string) (float64, error) {
	s, ok := strings.CutPrefix(field, prefix)
	s, ok2 := strings.CutSuffix(s, "k tok/s")
	if !ok || !ok2 {
		return 0, fmt.Errorf("expected %q…k tok/s, found %q", prefix, field)
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * 1e3, err
}
