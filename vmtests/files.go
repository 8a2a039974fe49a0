package vmtests

import (
	"fmt"
	"os"
)

// writeFile writes data with perm, refusing to follow what is there.
func writeFile(path string, data []byte, perm os.FileMode) error {
	if err := os.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Chmod(path, perm)
}
