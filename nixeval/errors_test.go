package nixeval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/nixtest"
)

// errorCase is one kind of error that nix, or podroles around it, meets,
// with the one line podroles prints for it on each nix release the tests
// cover. In want, $F is the failing file and $D the folder of the files.
type errorCase struct {
	name string
	// file is a node file evaluated after a good one (nix has printed part
	// of the JSON by the time it fails, and none of it may be read); or
	// run makes the error.
	file string
	run  func(t *testing.T, dir string) error
	// want is the whole one-line error on each release the tests run on
	// (nixtest.Releases), keyed by the releases that give it: the line is
	// the same on all of them, but where a comment says why it differs.
	want map[string]string
	// vars, when set, gives more of want's placeholders once run ended.
	vars       func() []string
	kind       ErrorKind
	assertions []string
}

var errorFiles = map[string]string{
	"ok.nix":              emptyNode,
	"syntax.nix":          "{\n  a = 1\n  b = 2;\n}\n",
	"syntax-binding.nix":  "{\n  networking.hostName = \"web\";\n  systemd.services = { ;\n}\n",
	"throw.nix":           `{ systemd.services = throw "the node module refuses this node"; }`,
	"assertions.nix":      `{ systemd.services = throw "\nFailed assertions:\n- role sidekiq: unit mastodon-sidekiq does not exist\n- unit nginx is in two lists"; }`,
	"assert-equal.nix":    "{\n  networking.hostName = \"web\";\n  systemd.services = assert 1 == 2; { };\n}\n",
	"assert.nix":          "{\n  systemd.services = assert builtins.pathExists ./nope; { };\n}\n",
	"type.nix":            `{ systemd.services = 1 + "a"; }`,
	"option-type.nix":     "{\n  networking.hostName = \"web\";\n  fediversity.podRoles.roles.sidekiq.replicas = \"2\";\n}\n",
	"missing-attr.nix":    "{\n  systemd.services = { }.nope;\n}\n",
	"undefined.nix":       "{\n  systemd.services = nope;\n}\n",
	"recursion.nix":       "let services = services; in\n{\n  systemd.services = services;\n}\n",
	"abort.nix":           `{ systemd.services = abort "stop here"; }`,
	"missing-import.nix":  `{ systemd.services = import ./nope.nix; }`,
	"not-a-node.nix":      `[ 1 ]`,
	"module-function.nix": `{ config, ... }: { }`,
	"head.nix":            `{ systemd.services = builtins.head [ ]; }`,
	"elem-at.nix":         `{ systemd.services = builtins.seq (builtins.elemAt [ 1 ] 5) { }; }`,
	"tail.nix":            `{ systemd.services = builtins.tail [ ]; }`,
	"hash.nix":            `{ systemd.services = builtins.hashString "nope" "x"; }`,
	"download.nix":        `{ systemd.services = builtins.fetchurl "http://127.0.0.1:1/x"; }`,
	"fetch-git.nix":       `{ systemd.services = builtins.fetchGit ./no-such-repo; }`,
}

