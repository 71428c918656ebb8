package exo

import (
	"strings"
	"testing"
)

func TestAddrFromEnv(t *testing.T) {
	t.Setenv(EnvHost, "")
	t.Setenv(EnvPort, "")
	if h, p, err := AddrFromEnv(); h != "" || p != DefaultPort || err != nil {
		t.Errorf("unset: %q %d %v, want \"\" %d nil", h, p, err, DefaultPort)
	}
	t.Setenv(EnvHost, "10.0.0.5")
	t.Setenv(EnvPort, "8000")
	if h, p, err := AddrFromEnv(); h != "10.0.0.5" || p != 8000 || err != nil {
		t.Errorf("set: %q %d %v", h, p, err)
	}
	for _, bad := range []string{"x", "0", "70000"} {
		t.Setenv(EnvPort, bad)
		if _, _, err := AddrFromEnv(); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("EXO_PORT=%s: %v, want an error naming it", bad, err)
		}
	}
}
