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

func TestWrapKeepsTheChain(t *testing.T) {
	inner := errors.New("refused:\n  the page")
	err := Wrap(inner)
	if err.Error() != "refused: the page" || !errors.Is(err, inner) || Wrap(nil) != nil {
		t.Errorf("Wrap: %q, is %v", err, errors.Is(err, inner))
	}
}
