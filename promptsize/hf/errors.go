package hf

import (
	"errors"
	"fmt"
)

// ErrUnsupported is wrapped by every error that refuses a tokenizer.json or
// tokenizer_config.json feature this package does not implement. The
// package never approximates such a feature: a file it cannot encode
// exactly does not load. Use errors.As with *UnsupportedError for the details.
var ErrUnsupported = errors.New("unsupported tokenizer feature")

// ErrNoChatTemplate is returned by Render and Count when the model directory
// declares no chat template and none was given with WithChatTemplate.
var ErrNoChatTemplate = errors.New("no chat template")

// UnsupportedError names a feature of a tokenizer file that this package
// refuses to load, and where it was found.
type UnsupportedError struct {
	// File is the file the feature was found in, e.g. "tokenizer.json".
	File string
	// Path locates the feature in the file, e.g. "pre_tokenizer.pretokenizers[1]".
	Path string
	// Feature says what was found, e.g. `type "Metaspace"`.
	Feature string
	// Supported lists what would have been accepted there.
	Supported string
}

func (e *UnsupportedError) Error() string {
	msg := fmt.Sprintf("hf: %s: %s: unsupported %s", e.File, e.Path, e.Feature)
	if e.Supported != "" {
		msg += " (supported: " + e.Supported + ")"
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

func unsupported(path, feature, supported string) error {
	return &UnsupportedError{File: "tokenizer.json", Path: path, Feature: feature, Supported: supported}
}
