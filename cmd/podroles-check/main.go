// Command podroles-check is podroles' checker alone (check, facts,
// rules). It is what the flake's lib.mkCheck and node module run in a
// build. It links neither Kubernetes' types nor a container engine's
// client, so that it starts fast and builds small; podroles has every
// command, plan among them.
package main

import (
	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/nodecmd"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

// root describes podroles-check and every command it has.
var root = cli.Root{
	Use:   "podroles-check",
	Short: "Check the pod roles of NixOS nodes against the pod-roles spec",
	Long: `podroles-check reads NixOS nodes with the real nix, or a facts document,
and checks the pod roles they declare:

  check  apply every evaluation rule of the pod-roles spec to nodes, naming
         each unit, role, secret or port a finding is about
  facts  print what it reads from nodes, as a facts document that check
         --facts reads back without nix
  rules  list the rules of check, and explain each

Exit status: 0 when no error was found, 1 when one was, 2 when a command
could not run. podroles has these, plan (the Kubernetes objects of
nodes), and the scenario suites and their environments.`,
	Version: version,
}

// newRoot is the root command with every command of the binary.
func newRoot(ios *cli.Streams) *cobra.Command {
	return cli.NewRoot(root, ios, nodecmd.Commands(ios)...)
}

func main() { cli.Exec(newRoot) }