func errorCases() []errorCase {
	flake := func(ref string) func(t *testing.T, dir string) error {
		return func(t *testing.T, dir string) error {
			s, err := FlakeSource(strings.ReplaceAll(ref, "$D", dir))
			if err != nil {
				return err
			}
			_, err = extract(t, evaluator(t), []Source{s})
			return err
		}
	}
	return []errorCase{
		{name: "syntax", file: "syntax.nix", kind: KindSyntax, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval file $F: syntax error, unexpected '=', expecting ';' (at $F:3:5)",
		}},
		{name: "syntax where a binding may start", file: "syntax-binding.nix", kind: KindSyntax, want: map[string]string{
			// 2.26 and 2.31 add "expecting INHERIT", which podroles leaves out.
			"2.8 2.24 2.26 2.31": "eval file $F: syntax error, unexpected ';' (at $F:3:24)",
		}},
		{name: "throw", file: "throw.nix", kind: KindEval, want: map[string]string{
			// 2.8 points at the attribute, 2.24 at the throw.
			"2.8":            "eval node throw (file $F): the node module refuses this node (at $F:1:3)",
			"2.24 2.26 2.31": "eval node throw (file $F): the node module refuses this node (at $F:1:22)",
		}},
		{name: "failed assertions", file: "assertions.nix", kind: KindAssertions,
			assertions: []string{"role sidekiq: unit mastodon-sidekiq does not exist", "unit nginx is in two lists"},
			want: map[string]string{
				"2.8":            "eval node assertions (file $F): failed assertions: role sidekiq: unit mastodon-sidekiq does not exist; unit nginx is in two lists (at $F:1:3)",
				"2.24 2.26 2.31": "eval node assertions (file $F): failed assertions: role sidekiq: unit mastodon-sidekiq does not exist; unit nginx is in two lists (at $F:1:22)",
			}},
		{name: "assert a == b", file: "assert-equal.nix", kind: KindEval, want: map[string]string{
			"2.8":            "eval node web (file $F): assertion '(1 == 2)' failed (at $F:3:22)",
			"2.24 2.26 2.31": "eval node web (file $F): assertion '(1 == 2)' failed: an integer with value '1' is not equal to an integer with value '2' (at $F:3:22)",
		}},
		{name: "assert", file: "assert.nix", kind: KindEval, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval node assert (file $F): assertion '((builtins).pathExists $D/nope)' failed (at $F:2:22)",
		}},
		{name: "type error", file: "type.nix", kind: KindEval, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval node type (file $F): cannot add a string to an integer (at $F:1:26)",
		}},
		{name: "type error naming the option", run: func(t *testing.T, dir string) error {
			_, err := extract(t, evaluator(t), mustSources(t, FileSource, filepath.Join(dir, "option-type.nix")))
			return err
		}, want: map[string]string{
			"2.8 2.24 2.26 2.31": `node web (file:$D/option-type.nix): fediversity.podRoles.roles.sidekiq.replicas: want an integer, got the string "2"`,
		}},
		{name: "missing attribute", file: "missing-attr.nix", kind: KindEval, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval node missing-attr (file $F): attribute 'nope' missing (at $F:2:22)",
		}},
		{name: "undefined variable", file: "undefined.nix", kind: KindEval, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval file $F: undefined variable 'nope' (at $F:2:22)",
		}},
		{name: "infinite recursion", file: "recursion.nix", kind: KindEval, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval node recursion (file $F): infinite recursion encountered (at $F:1:16)",
		}},
		{name: "abort", file: "abort.nix", kind: KindEval, want: map[string]string{
			"2.8":            "eval node abort (file $F): evaluation aborted with the following error message: 'stop here' (at $F:1:3)",
			"2.24 2.26 2.31": "eval node abort (file $F): evaluation aborted with the following error message: 'stop here' (at $F:1:22)",
		}},
		{name: "missing file", file: "missing-import.nix", kind: KindEval, want: map[string]string{
			"2.8":            "eval node missing-import (file $F): getting status of '$D/nope.nix': No such file or directory (at $F:1:3)",
			"2.24 2.26 2.31": "eval node missing-import (file $F): path '$D/nope.nix' does not exist (at $F:1:22)",
		}},
		{name: "not a node", file: "not-a-node.nix", kind: KindEval, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval file $F: $F is a list, not a node's config attribute set or a NixOS system",
		}},
		{name: "a module, not a node", file: "module-function.nix", kind: KindEval, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval file $F: $F is a function (a NixOS module?): give the node's config attribute set, or a NixOS system such as nixpkgs.lib.nixosSystem { modules = [ ... ]; }",
		}},
		// 2.26 and 2.31 name the builtin and the list's length; podroles
		// keeps the line of 2.24 and 2.8.
		{name: "head of an empty list", file: "head.nix", kind: KindEval, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval node head (file $F): list index 0 is out of bounds (at $F:1:22)",
		}},
		{name: "index out of bounds", file: "elem-at.nix", kind: KindEval, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval node elem-at (file $F): list index 5 is out of bounds (at $F:1:36)",
		}},
		{name: "tail of an empty list", file: "tail.nix", kind: KindEval, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval node tail (file $F): 'tail' called on an empty list (at $F:1:22)",
		}},
		{name: "unknown hash algorithm", file: "hash.nix", kind: KindEval, want: map[string]string{
			// Without the hint that names nix's own binary. 2.8 lists no
			// algorithms; 2.31 knows BLAKE3 as well, and says so.
			"2.8":       "eval node hash (file $F): unknown hash algorithm 'nope' (at $F:1:3)",
			"2.24 2.26": "eval node hash (file $F): unknown hash algorithm 'nope', expect 'md5', 'sha1', 'sha256', or 'sha512' (at $F:1:22)",
			"2.31":      "eval node hash (file $F): unknown hash algorithm 'nope', expect 'blake3', 'md5', 'sha1', 'sha256', or 'sha512' (at $F:1:22)",
		}},
		{name: "download failed", file: "download.nix", kind: KindEval, want: map[string]string{
			// 2.26 and 2.31 add curl's detail ("Failed to connect to
			// 127.0.0.1 port 1 after 0 ms: …"), which podroles leaves out,
			// and Debian 13's curl says "Could not", which podroles
			// writes as Debian 12's curl does.
			"2.8":            "eval node download (file $F): unable to download 'http://127.0.0.1:1/x': Couldn't connect to server (7) (at $F:1:3)",
			"2.24 2.26 2.31": "eval node download (file $F): unable to download 'http://127.0.0.1:1/x': Couldn't connect to server (7) (at $F:1:22)",
		}},
		{name: "git repository missing", file: "fetch-git.nix", kind: KindEval, want: map[string]string{
			// 2.8: "program 'git' failed with exit code 128"; 2.24 and
			// 2.26: "resolving Git reference 'master': revspec 'master'
			// not found"; 2.31: "The path '…' does not exist."
			"2.8":            "eval node fetch-git (file $F): git+file://$D/no-such-repo: directory $D/no-such-repo does not exist (at $F:1:3)",
			"2.24 2.26 2.31": "eval node fetch-git (file $F): git+file://$D/no-such-repo: directory $D/no-such-repo does not exist (at $F:1:22)",
		}},
		// Nodes of several module files through nixpkgs' real lib (the NixOS
		// stand-in of testdata/modules): the line names the option and the
		// user's file that the trace points at first outside lib, never
		// lib/modules.nix. $T is the node's folder.
		{name: "conflicting definitions", kind: KindEval, run: moduleSystemNode(map[string]string{"web-again.nix": "{ lib, ... }: {\n  networking.hostName = \"web-2\";\n}\n"}), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval file $T/node.nix: The option `networking.hostName' has conflicting definition values: - In `$T/web-again.nix': \"web-2\" - In `$T/host.nix': \"web\" Use `lib.mkForce value` or `lib.mkDefault value` to change the priority on any of these definitions. (at $T/web-again.nix)",
		}},
		{name: "type error of the module system", kind: KindEval, run: moduleSystemNode(map[string]string{"roles.nix": "{ lib, ... }: {\n  fediversity.podRoles.roles.sidekiq = {\n    units = [ \"web\" ];\n    replicas = lib.mkDefault \"2\";\n  };\n}\n"}), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval node web (file $T/node.nix): A definition for option `fediversity.podRoles.roles.sidekiq.replicas' is not of type `null or (positive integer, meaning >0)'. Definition values: - In `$T/roles.nix': \"2\" (at $T/roles.nix)",
		}},
		{name: "infinite recursion in the module system", kind: KindEval, run: moduleSystemNode(map[string]string{"loop.nix": "{ config, lib, ... }: {\n  systemd.services = lib.mapAttrs (name: unit: unit) config.systemd.services;\n}\n"}), want: map[string]string{
			// 2.8's trace names the file whose definitions recursed, 2.24's
			// the line.
			"2.8":            "eval node web (file $T/node.nix): option systemd.services: infinite recursion encountered (at $T/loop.nix)",
			"2.24 2.26 2.31": "eval node web (file $T/node.nix): option systemd.services: infinite recursion encountered (at $T/loop.nix:2:54)",
		}},
		// A node that imports k8s-pod.nix (here, its conditions) itself
		// and computes a list from the units: without --k8s-pod-module the
		// trace says which list read them (FR-007), and where.
		{name: "lists that read the units on k8s-pod.nix", kind: KindEval, run: moduleSystemNode(map[string]string{"on-k8s-pod.nix": "{ config, lib, ... }: {\n  fediversity.k8sPod.enable = true;\n  systemd.services = lib.genAttrs config.fediversity.podRoles.mainUnits (name: { });\n  fediversity.podRoles.mainUnits = lib.attrNames config.systemd.services;\n}\n"}), want: map[string]string{
			"2.8":            "eval node web (file $T/node.nix): option systemd.services: infinite recursion encountered: fediversity.podRoles.mainUnits reads config.systemd.services (FR-007), and the node is on k8s-pod.nix, whose conditions on units come from the lists; compute the lists from the application's own options (at $T/on-k8s-pod.nix:3:22)",
			"2.24 2.26 2.31": "eval node web (file $T/node.nix): option systemd.services: infinite recursion encountered: fediversity.podRoles.mainUnits reads config.systemd.services (FR-007), and the node is on k8s-pod.nix, whose conditions on units come from the lists; compute the lists from the application's own options (at $T/on-k8s-pod.nix:4:50)",
		}},
		{name: "missing flake node", run: flake("$D/flake#nope"), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval flake $D/flake#nope: flake $D/flake has no nixosConfigurations.nope; it has: web",
		}},
		{name: "missing flake dir", run: flake("$D/no-such-flake#web"), want: map[string]string{
			"2.8 2.24 2.26 2.31": "flake $D/no-such-flake: no such folder $D/no-such-flake",
		}},
		{name: "missing git+file flake dir", run: flake("git+file://$D/no-such-repo#web"), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval flake git+file://$D/no-such-repo#web: git+file://$D/no-such-repo: directory $D/no-such-repo does not exist",
		}},
		// A flake in a git work tree, as nix reads it (files git tracks
		// only), its files named as the checkout's, never the store's.
		{name: "an import that git does not track", kind: KindEval, run: gitFlake("x"), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval flake $D/hosts#x: $D/hosts/hosts/x/extra.nix is not tracked by git, and nix reads a flake in a git work tree from the files git tracks only: git -C $D/hosts add hosts/x/extra.nix",
		}},
		{name: "an import that git ignores", kind: KindEval, run: gitFlake("ignored"), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval flake $D/hosts#ignored: $D/hosts/hosts/ignored/local.nix is ignored by git (.gitignore), and nix reads a flake in a git work tree from the files git tracks only: git -C $D/hosts add -f hosts/ignored/local.nix",
		}},
		{name: "an import that does not exist in a flake", kind: KindEval, run: gitFlake("gone"), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval flake $D/hosts#gone: $D/hosts/hosts/gone/gone.nix does not exist",
		}},
		{name: "an error in a file of a flake", kind: KindEval, run: gitFlake("throws"), want: map[string]string{
			"2.8":            "eval flake $D/hosts#throws: the host refuses (at $D/hosts/hosts/throws/default.nix:1:3)",
			"2.24 2.26 2.31": "eval flake $D/hosts#throws: the host refuses (at $D/hosts/hosts/throws/default.nix:1:22)",
		}},
		// An error in the flake's own flake.nix names it in the checkout:
		// 2.31 names it so itself for a syntax error, 2.8 to 2.26 name
		// the flake's copy in the store.
		{name: "a syntax error in flake.nix", kind: KindSyntax, run: flakeOf("broken", "{ outputs = { self }: { nixosConfigurations.x.config = { ; }; }; }"), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval flake $D/broken#x: syntax error, unexpected ';' (at $D/broken/flake.nix:1:58)",
		}},
		{name: "outputs that throw", kind: KindEval, run: flakeOf("throws", `{ outputs = { self }: throw "no outputs"; }`), want: map[string]string{
			"2.8":            "eval flake $D/throws#x: no outputs (at $D/throws/flake.nix:1:13)",
			"2.24 2.26 2.31": "eval flake $D/throws#x: no outputs (at $D/throws/flake.nix:1:23)",
		}},
		{name: "a flake input whose git repository is missing", kind: KindEval, run: flakeOf("input", `{ inputs.x = { url = "git+file://NO_SUCH_INPUT"; flake = false; }; outputs = { self, x }: { nixosConfigurations.x.config = { }; }; }`), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval flake $D/input#x: input x: git+file://$D/no-such-input: directory $D/no-such-input does not exist",
		}},
		// A flake.lock that the flake lacks, or that needs changes: nix 2.8
		// refuses, 2.24 locks in memory; podroles refuses on both.
		{name: "a flake without flake.lock", kind: KindEval, run: lockFlake("missing"), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval flake $D/missing#x: $D/missing/flake.lock does not exist; nix build and nixos-rebuild would write it, podroles checks the flake as the checkout holds it: run nix flake lock $D/missing and git -C $D/missing add flake.lock",
		}},
		{name: "a flake.lock that git does not track", kind: KindEval, run: lockFlake("untracked"), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval flake $D/untracked#x: git does not track $D/untracked/flake.lock, and nix reads a flake in a git work tree from the files git tracks only; nix build and nixos-rebuild would write it, podroles checks the flake as the checkout holds it: run nix flake lock $D/untracked and git -C $D/untracked add flake.lock",
		}},
		{name: "a flake.lock that needs changes", kind: KindEval, run: lockFlake("stale"), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval flake $D/stale#x: $D/stale/flake.lock needs changes: flake.nix added input b; nix build and nixos-rebuild would write it, podroles checks the flake as the checkout holds it: run nix flake lock $D/stale and git -C $D/stale add flake.lock",
		}},
		{name: "a path: flake without flake.lock", kind: KindEval, run: lockFlake("path"), want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval flake path:$D/path#x: $D/path/flake.lock does not exist; nix build and nixos-rebuild would write it, podroles checks the flake as the checkout holds it: run nix flake lock $D/path",
		}},
		timeoutCase(),
		{name: "cancel", kind: KindEval, run: func(t *testing.T, dir string) error {
			nix, log := countingNix(t)
			ctx, cancel := context.WithCancel(context.Background())
			node := slowNode(t)
			// Cancel once nix is in the node's evaluation, not after a
			// fixed time a loaded machine may not have reached it by.
			go func() {
				ctx, stop := context.WithTimeout(ctx, time.Minute)
				defer stop()
				awaitReached(ctx, node)
				cancel()
			}()
			_, err := (&Evaluator{Nix: nix}).Extract(ctx, node)
			requireNixGone(t, log, "cancel")
			return err
		}, want: map[string]string{
			"2.8 2.24 2.26 2.31": "eval node slow (file $T/slow.nix): interrupted",
		}},
		{name: "nix missing", run: func(t *testing.T, dir string) error {
			t.Setenv("PATH", t.TempDir())
			_, err := extract(t, &Evaluator{}, mustSources(t, FileSource, filepath.Join(dir, "ok.nix")))
			var nf *NixNotFoundError
			if !errors.As(err, &nf) {
				t.Errorf("err = %#v, want a NixNotFoundError", err)
			}
			return err
		}, want: map[string]string{
			"2.8 2.24 2.26 2.31": "nix not found: install Nix (Debian: apt-get install nix-bin; elsewhere see https://nixos.org/download) or give --nix PATH, or check facts written earlier with --facts FILE",
		}},
		{name: "nix too old", run: func(t *testing.T, dir string) error {
			nix, log := oldNix(t, "2.3.16")
			_, err := extract(t, &Evaluator{Nix: nix}, mustSources(t, FileSource, filepath.Join(dir, "ok.nix")))
			var old *NixTooOldError
			if !errors.As(err, &old) {
				t.Errorf("err = %#v, want a NixTooOldError", err)
			}
			// The evaluation started beside nix --version is stopped.
			requireNixGone(t, log, "the refusal")
			return err
		}, want: map[string]string{
			"2.8 2.24 2.26 2.31": "$T/nix is nix 2.3.16, older than 2.8, the oldest nix podroles is tested on: upgrade nix or give --nix PATH to nix 2.8 or later",
		}},
	}
}

