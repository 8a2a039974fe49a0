package cli

import (
	"errors"
	"testing"
)

func TestByteSize(t *testing.T) {
	for text, want := range map[string]int64{
		"0": 0, "1": 1, "512MiB": 512 << 20, "512M": 512 << 20, "4GiB": 4 << 30, "4G": 4 << 30,
		"1.5GiB": 3 << 29, "2GB": 2e9, "100KB": 1e5, "64KiB": 64 << 10, "1TiB": 1 << 40, "300 MiB": 300 << 20, "4096B": 4096,
	} {
		var b ByteSize
		if err := b.Set(text); err != nil || int64(b) != want {
			t.Errorf("%q: %d, %v; want %d", text, b, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "-1", "4 GiBs", "GiB", "1e30TiB"} {
		var b ByteSize
		if err := b.Set(bad); err == nil {
			t.Errorf("%q was taken as %d", bad, b)
		}
	}
	for size, want := range map[ByteSize]string{DefaultMaxMemory: "4GiB", 512 << 20: "512MiB", 1000: "1000", 0: "0"} {
		if got := size.String(); got != want {
			t.Errorf("%d shows as %q, want %q", size, got, want)
		}
	}
}

func TestErrorsOfAJoin(t *testing.T) {
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	if got := Errors(errors.Join(a, errors.Join(b, c))); len(got) != 3 || got[0] != a || got[2] != c {
		t.Errorf("Errors = %v", got)
	}
	if got := Errors(a); len(got) != 1 || got[0] != a {
		t.Errorf("Errors = %v", got)
	}
	if Errors(nil) != nil {
		t.Error("Errors(nil) is not empty")
	}
}
