package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestProbeServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "uvicorn")
		if r.URL.Path != "/version" || r.Header.Get("Authorization") != "Bearer k" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"version":"0.9.1"}`))
	}))
	defer srv.Close()
	got := ProbeServer(context.Background(), nil, srv.URL+"/", http.Header{"Authorization": {"Bearer k"}}, 5e9)
	if got.Header != "uvicorn" || got.Version != "0.9.1" {
		t.Errorf("ProbeServer = %+v, want uvicorn 0.9.1", got)
	}
	if got := ProbeServer(context.Background(), nil, srv.URL, nil, 5e9); got.Version != "" || got.Header != "uvicorn" {
		t.Errorf("a 404: %+v, want the Server header and no version", got)
	}
}
