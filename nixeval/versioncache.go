package nixeval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/fediversity/podroles/internal/nixversion"
)

// VersionCacheEnv names the file where podroles keeps the versions of the
// nixes it ran; "off" keeps none. Unset, it is DefaultVersionCache's.
const VersionCacheEnv = "PODROLES_VERSION_CACHE"

// DefaultVersionCache is the file of the versions of nix that the commands
// keep: the user's cache folder's podroles/nix-versions.json, or as
// VersionCacheEnv says; "" for none.
func DefaultVersionCache() string {
	switch v := os.Getenv(VersionCacheEnv); v {
	case "off":
		return ""
	case "":
		dir, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(dir, "podroles", "nix-versions.json")
	default:
		return v
	}
}

// versionKey is a nix binary as its version is kept: the file that runs
// (links resolved), its size and its time. A nix replaced in place (an
// upgrade of the package) has another size or time, and is asked again.
type versionKey struct {
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
}

type cachedVersion struct {
	versionKey
	Version string `json:"version"`
}

// keyOf is the key of the nix at path, or "" when the file cannot be read.
func keyOf(path string) (string, versionKey, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", versionKey{}, false
	}
	info, err := os.Stat(real)
	if err != nil || !info.Mode().IsRegular() {
		return "", versionKey{}, false
	}
	return real, versionKey{Size: info.Size(), ModTime: info.ModTime()}, true
}

// lookupVersion is the version kept for the nix at path, if its file is
// the one that printed it. The cache is a shortcut: a file that cannot be
// read is no cache.
func lookupVersion(cache, path string) (nixversion.Version, bool) {
	real, key, ok := keyOf(path)
	if cache == "" || !ok {
		return nixversion.Version{}, false
	}
	kept := readVersions(cache)
	c, ok := kept[real]
	if !ok || c.Size != key.Size || !c.ModTime.Equal(key.ModTime) {
		return nixversion.Version{}, false
	}
	v, err := nixversion.Parse(c.Version)
	return v, err == nil
}

// keepVersion records v for the nix at path. A failure to write is
// ignored: the next run asks nix again.
func keepVersion(cache, path string, v nixversion.Version) {
	real, key, ok := keyOf(path)
	if cache == "" || !ok {
		return
	}
	kept := readVersions(cache)
	kept[real] = cachedVersion{versionKey: key, Version: v.String()}
	data, err := json.MarshalIndent(kept, "", "  ")
	if err != nil || os.MkdirAll(filepath.Dir(cache), 0o755) != nil {
		return
	}
	// Through a new file renamed over the old, so that a run beside this
	// one reads the old file or the new, never half of one.
	tmp, err := os.CreateTemp(filepath.Dir(cache), ".nix-versions-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(append(data, '\n'))
	if closeErr := tmp.Close(); err != nil || closeErr != nil || os.Rename(tmp.Name(), cache) != nil {
		os.Remove(tmp.Name())
	}
}

func readVersions(cache string) map[string]cachedVersion {
	kept := map[string]cachedVersion{}
	if data, err := os.ReadFile(cache); err == nil {
		if json.Unmarshal(data, &kept) != nil {
			return map[string]cachedVersion{}
		}
	}
	return kept
}
