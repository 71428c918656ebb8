package openai

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/inferbench/inferbench/engine"
)

// TestConnectOnlyWhenDialed: Result.Connect is set on the request that
// opened its connection and nil on one that found it in the pool or
// prewarmed; against a server that closes every connection after one
// response, every request dials. Trace.Start comes after the dial, so
// Start − Connect is the moment the request asked for a connection.
func TestConnectOnlyWhenDialed(t *testing.T) {
	req := engine.Request{Model: "m", MaxTokens: 8}
	for _, tc := range []struct {
		name      string
		keepAlive bool
		prewarm   bool
		want      []bool // Connect set, request by request
	}{
		{"pooled", true, false, []bool{true, false, false}},
		{"prewarmed", true, true, []bool{false, false}},
		{"server closes", false, true, []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(&recorded{ctype: "application/json", body: readTestdata(t, "vllm_nonstream.json")})
			srv.Config.SetKeepAlivesEnabled(tc.keepAlive)
			srv.Start()
			t.Cleanup(srv.Close)
			c := newClient(t, srv.URL, nil)
			if tc.prewarm {
				if err := c.Prewarm(context.Background(), 1); err != nil {
					t.Fatal(err)
				}
			}
			for i, want := range tc.want {
				res, err := c.Complete(context.Background(), req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if got := res.Connect != nil; got != want {
					t.Errorf("request %d: Connect %v, want set %v", i, res.Connect, want)
				}
				if res.Connect != nil && *res.Connect < 0 {
					t.Errorf("request %d: Connect %v is negative", i, *res.Connect)
				}
			}
		})
	}
}
