//go:build hftokenizers

package hfcgo

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// The parity tests use the goldens of package hf (written by
// scripts/node/goldens.mjs) and the tokenizer files of scripts/testdata.sh.

const goldenDir = "../hf/testdata"

var models = []string{"qwen3", "llama3_1", "gptoss", "gemma3", "deepseek_v3"}

func modelDir(t *testing.T, model string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "models", model)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		testkit.MissingData(t, fmt.Sprintf("tokenizer files for %s are missing (%v): run scripts/testdata.sh", model, err))
	}
	return dir
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	f, err := os.Open(filepath.Join(goldenDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	if err := json.NewDecoder(r).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func firstDiff(got, want []int) string {
	if cmp.Equal(got, want) {
		return ""
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Sprintf("ids differ at position %d (got %d ids, want %d)", i, len(got), len(want))
}

func TestParity(t *testing.T) {
	var in struct {
		Date  string              `json:"date"`
		Texts [][2]string         `json:"texts"`
		Fuzz  []string            `json:"fuzz"`
		Chats [][]json.RawMessage `json:"chats"`
	}
	readJSON(t, "inputs.json", &in)
	date, err := time.Parse("2006-01-02", in.Date)
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range models {
		t.Run(model, func(t *testing.T) {
			dir := modelDir(t, model)
			var g struct {
				Texts map[string][]int `json:"texts"`
				Fuzz  [][]int          `json:"fuzz"`
				Chats map[string][]struct {
					Name     string `json:"name"`
					Rendered string `json:"rendered"`
					IDs      []int  `json:"ids"`
				} `json:"chats"`
			}
			readJSON(t, model+".json.gz", &g)
			var opts []Option
			if model == "gptoss" {
				out, err := testkit.Command(t, testkit.Patience, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/ardanlabs/jinja").Output()
				if err != nil {
					t.Fatal(err)
				}
				src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "testdata", "templates", "gpt-oss-20b-Q8_0.jinja"))
				if err != nil {
					t.Fatal(err)
				}
				special, err := hf.LoadSpecialTokens(dir)
				if err != nil {
					t.Fatal(err)
				}
				ct, err := hf.ParseChatTemplate(string(src), special)
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, WithChatTemplate(ct))
			}
			c, err := Load(dir, append(opts, WithRenderOptions(hf.RenderOptions{Date: date}))...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, nt := range in.Texts {
				if d := firstDiff(c.Encode(nt[1]), g.Texts[nt[0]]); d != "" {
					t.Errorf("text %s: %s", nt[0], d)
				}
			}
			for i, s := range in.Fuzz {
				if d := firstDiff(c.Encode(s), g.Fuzz[i]); d != "" {
					t.Errorf("fuzz[%d] %q: %s", i, s, d)
				}
			}
			for i, gc := range g.Chats[model] {
				var msgs []promptsize.Message
				if err := json.Unmarshal(in.Chats[i][1], &msgs); err != nil {
					t.Fatal(err)
				}
				if string(in.Chats[i][2]) != "null" {
					continue
				}
				n, err := c.Count(t.Context(), msgs)
				if err != nil || n != len(gc.IDs) {
					t.Errorf("chat %s: Count = %d, %v; want %d", gc.Name, n, err, len(gc.IDs))
				}
			}
		})
	}
}
