package promptsize_test

import (
	"math/rand/v2"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
)

func TestNewNonce(t *testing.T) {
	a := promptsize.NewNonce(rand.NewPCG(7, 7))
	if b := promptsize.NewNonce(rand.NewPCG(7, 7)); a != b {
		t.Errorf("same seed gave %q and %q; a seeded nonce must reproduce", a, b)
	}
	if len(a) != promptsize.NonceLen || a[0] < 'a' || a[0] > 'z' {
		t.Errorf("nonce %q: want %d characters starting with a letter", a, promptsize.NonceLen)
	}
	seen := map[string]bool{}
	for range 64 {
		n := promptsize.NewNonce(nil)
		if seen[n] {
			t.Fatalf("random nonce %q drawn twice in 64 draws", n)
		}
		seen[n] = true
	}
}

func TestRunSalt(t *testing.T) {
	seen := map[string]bool{}
	for _, nonce := range []string{"abc", "abd"} {
		for run := range 3 {
			for i := range 40 {
				s := promptsize.RunSalt(nonce, run, i)
				if seen[s] {
					t.Fatalf("salt %q repeated", s)
				}
				seen[s] = true
			}
		}
	}
	if got := promptsize.RunSalt("k3f9x2ab", 0, 51); got != "51#0.k3f9x2ab" {
		t.Errorf("RunSalt = %q, want 51#0.k3f9x2ab", got)
	}
	if got := promptsize.RunSalt("", 4, 2); got != promptsize.Salt(2) {
		t.Errorf("RunSalt without a nonce = %q, want Salt(2) %q", got, promptsize.Salt(2))
	}
}
