package nixeval

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fediversity/podroles/facts"
)

// Shard is one of Count stable slices of a set of nodes, for a CI matrix
// whose jobs each check one slice: Index is 1 to Count. The zero Shard is
// every node.
//
// A node's slice depends on its name alone (ShardOf), never on the other
// nodes, so a node stays in its slice as nodes come and go, and the slices
// of one Count are disjoint and together hold every node. nix/shard.nix
// computes the same slices in Nix, for lib.mkCheckShards.
type Shard struct {
	Index, Count int
}

// ParseShard reads I/N, as --shard takes it.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: write I/N, the I-th of N slices, e.g. 2/4", s)
	}
	if count < 1 || index < 1 || index > count {
		return Shard{}, fmt.Errorf("shard %q: I must be 1 to N, and N at least 1", s)
	}
	return Shard{Index: index, Count: count}, nil
}

func (s Shard) String() string {
	if s.Count == 0 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Holds says whether the node keyed by name (ShardKey) is in the slice.
func (s Shard) Holds(name string) bool {
	return s.Count <= 1 || ShardOf(name, s.Count) == s.Index
}

// ShardOf is the slice, 1 to count, of the node keyed by name: the first
// four bytes of the SHA-256 of the name, as a big-endian number, modulo
// count, plus one.
func ShardOf(name string, count int) int {
	sum := sha256.Sum256([]byte(name))
	return int(binary.BigEndian.Uint32(sum[:4])%uint32(count)) + 1
}

// ShardKey is the name a node is sliced by, known before nix runs: a flake's
// node by its attribute name, which is its node name; a file's node by the
// file's path as given (cleaned: ./hosts/web.nix is hosts/web.nix). Not by
// the hostName that names a file's node once evaluated, which every slice
// would have to evaluate every file for; nor by the file's base name, which
// would put every hosts/*/configuration.nix in one slice. A node read from
// a facts document is keyed the same way, from its source.
func ShardKey(n *facts.Node) string {
	if path, ok := strings.CutPrefix(n.Source, "file:"); ok {
		return fileShardKey(path)
	}
	return n.Name
}

// fileShardKey is the key of the file given as display.
func fileShardKey(display string) string { return filepath.Clean(display) }
