package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/inferbench/inferbench/benchkit"
)

// sideKeys are the keys a [prefill] or [decode] section may hold.
var sideKeys = []string{"model", "node", "instance_meta", "sharding", "min_nodes", "max_nodes", "skip_pipeline_jaccl", "skip_tensor_ring"}

// fileConfig is a parsed --config file: each top-level key as the flag
// value it stands for, and each section's keys likewise.
type fileConfig struct {
	top   map[string]string // flag name → value
	sides map[string]map[string]string
}

// loadConfig reads a TOML file. Top-level keys must name a flag of fs
// (with "_" for "-"), except config; sections must be [prefill] or
// [decode] with sideKeys. Arrays become comma lists, as the list flags
// take them.
func loadConfig(path string, fs *flag.FlagSet) (*fileConfig, error) {
	var raw map[string]any
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		return nil, benchkit.Usagef("--config %s: %w", path, err)
	}
	fc := &fileConfig{top: map[string]string{}, sides: map[string]map[string]string{}}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		if k == "prefill" || k == "decode" {
			tbl, ok := v.(map[string]any)
			if !ok {
				return nil, benchkit.Usagef("--config %s: %s must be a [%s] section, found %T", path, k, k, v)
			}
			side := map[string]string{}
			for sk, sv := range tbl {
				if !contains(sideKeys, sk) {
					return nil, benchkit.Usagef("--config %s: unknown key %s.%s; a [%s] section takes %s", path, k, sk, k, strings.Join(sideKeys, ", "))
				}
				s, err := scalar(sv)
				if err != nil {
					return nil, benchkit.Usagef("--config %s: %s.%s: %v", path, k, sk, err)
				}
				side[sk] = s
			}
			fc.sides[k] = side
			continue
		}
		name := strings.ReplaceAll(k, "_", "-")
		if fs.Lookup(name) == nil || name == "config" {
			return nil, benchkit.Usagef("--config %s: unknown key %q; top-level keys are the flags' names with _ for - (pp, tg, host, repeat, ...) and the sections [prefill] and [decode]", path, k)
		}
		s, err := scalar(v)
		if err != nil {
			return nil, benchkit.Usagef("--config %s: %s: %v", path, k, err)
		}
		fc.top[name] = s
	}
	return fc, nil
}

// scalar renders a TOML value as a flag value: arrays as comma lists.
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := scalar(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		return "", fmt.Errorf("want a value, found a table")
	case string, int64, float64, bool:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("want a string, number, boolean or array, found %T", v)
}

// apply sets every flag the file names and the command line did not,
// and records which it set.
func (fc *fileConfig) apply(fs *flag.FlagSet, visited, fromFile map[string]bool) error {
	names := make([]string, 0, len(fc.top))
	for n := range fc.top {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if visited[n] {
			continue
		}
		if err := fs.Set(n, fc.top[n]); err != nil {
			return benchkit.Usagef("--config: %s = %q: %v", strings.ReplaceAll(n, "-", "_"), fc.top[n], err)
		}
		fromFile[n] = true
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
