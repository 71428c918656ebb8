package benchkit

// Provenance records where a results file came from, so that a figure can
// be traced to the program, machine, command, prompts and server that
// produced it. Every results file of the examples carries one: in the
// JSON's meta, in the JSONL run header, as benchfmt configuration lines.
type Provenance struct {
	// Nonce is the run nonce in every prompt's salt; Seed the seed of the
	// lengths and schedule, and Seeded whether it was given (then it also
	// drew the nonce, and the prompts can be reproduced).
	Nonce  string `json:"nonce,omitempty"`
	Seed   uint64 `json:"seed"`
	Seeded bool   `json:"seeded,omitempty"`
	// SharedPrefix is the tokens every prompt shares after the chat
	// template (a prefix-cache ablation), 0 for none.
	SharedPrefix int `json:"shared_prefix_tokens,omitempty"`
}
