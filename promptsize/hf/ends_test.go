package hf

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestTokenEnds checks, for every golden model and text (and the corpus),
// that TokenEnds gives one end per token of Encode, in order, and that
// each token's bytes in the text are the token's own: the text between
// two ends decodes from that token alone, for the byte-level models on
// text their normalizer leaves unchanged.
func TestTokenEnds(t *testing.T) {
	in := readInputs(t)
	corpus := readCorpus(t)
	ctx := context.Background()
	for _, model := range goldenModels {
		t.Run(model, func(t *testing.T) {
			modelDir(t, model)
			tok := loadShared(t, model)
			g := readGolden(t, model)
			texts := []string{corpus[:min(len(corpus), 20000)], g.SpecialText}
			for _, nt := range in.Texts {
				texts = append(texts, nt[1])
			}
			texts = append(texts, in.Fuzz...)
			checked := 0
			for _, text := range texts {
				ids := tok.Encode(text)
				ends, err := tok.TokenEnds(ctx, text, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(ends) != len(ids) {
					t.Errorf("%q: %d ends for %d tokens", truncate(text, 60), len(ends), len(ids))
					continue
				}
				prev := 0
				for i, e := range ends {
					if e < prev || e > len(text) {
						t.Errorf("%q: token %d ends at %d, after %d, text of %d bytes", truncate(text, 60), i, e, prev, len(text))
						break
					}
					prev = e
				}
				if len(ends) > 0 && ends[len(ends)-1] != len(text) && tok.Decode(ids) == text {
					t.Errorf("%q: the last token ends at %d of %d", truncate(text, 60), ends[len(ends)-1], len(text))
				}
				if tok.model.byteLevel && tok.norm.apply(text) == text {
					prev = 0
					for i, e := range ends {
						if got, want := text[prev:e], tok.Decode(ids[i:i+1]); got != want {
							t.Errorf("%q: token %d (%d) covers %q, decodes to %q", truncate(text, 60), i, ids[i], got, want)
							break
						}
						prev = e
					}
				}
				checked++
			}
			if checked == 0 {
				t.Fatal("no text checked")
			}
		})
	}
}

// TestTokenEndsGemmaMapping checks the offsets through Gemma's Replace
// normalizer (" " becomes "▁", three bytes) on a text whose tokens are
// known: every end falls on a word's end in the original text.
func TestTokenEndsGemmaMapping(t *testing.T) {
	modelDir(t, "gemma3")
	tok := loadShared(t, "gemma3")
	text := "The cat sat on the mat."
	ends, err := tok.TokenEnds(context.Background(), text, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(text)
	if len(ends) != len(ids) {
		t.Fatalf("%d ends for %d tokens", len(ends), len(ids))
	}
	prev := 0
	for i, e := range ends {
		if got, want := text[prev:e], tok.Decode(ids[i:i+1]); got != want {
			t.Errorf("token %d (%d) covers %q, decodes to %q", i, ids[i], got, want)
		}
		prev = e
	}
}

func TestTokenEndsStopsAtContext(t *testing.T) {
	modelDir(t, "qwen3")
	tok := loadShared(t, "qwen3")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tok.TokenEnds(ctx, "some text", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("TokenEnds on an ended context: %v, expected context.Canceled", err)
	}
}

// TestTokenEndsAfterNormalForm checks that a character Qwen's NFC
// normalizer rewrites moves only the ends of its own tokens: the words
// after it end where they end in the text.
func TestTokenEndsAfterNormalForm(t *testing.T) {
	modelDir(t, "qwen3")
	tok := loadShared(t, "qwen3")
	const text = "cafe\u0301 and more words here"
	ends, err := tok.TokenEnds(context.Background(), text, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(text)
	if len(ends) != len(ids) || len(ends) < 4 {
		t.Fatalf("%d ends for %d tokens", len(ends), len(ids))
	}
	// The last four tokens are " more", " words", " here" and before
	// them " and"; each ends at its word's end.
	want := []int{len("cafe\u0301 and"), len("cafe\u0301 and more"), len("cafe\u0301 and more words"), len(text)}
	if got := ends[len(ends)-4:]; !slices.Equal(got, want) {
		t.Errorf("the last four tokens end at %v, expected %v (all ends %v, ids %v)", got, want, ends, ids)
	}
}
