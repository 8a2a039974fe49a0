package facts

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseDocumentErrors(t *testing.T) {
	cases := []struct{ doc, want string }{
		{`nope`, "not valid JSON"},
		{`[]`, "want a facts document"},
		{`{"nodes": []}`, `no "version"`},
		{`{"version": 2, "nodes": []}`, "facts version 2: this podroles reads version 1 only"},
		{`{"version": 1}`, "nodes: want a list of nodes, got nothing"},
		{`{"version": 1, "nodes": [{}]}`, "nodes[0]: name: a node needs a name"},
		{`{"version": 1, "nodes": [{"name": "a", "units": []}]}`, "node a: systemd.services: want an attribute set, got a list"},
		{`{"version": 1, "nodes": [{"name": "a", "units": {"x": {"enable": "yes"}}}]}`, `node a: systemd.services.x.enable: want true or false, got the string "yes"`},
		{`{"version": 1, "nodes": [{"name": "a", "units": {"x.service": 1}}]}`, `node a: systemd.services."x.service": want an attribute set, got the number 1`},
		{`{"version": 1, "nodes": [{"name": "a", "podRoles": {"roles": {"r": {"ports": [{"port": 1.5}]}}}}]}`, "node a: fediversity.podRoles.roles.r.ports[0].port: want an integer, got the number 1.5"},
		{`{"version": 1, "nodes": [{"name": "a", "podRoles": {"roles": {"r": {"metrics": {"port": 9, "path": 3}}}}}]}`, "node a: fediversity.podRoles.roles.r.metrics.path: want a string, got the number 3"},
		{`{"version": 1, "nodes": [{"name": "a", "firewall": {"interfaces": {"eth0": {"allowedTCPPortRanges": [{"from": 1}]}}}}]}`, "node a: networking.firewall.interfaces.eth0.allowedTCPPortRanges[0].to: want an integer, got nothing"},
		{`{"version": 1, "nodes": [{"name": "a", "lldap": {"tls": {"caFile": false}}}]}`, "node a: fediversity.lldap.tls.caFile: want a string, got false"},
		{`{"version": 1, "nodes": [{"name": "a", "podRoles": {"roles": {"r": {"secrets": {"s": {"parameters": []}}}}}}]}`, "node a: fediversity.podRoles.roles.r.secrets.s.parameters: want an attribute set, got a list"},
		{`{"version": 1, "nodes": [{"name": "a", "k8sPod": {"addedUnits": "x"}}]}`, "node a: k8sPod.addedUnits: want a list, got the string"},
		{`{"version": 1, "nodes": [{"name": "a", "k8sPod": {"conditionOnlyUnits": ["x"], "condition": [1]}}]}`, "node a: k8sPod.condition[0]: want a string, got the number 1"},
		{`{"version": 1, "nodes": [{"name": "a", "definitions": [{"path": ["x"], "defs": [{"file": "/f.nix", "line": "3"}]}]}]}`, `node a: definitions[0].defs[0].line: want an integer, got the string "3"`},
		{`{"version": 1, "nodes": [{"name": "a", "listsProbe": {"roles": [1]}}]}`, "node a: listsProbe.roles[0]: want a string, got the number 1"},
		{`{"version": 1, "nodes": [{"name": "a", "podRoles": {"services": {"s": {"variables": {"X": 1}}}}}]}`, "node a: fediversity.podRoles.services.s.environment.X: want a string, got the number 1"},
		{`{"version": 1, "nodes": [{"name": "a", "podRoles": {"services": {"s": {"variables": {"X": {"notAString": "derivation"}}}}}}]}`, "node a: fediversity.podRoles.services.s.environment.X: want a string (Kubernetes gives an image's variables as strings), got a derivation"},
	}
	for _, c := range cases {
		_, err := ParseDocument([]byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\n got  %v\n want %s", c.doc, err, c.want)
		}
	}
}

