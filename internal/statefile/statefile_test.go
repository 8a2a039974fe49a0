package statefile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteJSONReplacesWhole: the record is replaced, not appended to,
// keeps the mode asked for, and leaves no temporary file behind.
func TestWriteJSONReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := WriteJSON(path, map[string]int{"a": 1, "b": 2}, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(path, map[string]int{"c": 3}, 0o600); err != nil {
		t.Fatal(err)
	}
	var got map[string]int
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil || len(got) != 1 || got["c"] != 3 {
		t.Errorf("record %s: %v", data, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v %v", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left %d files, want the record alone", len(entries))
	}
	if err := WriteJSON(filepath.Join(dir, "missing", "state.json"), 1, 0o644); err == nil {
		t.Error("a record in a missing folder was written")
	}
}
