package hostile

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/internal/testkit"
)

func TestServerRecordsRequests(t *testing.T) {
	s := New(t, SSE(false, `{"a":1}`))
	req, _ := http.NewRequest("POST", s.URL+"/v1/x?q=1", strings.NewReader("body"))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := testkit.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := string(b), "data: {\"a\":1}\n\ndata: [DONE]\n\n"; got != want {
		t.Errorf("body %q, want %q", got, want)
	}
	rs := s.Requests()
	if len(rs) != 1 || rs[0].Path != "/v1/x?q=1" || string(rs[0].Body) != "body" || rs[0].Header.Get("Authorization") != "Bearer k" {
		t.Errorf("recorded %+v", rs)
	}
}
