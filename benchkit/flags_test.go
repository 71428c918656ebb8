package benchkit

import (
	"flag"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIntList(t *testing.T) {
	var l IntList
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&l, "pp", "")
	if err := fs.Parse([]string{"--pp", "128,512", "--pp", "1024 2048"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(IntList{128, 512, 1024, 2048}, l); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := l.String(); got != "128,512,1024,2048" {
		t.Errorf("String() = %q", got)
	}
	if err := fs.Parse([]string{"--pp", "64,x"}); err == nil {
		t.Error("a list with x parsed")
	}
	if len(l) != 4 {
		t.Errorf("a bad list changed the value: %v", l)
	}
}
