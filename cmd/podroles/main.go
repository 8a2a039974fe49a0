// Command podroles checks the pod roles of NixOS nodes against the
// pod-roles spec. It also plans the Kubernetes objects they become, and
// runs scenario suites against the pods, in a local environment of real
// servers or in a cluster. Its commands live in cmd/internal/nodecmd
// (check, facts, rules, plan) and cmd/internal/harnesscmd (scenarios,
// env, pod); podroles-check is the same node commands without the
// harness.
package main

import (
	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/harnesscmd"
	"github.com/fediversity/podroles/cmd/internal/nodecmd"
	"github.com/fediversity/podroles/cmd/internal/plancmd"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

// root describes podroles and every command it has.
var root = cli.Root{
	Use:   "podroles",
	Short: "Check the pod roles of NixOS nodes, and test the pods they become",
	Long: `podroles reads NixOS nodes with the real nix and works with the pod roles
they declare:

  check      apply every evaluation rule of the pod-roles spec to nodes,
             naming each unit, role, secret or port a finding is about
  facts      print what podroles reads from nodes, as a facts document that
             check --facts reads back without nix
  rules      list the rules of check, and explain each
  plan       print the Deployments and Services the k8s method makes of nodes
  scenarios  list the scenario suites, and run them against a node's pods
             (an inventory, or what it finds in a cluster)
  env        start and stop a local environment of real servers for the
             suites, optionally with a Kubernetes control plane

Exit status: 0 when all is well, 1 when a check or a scenario failed, 2
when a command could not run. podroles-check has check, facts and rules
alone, for the flake's checks.`,
	Version: version,
}

// newRoot is the root command with every command of the binary.
func newRoot(ios *cli.Streams) *cobra.Command {
	commands := append(nodecmd.Commands(ios), plancmd.NewCmd(ios))
	return cli.NewRoot(root, ios, append(commands, harnesscmd.Commands(ios)...)...)
}

func main() { cli.Exec(newRoot) }
