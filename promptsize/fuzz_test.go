package promptsize_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/promptsize"
)

// FuzzBuildCorpus cuts prompts from arbitrary caller corpora (outside
// input): every build is exact, or fails with one of the documented errors.
func FuzzBuildCorpus(f *testing.F) {
	f.Add("The quick brown fox jumps over the lazy dog.", uint16(60), "")
	f.Add("a", uint16(40), "#1")
	f.Add("  lots   of\n\n\nspace\t\there  ", uint16(100), "")
	f.Add("数字 123456789 ünïcödé — emoji 👩‍👩‍👧 done.", uint16(90), "#Z")
	f.Add("no-spaces-at-all-just-one-long-token-ish-thing", uint16(70), "")
	f.Add("\xff\xfe invalid utf8 \xc3", uint16(50), "")
	f.Add(" \n\t", uint16(30), "")
	f.Fuzz(func(t *testing.T, corpus string, target uint16, salt string) {
		c := newMerging()
		b := &promptsize.Builder{Counter: c, Fill: promptsize.FillCorpus, Corpus: corpus}
		pp := int(target % 600)
		p, err := b.BuildSalted(context.Background(), pp, salt)
		if err != nil {
			if errors.Is(err, promptsize.ErrBelowOverhead) || errors.Is(err, promptsize.ErrUnreachable) {
				return
			}
			if strings.TrimSpace(corpus) == "" && strings.Contains(err.Error(), "no words") {
				return
			}
			if strings.Contains(err.Error(), "gave up after") {
				return
			}
			t.Fatalf("pp=%d: unexpected error %v", pp, err)
		}
		got, _ := c.Count(context.Background(), p.Messages)
		if got != pp || p.Tokens != pp {
			t.Fatalf("pp=%d: counted %d, Tokens %d", pp, got, p.Tokens)
		}
		if !strings.HasPrefix(p.Content, salt) {
			t.Fatalf("content %q does not start with salt %q", p.Content, salt)
		}
	})
}
