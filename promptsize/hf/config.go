package hf

import (
	"encoding/json"
	"fmt"
	"sort"
)

// config is what this package reads from tokenizer_config.json.
type config struct {
	special   SpecialTokens
	templates map[string]string // by name; a plain string template is "default"
}

type configFile struct {
	BOS          json.RawMessage `json:"bos_token"`
	EOS          json.RawMessage `json:"eos_token"`
	PAD          json.RawMessage `json:"pad_token"`
	UNK          json.RawMessage `json:"unk_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

func parseConfig(data []byte) (config, error) {
	var f configFile
	if err := json.Unmarshal(data, &f); err != nil {
		return config{}, fmt.Errorf("hf: tokenizer_config.json: expected a JSON object: %w", err)
	}
	var c config
	var err error
	for _, t := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{{"bos_token", f.BOS, &c.special.BOS}, {"eos_token", f.EOS, &c.special.EOS}, {"pad_token", f.PAD, &c.special.PAD}, {"unk_token", f.UNK, &c.special.UNK}} {
		if *t.dst, err = tokenContent(t.raw); err != nil {
			return config{}, fmt.Errorf("hf: tokenizer_config.json: %s: %w", t.name, err)
		}
	}
	if isNull(f.ChatTemplate) {
		return c, nil
	}
	var one string
	if err := json.Unmarshal(f.ChatTemplate, &one); err == nil {
		c.templates = map[string]string{"default": one}
		return c, nil
	}
	var list []struct {
		Name     *string `json:"name"`
		Template *string `json:"template"`
	}
	if err := json.Unmarshal(f.ChatTemplate, &list); err != nil {
		return config{}, fmt.Errorf("hf: tokenizer_config.json: chat_template: expected a string or a list of {name, template}: %w", err)
	}
	c.templates = make(map[string]string, len(list))
	for i, t := range list {
		if t.Name == nil || t.Template == nil {
			return config{}, fmt.Errorf("hf: tokenizer_config.json: chat_template[%d]: expected both \"name\" and \"template\"", i)
		}
		c.templates[*t.Name] = *t.Template
	}
	return c, nil
}

// tokenContent reads a special token given as a string, as an AddedToken
// object ({"content": ...}, with or without "__type") or as null.
func tokenContent(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", fmt.Errorf("expected a string, null or an object with a \"content\" string, found %s", truncate(string(raw), 80))
	}
	return *obj.Content, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// chatTemplate compiles the configured templates.
func (c config) chatTemplate() (*ChatTemplate, error) {
	names := make([]string, 0, len(c.templates))
	for name := range c.templates {
		names = append(names, name)
	}
	sort.Strings(names)
	ct := &ChatTemplate{named: make(map[string]*compiledTemplate, len(names)), special: c.special, source: c.templates["default"]}
	for _, name := range names {
		t, err := compile(c.templates[name])
		if err != nil {
			return nil, fmt.Errorf("hf: tokenizer_config.json: chat_template %q: %w", name, err)
		}
		ct.named[name] = t
	}
	return ct, nil
}
