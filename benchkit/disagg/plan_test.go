package disagg

import (
	"errors"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
)

func TestCheckPlan(t *testing.T) {
	tests := []struct {
		name string
		plan benchkit.Plan
		want string // "" for no error
	}{
		{"above the threshold", benchkit.Plan{PP: []int{1001, 4096}, TG: []int{8}}, ""},
		{"at the threshold", benchkit.Plan{PP: []int{4096, 1000}, TG: []int{8}}, "pp=1000 must exceed 1000"},
		{"far below", benchkit.Plan{PP: []int{512}, TG: []int{8}}, "pp=512 must exceed 1000"},
		{"prefix cache", benchkit.Plan{PP: []int{2048}, TG: []int{8}, UsePrefixCache: true}, "use_prefix_cache"},
		{"plan rule", benchkit.Plan{PP: []int{2048}, TG: []int{1}}, "tg=1"},
	}
	for _, tc := range tests {
		err := CheckPlan(tc.plan)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !errors.Is(err, benchkit.ErrBadPlan) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want ErrBadPlan saying %q", tc.name, err, tc.want)
		}
	}
}
