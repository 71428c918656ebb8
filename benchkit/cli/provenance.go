package cli

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/promptsize"
)

// ProbeServer asks a server about itself: GET base+"/version" (vLLM's and
// SGLang's version endpoint) with header, bounded by timeout, keeping the
// Server header of the answer and its "version". A server that answers
// nothing useful gives an empty benchkit.ServerInfo, never an error: provenance is
// best effort and no reason to stop a run. The answer is read up to
// 64 KiB.
func ProbeServer(ctx context.Context, client *http.Client, base string, header http.Header, timeout time.Duration) benchkit.ServerInfo {
	var si benchkit.ServerInfo
	if client == nil {
		// No redirect is followed: the header may carry a key.
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/version", nil)
	if err != nil {
		return si
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return si
	}
	defer resp.Body.Close()
	si.Header = printable(resp.Header.Get("Server"))
	if resp.StatusCode != http.StatusOK {
		return si
	}
	var v struct {
		Version json.RawMessage `json:"version"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &v) == nil && len(v.Version) > 0 {
		var s string
		if json.Unmarshal(v.Version, &s) != nil {
			s = string(v.Version)
		}
		si.Version = printable(s)
	}
	return si
}

// printable keeps at most 200 printable ASCII characters of an untrusted
// string.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 200 {
			break
		}
		if r >= 0x20 && r < 0x7f {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ExoNodes returns the node identities of an exo cluster snapshot (the
// keys of /state's nodeIdentities, sorted), for benchkit.ServerInfo.Nodes; none
// when the snapshot has no such map.
func ExoNodes(cluster json.RawMessage) []string {
	var st struct {
		NodeIdentities map[string]json.RawMessage `json:"nodeIdentities"`
	}
	if json.Unmarshal(cluster, &st) != nil {
		return nil
	}
	ids := make([]string, 0, len(st.NodeIdentities))
	for id := range st.NodeIdentities {
		ids = append(ids, printable(id))
	}
	slices.Sort(ids)
	return ids
}

// RunNonce returns an invocation's run nonce (promptsize.NewNonce): drawn
// from seed when seeded is true (the command's --seed was given), so that
// the run's prompts can be reproduced, else from the operating system's
// random source, so that no two invocations send a common prompt.
func RunNonce(seed uint64, seeded bool) string {
	if !seeded {
		return promptsize.NewNonce(nil)
	}
	return promptsize.NewNonce(rand.NewPCG(seed, 0x6e6f6e6365)) // "nonce"
}