// timeoutCase runs into the Timeout while nix waits in the node, which
// the error names. A loaded machine may not start nix before a short
// Timeout ends: then the error may name the file alone, rightly, and the
// case runs again with a longer Timeout, so its verdict never hangs on a
// clock.
func timeoutCase() errorCase {
	var timeout time.Duration
	return errorCase{name: "timeout", kind: KindTimeout, run: func(t *testing.T, dir string) error {
		var err error
		for _, timeout = range []time.Duration{2 * time.Second, 5 * time.Second, 15 * time.Second} {
			nix, log := countingNix(t)
			node := slowNode(t)
			reached := make(chan bool, 1)
			watchCtx, stopWatch := context.WithCancel(context.Background())
			go func() {
				reached <- awaitReached(watchCtx, node)
			}()
			start := time.Now()
			_, err = extract(t, &Evaluator{Nix: nix, Timeout: timeout}, node)
			if elapsed := time.Since(start); elapsed > timeout+20*time.Second {
				t.Errorf("took %s to stop after a timeout of %s", elapsed, timeout)
			}
			stopWatch()
			requireNixGone(t, log, "the timeout")
			if <-reached {
				return err
			}
			// Not reached: stopped before the node's task, which names the
			// file alone, or in it before nix opened the pipe.
			byFile := fmt.Sprintf("eval file $T/slow.nix: nix did not finish within %s; raise --timeout", timeout)
			byNode := fmt.Sprintf("eval node slow (file $T/slow.nix): nix did not finish within %s; raise --timeout", timeout)
			if err == nil || (replaceTempDirs(err.Error()) != byFile && replaceTempDirs(err.Error()) != byNode) {
				t.Errorf("nix never reached the node within %s:\n got  %v\n want %s\n or   %s", timeout, err, byFile, byNode)
			}
		}
		return err
	}, want: map[string]string{
		"2.8 2.24 2.26 2.31": "eval node slow (file $T/slow.nix): nix did not finish within $TIMEOUT; raise --timeout",
	}, vars: func() []string { return []string{"$TIMEOUT", timeout.String()} }}
}

