// Package statefile writes small JSON records whole or not at all. The
// harness and its pods keep such records: a group's processes, a node's
// host state, a pod's status. A reader, or a run killed meanwhile, never
// sees half of one.
package statefile

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// WriteJSON writes v to path as indented JSON, through a temporary file
// beside it that is renamed onto path.
func WriteJSON(path string, v any, perm os.FileMode) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
