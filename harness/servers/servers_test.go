package servers

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFindThroughTheRecord: outside make, with no PODROLES_SERVERS, a
// server is found in the folder that make recorded in the machine-wide
// cache, as the images are.
func TestFindThroughTheRecord(t *testing.T) {
	cache, bin := t.TempDir(), t.TempDir()
	t.Setenv("PODROLES_CACHE", cache)
	t.Setenv(DirEnv, "")
	t.Setenv("PATH", t.TempDir())
	if Dir() != "" || Find("vault") != "" {
		t.Fatalf("no record: Dir %q, Find %q", Dir(), Find("vault"))
	}
	os.WriteFile(filepath.Join(bin, "vault"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(Record(), []byte(`{"bin": "`+bin+`"}`+"\n"), 0o644)
	if got := Find("vault"); got != filepath.Join(bin, "vault") {
		t.Errorf("Find through the record: %q", got)
	}
	other := t.TempDir()
	t.Setenv(DirEnv, other)
	if Dir() != other {
		t.Errorf("PODROLES_SERVERS comes first: %q", Dir())
	}
}
