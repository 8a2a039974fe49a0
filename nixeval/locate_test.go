package nixeval

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/fixture"
)

// moduleNode writes files of a node evaluated through the module system of
// nixpkgs' real lib (the NixOS stand-in of testdata/modules), whose
// node.nix is the system of the modules given, and returns the folder.
func moduleNode(t *testing.T, files map[string]string, modules string) string {
	t.Helper()
	fixture.NixpkgsLib(t)
	nixos := filepath.Join(fixture.RepoRoot(t), "testdata", "modules", "nixos")
	files["node.nix"] = `(import ` + nixos + ` { }).nixosSystem { modules = [ ` + modules + ` ]; }`
	return writeTree(t, files)
}

func locate(t *testing.T, ev *Evaluator, node facts.NodeRef, refs ...facts.OptionRef) [][]facts.Definition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	found, err := ev.Locate(ctx, map[facts.NodeRef][]facts.OptionRef{node: refs})
	if err != nil {
		t.Fatal(err)
	}
	if len(found[node]) != len(refs) {
		t.Fatalf("located %d of %d references: %v", len(found[node]), len(refs), found)
	}
	return found[node]
}

func def(file string, line, column, priority int, lost bool) facts.Definition {
	return facts.Definition{Location: facts.Location{File: file, Line: line, Column: column}, Priority: priority, Lost: lost}
}

var (
	mainUnits = []string{"fediversity", "podRoles", "mainUnits"}
	webRole   = []string{"fediversity", "podRoles", "roles", "web"}
)

// TestLocateModuleSystem locates definitions as a host of several modules
// writes them: the file of each from options.<path>.definitionsWithLocations,
// the line and column of the name from the value (below an option) or from
// the module read again (an option's own name), the definition that lost to
// a higher priority, and none under a false mkIf.
func TestLocateModuleSystem(t *testing.T) {
	requireNix(t)
	dir := moduleNode(t, map[string]string{
		"base.nix": `{ lib, ... }:
{
  fediversity.podRoles.mainUnits = lib.mkDefault [ "app-web" ];
  fediversity.podRoles.roles.web = {
    replicas = 1;
    units = [ "app-worker" ];
    ports = lib.mkDefault [ { port = 80; } ];
  };
}
`,
		"host/default.nix": `{ config, lib, ... }:
{
  imports = [ ../base.nix ];
  config = lib.mkMerge [
    {
      networking.hostName = "host";
      systemd.services = { app-web = { }; app-worker = { }; };
    }
    { fediversity.podRoles.mainUnits = [ "app-web" "app-wbe" ]; }
    (lib.mkIf false { fediversity.podRoles.mainUnits = [ "never" ]; })
    {
      fediversity.podRoles.roles.web.ports = [
        { port = 443; }
        { port = 8443; protocol = "UDP"; }
      ];
    }
  ];
}
`,
	}, "./host")

	ev := evaluator(t)
	nodes, err := extract(t, ev, mustSources(t, FileSource, filepath.Join(dir, "node.nix")))
	if err != nil {
		t.Fatal(err)
	}
	host, base := filepath.Join(dir, "host", "default.nix"), filepath.Join(dir, "base.nix")
	udp := facts.Port{Port: 8443, Protocol: facts.ProtocolUDP}
	got := locate(t, ev, nodes[0].Ref(),
		facts.OptionRef{Path: mainUnits, Holds: "app-wbe"},
		facts.OptionRef{Path: append(webRole, "ports"), Port: &udp},
		facts.OptionRef{Path: []string{"systemd", "services", "app-worker"}},
		facts.OptionRef{Path: []string{"networking", "hostName"}},
		facts.OptionRef{Path: append(webRole, "units"), Holds: "app-worker"},
		facts.OptionRef{Path: append(webRole, "metrics", "port")},
		facts.OptionRef{Path: []string{"fediversity", "podRoles", "roles", "nothing"}},
		facts.OptionRef{},
	)
	want := [][]facts.Definition{
		{def(host, 9, 7, 100, false), def(base, 3, 3, 1000, true)},
		{def(host, 14, 11, 100, false), def(base, 7, 5, 1000, true)},
		{def(host, 7, 43, 100, false)},
		{def(host, 6, 7, 100, false)},
		{def(base, 6, 5, 100, false)},
		{},
		{},
		{def(filepath.Join(dir, "node.nix"), 0, 0, 100, false)},
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("reference %d:\n got  %+v\n want %+v", i, got[i], want[i])
		}
	}
}