// gitFlake evaluates node of a flake in hosts/, a git work tree whose
// tracked files import what git does not track, ignores, or nobody wrote,
// or throw.
func gitFlake(node string) func(t *testing.T, dir string) error {
	return func(t *testing.T, dir string) error {
		repo := fixture.NewRepoAt(t, filepath.Join(dir, "hosts"))
		repo.Write("flake.nix", `{ outputs = { self }: { nixosConfigurations = builtins.mapAttrs (name: _: { config = import (./hosts + "/${name}"); }) (builtins.readDir ./hosts); }; }`)
		repo.Write("hosts/x/default.nix", `{ systemd.services = import ./extra.nix; }`)
		repo.Write("hosts/x/extra.nix", `{ }`)
		repo.Write("hosts/ignored/default.nix", `{ systemd.services = import ./local.nix; }`)
		repo.Write("hosts/ignored/local.nix", `{ }`)
		repo.Write(".gitignore", "local.nix\n")
		repo.Write("hosts/gone/default.nix", `{ systemd.services = import ./gone.nix; }`)
		repo.Write("hosts/throws/default.nix", `{ systemd.services = throw "the host refuses"; }`)
		repo.Add("flake.nix", ".gitignore", "hosts/x/default.nix", "hosts/ignored/default.nix", "hosts/gone/default.nix", "hosts/throws/default.nix")
		s, err := FlakeSource(repo.Dir + "#" + node)
		if err != nil {
			return err
		}
		_, err = extract(t, evaluator(t), []Source{s})
		return err
	}
}