func TestParseDocumentDefaults(t *testing.T) {
	if _, err := ParseDocument([]byte(`{"version": 1, "nodes": [{"name": "bare"}]}`)); err == nil || err.Error() != "node bare: podRoles: missing; podroles facts writes it for every node, empty when the node sets none" {
		t.Errorf("a node without podRoles: %v", err)
	}
	doc, err := ParseDocument([]byte(`{"version": 1, "nodes": [{"name": "bare", "podRoles": {}, "futureField": {"x": 1}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	n := doc.Nodes[0]
	if !n.Firewall.Enable || n.LLDAP.Host != "localhost" || n.Authelia.Host != "localhost" || n.K8sPod.Enable || n.HasRequest() {
		t.Errorf("defaults: %+v", n)
	}
}

// TestFactsRoundTrip reads the JSON that podroles facts writes back to the
// same facts.
func TestFactsRoundTrip(t *testing.T) {
	replicas := 2
	field, tmpl := "value", "{{ .Data.x }}"
	in := &Document{Version: FactsVersion, Nodes: []*Node{{
		Name: "n", Source: "file:n.nix",
		Units:           map[string]Unit{"a": {Enable: true}, "b": {}},
		ModularServices: []string{"lldap"},
		StateMigrations: []string{},
		Firewall: Firewall{Enable: true, PortLists: PortLists{
			AllowedTCPPorts: []int{80}, AllowedUDPPorts: []int{},
			AllowedTCPPortRanges: []PortRange{{From: 1, To: 2}}, AllowedUDPPortRanges: []PortRange{},
		}, Interfaces: map[string]PortLists{}},
		PodRoles: PodRoles{
			Roles: map[string]Role{"r": {
				Replicas: &replicas, Units: []string{"a"}, Ports: []Port{{Port: 80, Protocol: "TCP"}},
				Metrics: &Metrics{Port: 9, Path: "/m"},
				Secrets: map[string]Secret{"s": {Path: "p", Field: &field, Template: &tmpl, Parameters: map[string]any{"ttl": "1h"}}},
			}},
			MainUnits: []string{"b"}, SharedUnits: []string{},
			Services: map[string]Service{"lldap": {Environment: []string{"X", "Y"}, Variables: map[string]string{"X": "1", "Y": ""}}, "old": {Environment: []string{"Z"}}},
		},
		K8sPod: K8sPod{Enable: true, PlatformUnits: []string{}, AddedUnits: []string{"c"},
			ConditionOnlyUnits: []string{"d"}, Condition: []string{"unitConfig.ConditionPathExists"}},
		ListsProbe: &ListsProbe{Roles: []string{"r"}, SharedUnits: true, K8sPodModuleSkipped: true},
		Definitions: []Located{
			{OptionRef: OptionRef{Path: []string{"fediversity", "podRoles", "mainUnits"}, Holds: "b"}, Defs: []Definition{{Location: Location{File: "/h.nix", Line: 3, Column: 5}, Priority: 100}}},
			{OptionRef: OptionRef{Path: []string{"fediversity", "podRoles", "roles", "r", "ports"}, Port: &Port{Port: 80, Protocol: "TCP"}}, Defs: []Definition{{Location: Location{File: "/m.nix"}, Priority: 1000, Lost: true, OfNixOS: true}}},
		},
		LLDAP:    LLDAP{Host: "h"},
		Authelia: Authelia{Host: "a", Storage: AutheliaStorage{Local: &LocalStorage{Path: "/var/lib/x"}}},
	}}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseDocument(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		a, _ := json.Marshal(out)
		t.Errorf("round trip changed the facts:\n in  %s\n out %s", data, a)
	}
}

// FuzzParseDocument feeds arbitrary JSON to the parser: it never panics,
// and what it accepts survives a round trip unchanged.
func FuzzParseDocument(f *testing.F) {
	f.Add([]byte(`{"version": 1, "nodes": [{"name": "a", "units": {"x": {"enable": false}}, "podRoles": {"roles": {"r": {"replicas": 1, "ports": [{"port": 80}], "secrets": {"s": {"path": "p", "parameters": {"a": [1, {"b": null}]}}}}}}}]}`))
	f.Add([]byte(`{"version": 1, "nodes": [{"name": "b", "firewall": {"enable": false, "interfaces": {"e": {"allowedUDPPortRanges": [{"from": 1, "to": 9}]}}}}]}`))
	f.Add([]byte(`{"version": 1, "nodes": [{"name": "c", "authelia": {"storage": {"local": {"path": "/x"}}}, "lldap": {"tls": {"enable": true}}}]}`))
	f.Add([]byte(`{"version":1,"nodes":[{"name":"\u0000","units":{"":{}}}]}`))
	f.Add([]byte(`{"version": 1, "nodes": [{"name": "d", "podRoles": {"services": {"s": {"environment": ["A"], "variables": {"A": "x", "B": ""}}}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := ParseDocument(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") && !strings.Contains(string(data), "\n") {
				t.Errorf("multi-line error: %q", err)
			}
			return
		}
		again, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("marshal accepted facts: %v", err)
		}
		doc2, err := ParseDocument(again)
		if err != nil {
			t.Fatalf("re-reading printed facts: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(doc, doc2) {
			t.Fatalf("round trip changed the facts:\n%s", again)
		}
	})
}

// TestMarshal: facts made in Go, with nil lists and attribute sets, read
// back with the same meaning.
func TestMarshal(t *testing.T) {
	replicas := 1
	in := &Document{Version: FactsVersion, Nodes: []*Node{{Name: "n", PodRoles: PodRoles{Roles: map[string]Role{"r": {Replicas: &replicas, Secrets: map[string]Secret{"s": {Path: "p"}}}}}}}}
	data, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseDocument(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	r := out.Nodes[0].PodRoles.Roles["r"]
	if *r.Replicas != 1 || r.Service != nil || r.Secrets["s"].Path != "p" || r.Secrets["s"].Field != nil || len(r.Units) != 0 {
		t.Errorf("read back: %+v", out.Nodes[0])
	}
}

// A node that lib.mkCheck could not evaluate stands beside the others,
// named, with the reason the document gives.
func TestParseDocumentNotEvaluated(t *testing.T) {
	doc, bad, err := ParseDocumentEach([]byte(`{"version": 1, "nodes": [
	  {"name": "web", "source": "nixosConfigurations.web", "notEvaluated": "it threw"},
	  {"name": "ok", "source": "nixosConfigurations.ok", "units": {}, "podRoles": {"mainUnits": [], "sharedUnits": [], "roles": {}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var ne *NotEvaluatedError
	if len(doc.Nodes) != 1 || doc.Nodes[0].Name != "ok" || len(bad) != 1 || bad[0].Node != "web" || bad[0].Source != "nixosConfigurations.web" || !errors.As(bad[0], &ne) || ne.Reason != "it threw" {
		t.Errorf("got nodes %v, bad %v", doc.Nodes, bad)
	}
}