// TestLocatePlainConfig: a file whose value is a config has no options:
// the positions are those of its attribute sets.
func TestLocatePlainConfig(t *testing.T) {
	requireNix(t)
	dir := writeTree(t, map[string]string{"plain.nix": `{
  networking.hostName = "plain";
  systemd.services.web = { };
  fediversity.podRoles.roles.web = {
    units = [ "web" ];
    ports = [ { port = 80; } { port = 443; } ];
  };
}
`})
	ev := evaluator(t)
	nodes, err := extract(t, ev, mustSources(t, FileSource, filepath.Join(dir, "plain.nix")))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "plain.nix")
	port := facts.Port{Port: 443, Protocol: facts.ProtocolTCP}
	got := locate(t, ev, nodes[0].Ref(),
		facts.OptionRef{Path: append(webRole, "units"), Holds: "web"},
		facts.OptionRef{Path: append(webRole, "ports"), Port: &port},
		facts.OptionRef{Path: []string{"systemd", "services", "web"}},
		facts.OptionRef{Path: mainUnits},
	)
	want := [][]facts.Definition{
		{def(file, 5, 5, 100, false)},
		{def(file, 6, 32, 100, false)},
		{def(file, 3, 3, 100, false)},
		{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestLocateAsksNixNothingWithoutQueries: a report without findings asks
// nothing, and so runs no nix at all.
func TestLocateAsksNixNothingWithoutQueries(t *testing.T) {
	ev := &Evaluator{Nix: filepath.Join(t.TempDir(), "no-nix")}
	found, err := ev.Locate(context.Background(), map[facts.NodeRef][]facts.OptionRef{{Name: "x", Source: "file:x.nix"}: {{Path: mainUnits}}})
	if err != nil || len(found) != 0 {
		t.Fatalf("found %v, err %v; want nothing, and no nix run for a node this evaluator did not read", found, err)
	}
}

// TestLocateFromFacts: a node of a facts document that carries definitions
// (lib.mkCheck's, the node module's) is located from them alone, with no
// nix: a reference it carries gets its definitions, one it does not gets
// none.
func TestLocateFromFacts(t *testing.T) {
	at := facts.Definition{Location: facts.Location{File: "/h/roles.nix", Line: 3, Column: 5}, Priority: 100}
	port := facts.Port{Port: 443, Protocol: "TCP"}
	dir := writeTree(t, map[string]string{"facts.json": `{"version": 1, "nodes": [{"name": "web", "source": "nixosConfigurations.web", "podRoles": {},
	  "definitions": [
	    {"path": ["fediversity", "podRoles", "mainUnits"], "holds": "webb", "defs": [{"file": "/h/roles.nix", "line": 3, "column": 5, "priority": 100, "lost": false, "ofNixOS": false}]},
	    {"path": ["fediversity", "podRoles", "roles", "r", "ports"], "port": {"port": 443, "protocol": "TCP"}, "defs": [{"file": "/h/r.nix", "line": null, "column": null, "priority": 100}]}
	  ]}]}`})
	ev := &Evaluator{Nix: filepath.Join(t.TempDir(), "no-nix")}
	nodes, err := ev.Load(context.Background(), []Source{{Kind: SourceFacts, Path: filepath.Join(dir, "facts.json"), Display: "facts.json"}})
	if err != nil {
		t.Fatal(err)
	}
	got := locate(t, ev, nodes[0].Ref(),
		facts.OptionRef{Path: mainUnits, Holds: "webb"},
		facts.OptionRef{Path: mainUnits, Holds: "web"},
		facts.OptionRef{Path: []string{"fediversity", "podRoles", "roles", "r", "ports"}, Port: &port},
	)
	want := [][]facts.Definition{{at}, nil, {{Location: facts.Location{File: "/h/r.nix"}, Priority: 100}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestLocateFallsBackWithoutReadingModules: a definition that lost, whose
// value nix never forced and that aborts when forced, breaks reading the
// modules again; the locations still come, from what options keep.
func TestLocateFallsBackWithoutReadingModules(t *testing.T) {
	requireNix(t)
	dir := moduleNode(t, map[string]string{
		"host.nix": `{ lib, ... }:
{
  networking.hostName = "host";
  systemd.services.web = { };
  fediversity.podRoles.mainUnits = [ "web" ];
  fediversity.podRoles.sharedUnits = lib.mkDefault (builtins.abort "never forced by the module system");
  fediversity.podRoles.roles.web.units = [ "wbe" ];
}
`,
		"shared.nix": `{ fediversity.podRoles.sharedUnits = [ ]; }`,
	}, "./host.nix ./shared.nix")
	ev := evaluator(t)
	nodes, err := extract(t, ev, mustSources(t, FileSource, filepath.Join(dir, "node.nix")))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "host.nix")
	got := locate(t, ev, nodes[0].Ref(),
		facts.OptionRef{Path: append(webRole, "units"), Holds: "wbe"},
		facts.OptionRef{Path: []string{"fediversity", "podRoles", "sharedUnits"}},
	)
	want := [][]facts.Definition{
		{def(file, 7, 3, 100, false)},
		// The option's own name needs the modules read again: the file only.
		{def(filepath.Join(dir, "shared.nix"), 0, 0, 100, false)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestLocateFlakeGivesCheckoutFiles: the files of a flake's nodes are in
// the store copy of its source; podroles gives them as the files of the
// checkout, whatever folder of the work tree the flake is in, and the
// k8s-pod module of the checkout as its own file.
func TestLocateFlakeGivesCheckoutFiles(t *testing.T) {
	requireNix(t)
	repo := fixture.HostsFlake(t)
	s, err := FlakeSource(filepath.Join(repo.Dir, "deploy") + "#mastodon")
	if err != nil {
		t.Fatal(err)
	}
	ev := &Evaluator{Nix: requireNix(t), K8sPodModule: filepath.Join(repo.Dir, "k8s-pod.nix")}
	nodes, err := extract(t, ev, []Source{s})
	if err != nil {
		t.Fatal(err)
	}
	got := locate(t, ev, nodes[0].Ref(),
		facts.OptionRef{Path: mainUnits, Holds: "mastodon-cleanup"},
		facts.OptionRef{Path: []string{"systemd", "services", "mastodon-web"}},
		facts.OptionRef{Path: []string{"fediversity", "k8sPod", "platformUnits"}},
		facts.OptionRef{},
	)
	want := [][]facts.Definition{
		{def(filepath.Join(repo.Dir, "site", "mastodon", "roles.nix"), 1, 3, 100, false)},
		// The node's module first, then the k8s-pod module's condition.
		{def(filepath.Join(repo.Dir, "hosts", "mastodon", "mastodon.nix"), 38, 9, 100, false), def(filepath.Join(repo.Dir, "k8s-pod.nix"), 19, 3, 100, false)},
		{def(filepath.Join(repo.Dir, "k8s-pod.nix"), 15, 5, 100, false)},
		{def(filepath.Join(repo.Dir, "deploy", "flake.nix"), 0, 0, 100, false)},
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("reference %d:\n got  %+v\n want %+v", i, got[i], want[i])
		}
	}
	for _, defs := range got {
		for _, d := range defs {
			if strings.HasPrefix(d.File, "/nix/store/") {
				t.Errorf("%s is the store's copy, not the checkout's file", d.File)
			}
		}
	}
}
