package benchkit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
)

// TestRequestCarriesIDs: a row keeps the id the client sent, the one the
// server echoed, the times the request was resent and the model the
// server answered as (when it is not the one asked), and its JSON says
// them; a row without them leaves their keys out.
func TestRequestCarriesIDs(t *testing.T) {
	res := engine.Result{RequestID: "ib-1", ServerRequestID: "ib-1", ResponseID: "chatcmpl-ib-1", Resent: 2, Model: "served.gguf"}
	r := NewRequest(Request{Model: "asked"}, promptsize.Prompt{}, concurrency.Result[engine.Result]{Value: res}, true)
	if r.RequestID != "ib-1" || r.ServerRequestID != "ib-1" || r.Resent != 2 || r.ServedModel != "served.gguf" || r.ResponseID != "chatcmpl-ib-1" {
		t.Errorf("row %+v: want the result's ids, resent 2 and served model served.gguf", r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"request_id":"ib-1"`, `"server_request_id":"ib-1"`, `"resent":2`, `"served_model":"served.gguf"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
	r = NewRequest(Request{Model: "asked"}, promptsize.Prompt{}, concurrency.Result[engine.Result]{Value: engine.Result{Model: "asked"}}, true)
	b, _ = json.Marshal(r)
	for _, absent := range []string{"request_id", "resent", "served_model"} {
		if strings.Contains(string(b), `"`+absent+`"`) {
			t.Errorf("JSON %s has %s, want it left out", b, absent)
		}
	}
}
