package benchkit

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlanPairsAndCells(t *testing.T) {
	tests := []struct {
		name string
		plan Plan
		want []Cell
	}{
		{
			name: "equal lengths pair in tandem",
			plan: Plan{PP: []int{128, 512}, TG: []int{32, 64}},
			want: []Cell{{128, 32, 1}, {512, 64, 1}},
		},
		{
			name: "different lengths combine",
			plan: Plan{PP: []int{128, 512}, TG: []int{32}, Concurrency: []int{1, 4}},
			want: []Cell{{128, 32, 1}, {128, 32, 4}, {512, 32, 1}, {512, 32, 4}},
		},
		{
			name: "all combinations on request",
			plan: Plan{PP: []int{1, 2}, TG: []int{3, 4}, AllCombinations: true},
			want: []Cell{{1, 3, 1}, {1, 4, 1}, {2, 3, 1}, {2, 4, 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.plan.Cells()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := (Cell{512, 128, 8}).String(); got != "pp=512/tg=128/conc=8" {
		t.Errorf("Cell.String() = %q", got)
	}
}

func TestPlanValidate(t *testing.T) {
	ok := Plan{PP: []int{64}, TG: []int{8}}
	if err := ok.Validate(23); err != nil {
		t.Fatalf("valid plan: %v", err)
	}
	tests := []struct {
		name string
		plan Plan
		want []string // each must appear in the message
	}{
		{"empty lists", Plan{}, []string{"no prompt lengths", "no generation lengths"}},
		{"below overhead", Plan{PP: []int{16}, TG: []int{8}}, []string{"pp=16 is below the chat template's overhead of 23 tokens"}},
		{"tg 0", Plan{PP: []int{64}, TG: []int{0}}, []string{"tg=0"}},
		{"concurrency 0", Plan{PP: []int{64}, TG: []int{8}, Concurrency: []int{0}}, []string{"concurrency=0"}},
		{"repeat negative", Plan{PP: []int{64}, TG: []int{8}, Repeat: -1}, []string{"repeat=-1"}},
		{"warmup negative", Plan{PP: []int{64}, TG: []int{8}, Warmup: -2}, []string{"warmup=-2"}},
		{"pp zero", Plan{PP: []int{0}, TG: []int{8}}, []string{"pp=0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.plan.Validate(23)
			if !errors.Is(err, ErrBadPlan) {
				t.Fatalf("Validate = %v, want ErrBadPlan", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// An unknown overhead skips that check only.
	if err := (Plan{PP: []int{1}, TG: []int{2}}).Validate(-1); err != nil {
		t.Errorf("unknown overhead: %v", err)
	}
}

func TestPlanWarnings(t *testing.T) {
	if w := (Plan{PP: []int{64}, TG: []int{1, 8}}).Warnings(); len(w) != 1 || !strings.Contains(w[0].Error(), tg1Note) {
		t.Errorf("tg=1 warnings = %v, want the tg=1 note", w)
	}
	if w := (Plan{PP: []int{512, 128}}).Warnings(); len(w) != 0 {
		t.Errorf("no prefix cache: warnings %v", w)
	}
	if w := (Plan{PP: []int{128, 512}, UsePrefixCache: true}).Warnings(); len(w) != 1 {
		t.Errorf("ascending with cache: %v, want 1 warning", w)
	}
	if w := (Plan{PP: []int{512, 128}, UsePrefixCache: true}).Warnings(); len(w) != 2 {
		t.Errorf("descending with cache: %v, want 2 warnings", w)
	}
}
