package localenv

import (
	"fmt"
	"os"

	"github.com/fediversity/podroles/internal/pki"
)

// writeFile writes data with perm, refusing to follow what is there.
func writeFile(path string, data []byte, perm os.FileMode) error {
	if err := os.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Chmod(path, perm)
}

// newOtherCAPEM is the PEM of a CA that signed nothing of the environment.
func newOtherCAPEM() ([]byte, error) {
	ca, err := pki.NewCA("a CA of nothing in the environment")
	if err != nil {
		return nil, err
	}
	return ca.PEM, nil
}
