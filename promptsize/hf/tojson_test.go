package hf

import (
	"testing"

	"github.com/ardanlabs/jinja"
)

// TestTojsonIndent checks the replacement of tojson(indent=N) against
// output written out by hand in @huggingface/jinja's form: key order kept,
// "," and a newline between items, no HTML escaping, empty containers
// closed on their line.
func TestTojsonIndent(t *testing.T) {
	tmpl, err := ParseChatTemplate(`{{ tools | tojson(indent=2) }}|{{ tools | tojson }}|{{ x | tojson(indent = 1, separators=(";", "=")) }}`, SpecialTokens{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(nil, RenderOptions{
		Tools: []byte(`[{"zeta": "<a&b>", "alpha": [1, 2.5, null, true], "empty": {}, "none": []}]`),
		Vars:  map[string]any{"x": []any{"a"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `[
  {
    "zeta": "<a&b>",
    "alpha": [
      1,
      2.5,
      null,
      true
    ],
    "empty": {},
    "none": []
  }
]|[{"zeta": "<a&b>", "alpha": [1, 2.5, null, true], "empty": {}, "none": []}]|[
 "a"
]`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if _, err := tojsonIndent([]jinja.Value{jinja.NewFloat(1)}, map[string]jinja.Value{"indent": jinja.NewInt(-1)}); err == nil {
		t.Error("indent=-1 accepted")
	}
}