// flakeOf evaluates node x of a flake in a git work tree of its own,
// name, whose flake.nix is text (NO_SUCH_INPUT: a folder that does not
// exist).
func flakeOf(name, text string) func(t *testing.T, dir string) error {
	return func(t *testing.T, dir string) error {
		repo := fixture.NewRepoAt(t, filepath.Join(dir, name))
		repo.Write("flake.nix", strings.ReplaceAll(text, "NO_SUCH_INPUT", filepath.Join(dir, "no-such-input")))
		repo.Add("flake.nix")
		s, err := FlakeSource(repo.Dir + "#x")
		if err != nil {
			return err
		}
		_, err = extract(t, evaluator(t), []Source{s})
		return err
	}
}

// lockFlake evaluates a flake with an input, in a git work tree (but for
// "path", a path: flake), whose flake.lock is missing, untracked, or
// lacks an input that flake.nix has.
func lockFlake(name string) func(t *testing.T, dir string) error {
	return func(t *testing.T, dir string) error {
		input := func(names ...string) string {
			var b strings.Builder
			for _, n := range names {
				b.WriteString(`inputs.` + n + ` = { url = "path:` + filepath.Join(dir, "input") + `"; flake = false; }; `)
			}
			return `{ ` + b.String() + `outputs = { self, ... }: { nixosConfigurations.x = { config = { }; }; }; }`
		}
		if err := os.MkdirAll(filepath.Join(dir, "input"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "input", "default.nix"), []byte("{ }"), 0o644); err != nil {
			t.Fatal(err)
		}
		flake := filepath.Join(dir, name)
		ref := flake + "#x"
		if name == "path" {
			if err := os.MkdirAll(flake, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(flake, "flake.nix"), []byte(input("a")), 0o644); err != nil {
				t.Fatal(err)
			}
			ref = "path:" + ref
		} else {
			repo := fixture.NewRepoAt(t, flake)
			repo.Write("flake.nix", input("a"))
			repo.Add("flake.nix")
			switch name {
			case "untracked":
				repo.Lock(".")
				repo.Git("rm", "--quiet", "--cached", "flake.lock")
			case "stale":
				repo.Lock(".")
				repo.Write("flake.nix", input("a", "b"))
				repo.Add("flake.nix")
			}
		}
		s, err := FlakeSource(ref)
		if err != nil {
			return err
		}
		_, err = extract(t, evaluator(t), []Source{s})
		return err
	}
}

