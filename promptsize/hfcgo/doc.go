// Package hfcgo is the promptsize.Counter of package hf over Hugging Face's
// own Rust tokenizers library, through the cgo bindings of
// github.com/daulet/tokenizers. It renders chat templates with hf's
// ChatTemplate, so the two backends differ only in the tokenizer, and the
// same golden tests check both.
//
// Everything in this package is behind the build tag hftokenizers, so the
// default build of the module needs no cgo and no native library: without
// the tag the package is empty.
//
// # Building libtokenizers
//
// The bindings link a static libtokenizers.a that must match the module
// version in go.mod (github.com/daulet/tokenizers v1.24.0 checks for the
// symbol tokenizers_version_1_23_0 at link time; its Rust crate, version
// 1.23.0, wraps the tokenizers crate 0.22). Either take the release archive
// for your platform (libtokenizers.<os>-<arch>.tar.gz of the matching
// release of daulet/tokenizers), or build it with a Rust toolchain from a
// writable copy of the module (the module cache is read-only):
//
//	cp -r "$(go env GOMODCACHE)/github.com/daulet/tokenizers@v1.24.0" /tmp/tokenizers
//	chmod -R u+w /tmp/tokenizers && cd /tmp/tokenizers
//	cargo build --release   # writes target/release/libtokenizers.a
//
// then point the linker at its directory and set the tag:
//
//	export CGO_LDFLAGS="-L/path/to/dir/with/libtokenizers.a"
//	go test -tags hftokenizers ./promptsize/hfcgo/...
//
// Type-checking needs no library: go vet -tags hftokenizers
// ./promptsize/hfcgo/... works without it (a C compiler is needed for cgo).
package hfcgo
