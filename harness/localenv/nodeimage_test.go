package localenv

import (
	"slices"
	"strings"
	"testing"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/kubenode"
)

// TestNodeImageUnits: the stand-in image has a unit for each unit of the
// node; a unit of the lists starts only in the pods its list permits
// (a condition per permitted role, any of which will do), a shared unit
// in every pod of the node's image, a unit of the platform anywhere, and
// a switched-off unit nowhere (it is not wanted).
func TestNodeImageUnits(t *testing.T) {
	n := 2
	node := &facts.Node{
		Name: "mastodon",
		Units: map[string]facts.Unit{
			"mastodon-web": {Enable: true}, "mastodon-sidekiq-all": {Enable: true}, "node-exporter": {Enable: true},
			"nscd": {Enable: true}, "redis": {Enable: false}, "mastodon-media-auto-remove": {Enable: true},
			"mastodon-init-dirs": {Enable: true}, "openbao-agent": {Enable: true}, "lldap-publish-roles": {Enable: true},
		},
		PodRoles: facts.PodRoles{
			MainUnits: []string{"mastodon-web", "mastodon-media-auto-remove", "mastodon-init-dirs"}, SharedUnits: []string{"node-exporter"},
			Roles: map[string]facts.Role{
				"sidekiq": {Replicas: &n, Units: []string{"mastodon-sidekiq-all"}},
				// not requested: its units are in no pod of it
				"idle": {Units: []string{"mastodon-web"}},
			},
		},
	}
	img := NodeImage(node, "localhost/podroles-node:x", "base.tar")
	file := func(name string) *kubenode.File {
		i := slices.IndexFunc(img.Files, func(f kubenode.File) bool { return f.Name == name })
		if i < 0 {
			return nil
		}
		return &img.Files[i]
	}
	conditions := func(unit string) []string {
		f := file(unitsDir + "/" + unit + ".service")
		if f == nil {
			t.Fatalf("no unit %s in the image", unit)
		}
		var out []string
		for _, line := range strings.Split(string(f.Data), "\n") {
			if c, ok := strings.CutPrefix(line, "ConditionPathExists="); ok {
				out = append(out, c)
			}
		}
		return out
	}
	for unit, want := range map[string][]string{
		"mastodon-web":         {"|/etc/podrole/main"},
		"mastodon-sidekiq-all": {"|/etc/podrole/sidekiq"},
		"node-exporter":        {"|/etc/podrole/main", "|/etc/podrole/sidekiq"},
		"nscd":                 nil,
		"redis":                nil,
	} {
		if got := conditions(unit); !slices.Equal(got, want) {
			t.Errorf("%s: conditions %q, want %q", unit, got, want)
		}
		wanted := file(unitsDir + "/multi-user.target.wants/" + unit + ".service")
		if (wanted != nil) != node.Units[unit].Enable || (wanted != nil && wanted.Symlink != "/"+unitsDir+"/"+unit+".service") {
			t.Errorf("%s (enable %v): wanted by multi-user.target as %+v", unit, node.Units[unit].Enable, wanted)
		}
	}
	// A unit a timer starts: only its timer is wanted, by timers.target,
	// with no condition; the unit keeps its own, and runs once.
	if file(unitsDir+"/multi-user.target.wants/mastodon-media-auto-remove.service") != nil {
		t.Error("a timer-started unit is wanted by multi-user.target")
	}
	timer := file(unitsDir + "/mastodon-media-auto-remove.timer")
	if timer == nil || !strings.Contains(string(timer.Data), "[Timer]\nOnActiveSec=") || strings.Contains(string(timer.Data), "Condition") {
		t.Errorf("the timer: %+v", timer)
	}
	if w := file(unitsDir + "/timers.target.wants/mastodon-media-auto-remove.timer"); w == nil || w.Symlink != "/"+unitsDir+"/mastodon-media-auto-remove.timer" {
		t.Errorf("the timer is not wanted by timers.target: %+v", w)
	}
	if got := conditions("mastodon-media-auto-remove"); !slices.Equal(got, []string{"|/etc/podrole/main"}) {
		t.Errorf("the timer-started unit's conditions: %q", got)
	}
	for unit, want := range map[string]string{
		"mastodon-init-dirs":         "Type=oneshot\nExecStart=/bin/true",
		"mastodon-media-auto-remove": "Type=oneshot\nExecStart=/bin/true",
		"mastodon-sidekiq-all":       "Requires=mastodon-init-dirs.service\nAfter=mastodon-init-dirs.service",
		// The platform's agent runs in a pod given its configuration.
		"openbao-agent": "if [ -e " + nodeAgentConfig + " ]; then exec " + nodeAgentProgram + " agent -config=" + nodeAgentConfig + "; fi; exec sleep infinity",
		// So does the stand-in of lldap-publish-roles, which never
		// reaches a failed state (US2-11).
		"lldap-publish-roles": "StartLimitIntervalSec=0\n\n[Service]\nExecStart=/bin/sh -c 'if [ -e " + publishRolesConfig + " ]; then exec /podroles/podroles publish-roles --config=" + publishRolesConfig + "; fi; exec sleep infinity'\nRestart=always",
	} {
		if !strings.Contains(string(file(unitsDir+"/"+unit+".service").Data), want) {
			t.Errorf("%s: no %q in\n%s", unit, want, file(unitsDir+"/"+unit+".service").Data)
		}
	}
	if !strings.Contains(string(file(unitsDir+"/nscd.service").Data), "ExecStart=/bin/sleep infinity") {
		t.Errorf("a stand-in unit does something: %s", file(unitsDir+"/nscd.service").Data)
	}
	// Another node's units, another image.
	node.PodRoles.MainUnits = append(node.PodRoles.MainUnits, "nscd")
	if NodeImage(node, "localhost/podroles-node:x", "base.tar").Ref == img.Ref {
		t.Errorf("the image's name does not follow its units: %s", img.Ref)
	}
}