// moduleSystemNode evaluates a node of host.nix and more through nixpkgs'
// lib; without the lib the case is skipped (failed under CI).
func moduleSystemNode(more map[string]string) func(t *testing.T, dir string) error {
	return func(t *testing.T, dir string) error {
		fixture.NixpkgsLib(t)
		node := fixture.ModuleNode(t, "{ lib, ... }: {\n  networking.hostName = \"web\";\n  systemd.services.web = { };\n}\n", more)
		_, err := extract(t, evaluator(t), mustSources(t, FileSource, node))
		if err != nil && strings.Contains(err.Error(), "modules.nix") {
			t.Errorf("the error points into nixpkgs' lib: %s", err)
		}
		return err
	}
}

// oldNix is the nix of the tests, but saying it is release version.
func oldNix(t *testing.T, version string) (nix, log string) {
	real, log := countingNix(t)
	nix = filepath.Join(t.TempDir(), "nix")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'nix (Nix) " + version + "'; exit 0; fi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(nix, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return nix, log
}

// TestErrorTable evaluates one node of each kind of error and compares the
// whole one-line error with what the nix of the tests is expected to give.
func TestErrorTable(t *testing.T) {
	requireNix(t)
	files := map[string]string{
		"flake/flake.nix": `{ outputs = { self }: { nixosConfigurations.web = { config = { }; }; }; }`,
	}
	for name, text := range errorFiles {
		files[name] = text
	}
	dir := writeTree(t, files)
	for _, c := range errorCases() {
		t.Run(c.name, func(t *testing.T) {
			want := nixtest.Pick(t, c.want)
			var err error
			file := filepath.Join(dir, c.file)
			if c.run != nil {
				err = c.run(t, dir)
			} else {
				_, err = extract(t, evaluator(t), mustSources(t, FileSource, filepath.Join(dir, "ok.nix"), file))
			}
			if err == nil {
				t.Fatal("no error")
			}
			vars := []string{"$F", file, "$D", dir}
			if c.vars != nil {
				vars = append(vars, c.vars()...)
			}
			want = strings.NewReplacer(vars...).Replace(want)
			// The files of some cases are in folders of their own: $T.
			got := replaceTempDirs(err.Error())
			want = replaceTempDirs(want)
			if got != want {
				t.Errorf("on nix %s:\n got  %s\n want %s", nixtest.NixVersion(t), got, want)
			}
			var ee *EvalError
			if c.kind != "" {
				if !errors.As(err, &ee) {
					t.Fatalf("err = %#v, want an EvalError", err)
				}
				if ee.Kind != c.kind {
					t.Errorf("kind = %s, want %s", ee.Kind, c.kind)
				}
				if !reflect.DeepEqual(ee.Assertions, c.assertions) {
					t.Errorf("assertions = %q, want %q", ee.Assertions, c.assertions)
				}
			}
		})
	}
}

// TestErrorTableNamesEveryRelease: each case of TestErrorTable says what
// every release the tests run on prints.
func TestErrorTableNamesEveryRelease(t *testing.T) {
	for _, c := range errorCases() {
		if err := nixtest.NamesEachRelease(c.want); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// replaceTempDirs writes every temporary folder of a test as $T, for the
// cases whose files are in folders of their own.
func replaceTempDirs(s string) string {
	for {
		i := strings.Index(s, os.TempDir()+"/")
		if i < 0 {
			return s
		}
		end := i + len(os.TempDir()) + 1
		for end < len(s) && s[end] != ' ' && s[end] != ':' {
			end++
		}
		file := filepath.Base(s[i:end])
		s = s[:i] + "$T/" + file + s[end:]
	}
}

// TestChangesAfter reads the changes of a flake.lock as nix 2.8 and 2.24
// list them after their warning, up to the end of the list.
func TestChangesAfter(t *testing.T) {
	text := `warning: not writing modified lock file of flake 'git+file:///src/hosts':
• Updated input 'nixpkgs':
    'github:NixOS/nixpkgs/0a1b?narHash=sha256-x' (2026-01-01)
  → 'github:NixOS/nixpkgs/2c3d?narHash=sha256-y' (2026-02-01)
• Added input 'k8s-pod':
    'path:/src/k8s-pod?lastModified=1&narHash=sha256-z' (2026-02-01)
• Removed input 'old'
warning: Git tree '/src/hosts' is dirty
• Added input 'not-this-one':`
	lines := strings.Split(text, "\n")
	got := strings.Join(changesAfter(lines[1:]), ", ")
	if want := "changed input nixpkgs, added input k8s-pod, dropped input old"; got != want {
		t.Errorf("changes %q, want %q", got, want)
	}
}
