package disagg

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/benchkit"
)

func TestWriteTable(t *testing.T) {
	yes, no := true, false
	doc := NewDocument(Meta{RunInfo: benchkit.RunInfo{Simulated: true, Preset: "fast"}, Prefill: "P", Decode: "D"}, Result{
		Requests: []benchkit.Request{
			disaggRow(PhaseDisaggregated, 1.0, 0.2, 10000, 50),
			disaggRow(PhaseDecodeAlone, 2.0, 0.4, 5000, 50),
		},
		Phases: []PhaseReport{
			{Phase: PhaseDisaggregated, Check: &PrefillCheck{Reported: true, OK: &no, Note: "ran locally"}},
			{Phase: PhaseDecodeAlone, Check: &PrefillCheck{Reported: true, OK: &yes, Note: "fine"}},
		},
		LinkID: "L", Warnings: []string{"w1"},
	})
	for _, md := range []bool{false, true} {
		var b bytes.Buffer
		if err := WriteTable(&b, doc, md); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, want := range []string{"SIMULATED (fast)", "link:    L", "pp=2048 tg=16 concurrency=1", "decode_alone", "2.00x",
			"disaggregated: WRONG: ran locally", "decode_alone: ok: fine", "w1"} {
			if !strings.Contains(out, want) {
				t.Errorf("markdown=%v: output lacks %q:\n%s", md, want, out)
			}
		}
		if md && !strings.Contains(out, "| phase | requests |") {
			t.Errorf("not a Markdown table:\n%s", out)
		}
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, doc); err != nil {
		t.Fatal(err)
	}
	var back Document
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(doc.Comparison, back.Comparison); diff != "" || back.Runs[0].Phase != PhaseDisaggregated || back.Runs[0].PPTokens != 2048 {
		t.Errorf("JSON round trip: %s %+v", diff, back.Runs[0])
	}
}
