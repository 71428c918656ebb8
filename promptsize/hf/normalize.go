package hf

import (
	"encoding/json"
	"fmt"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// A normalizer rewrites one stretch of text between added tokens before it
// is pre-tokenized. Steps run in the order tokenizer.json declares them.
type normalizer []normStep

type normStep struct {
	form    norm.Form // for a Unicode normal form
	useForm bool
	from    string // for Replace
	to      string
	prepend string // for Prepend
}

const supportedNormalizers = "NFC, NFD, NFKC, NFKD, Replace with a String pattern, Prepend, Sequence"

func parseNormalizer(raw json.RawMessage, path string) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := parseComponent(raw, path)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var n normalizer
		for i, sub := range c.Normalizers {
			s, err := parseNormalizer(sub, fmt.Sprintf("%s.normalizers[%d]", path, i))
			if err != nil {
				return nil, err
			}
			n = append(n, s...)
		}
		return n, nil
	case "NFC":
		return normalizer{{form: norm.NFC, useForm: true}}, nil
	case "NFD":
		return normalizer{{form: norm.NFD, useForm: true}}, nil
	case "NFKC":
		return normalizer{{form: norm.NFKC, useForm: true}}, nil
	case "NFKD":
		return normalizer{{form: norm.NFKD, useForm: true}}, nil
	case "Replace":
		if c.Pattern == nil || c.Pattern.String == nil || c.Content == nil {
			return nil, unsupported(path, "Replace without a String pattern and content (Regex patterns are not implemented)", supportedNormalizers)
		}
		if *c.Pattern.String == "" {
			return nil, unsupported(path, "Replace with an empty pattern", supportedNormalizers)
		}
		return normalizer{{from: *c.Pattern.String, to: *c.Content}}, nil
	case "Prepend":
		if c.Prepend == nil {
			return nil, fmt.Errorf("hf: tokenizer.json: %s: expected a \"prepend\" string in Prepend, found none", path)
		}
		return normalizer{{prepend: *c.Prepend}}, nil
	default:
		return nil, unsupported(path, fmt.Sprintf("normalizer type %q", c.Type), supportedNormalizers)
	}
}

// apply returns s normalized. Normal forms leave s unchanged (no copy) when
// it is already in that form, which is the common case.
func (n normalizer) apply(s string) string {
	for _, st := range n {
		switch {
		case st.useForm:
			if !st.form.IsNormalString(s) {
				s = st.form.String(s)
			}
		case st.from != "":
			s = strings.ReplaceAll(s, st.from, st.to)
		case st.prepend != "":
			if s != "" {
				s = st.prepend + s
			}
		}
	}
	return s
}
