package oneline

import (
	"errors"
	"testing"
)

func TestOneLine(t *testing.T) {
	if got := Of("a\n  b\tc\r\n"); got != "a b c" {
		t.Errorf("Of: %q", got)
	}
	err := errors.New("refused:\n  the page\n  of the engine")
	if got := Err(err); got != "refused: the page of the engine" {
		t.Errorf("Err: %q", got)
	}
	if got := First(err); got != "refused:" {
		t.Errorf("First: %q", got)
	}
}
