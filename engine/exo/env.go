package exo

import (
	"fmt"
	"os"
	"strconv"
)

// The environment variables exo's own benchmark scripts read for the
// cluster's address.
const (
	EnvHost = "EXO_HOST"
	EnvPort = "EXO_PORT"
)

// AddrFromEnv returns the host and port the environment names for the
// cluster, as exo's scripts read them: EXO_HOST ("" when unset) and
// EXO_PORT (DefaultPort when unset). A port that is not a number in
// 1–65535 is an error naming it.
func AddrFromEnv() (host string, port int, err error) {
	host, port = os.Getenv(EnvHost), DefaultPort
	if p := os.Getenv(EnvPort); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return host, DefaultPort, fmt.Errorf("exo: %s=%q is not a port number", EnvPort, p)
		}
		port = n
	}
	return host, port, nil
}
