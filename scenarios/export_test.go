package scenarios

import (
	"context"
	"encoding/json"
	"io"
	"net/url"

	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// LocateDatabase is locateDatabase for the package's external tests: where
// the URL that pod (of role) reads leads, as pod and role of the node
// (empty when none serves it) and the report's words.
func LocateDatabase(ctx context.Context, w world.World, pod inventory.Endpoint, role, rawURL string) (inPod, ofRole, where string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", "", err
	}
	place, err := locateDatabase(ctx, &State{World: w, Inv: w.Inventory()}, pod, role, u)
	if err != nil {
		return "", "", "", err
	}
	return place.Pod, place.Role, place.Where, nil
}

// AskProbe runs the probe in this process, as podroles probe runs in a
// pod, and asks it, over its stdin and stdout, for the bind of inv's ldap
// contract at the role's Service, with the contract's files read where the
// suites read them. change, when set, changes the question first.
func AskProbe(ctx context.Context, inv *inventory.Inventory, change func(q map[string]any)) (found string, answer error, err error) {
	s := &State{World: world.Files(inv), Inv: inv}
	ca, err := contractCAPEM(ctx, s)
	if err != nil {
		return "", nil, err
	}
	addr, err := world.Addr(*inv.Roles[inv.LDAP.Role].Service, inv.LDAP.Port)
	if err != nil {
		return "", nil, err
	}
	bind, err := contractBind(ctx, s, addr, ca)
	if err != nil {
		return "", nil, err
	}
	question, _ := json.Marshal(probeQuestion{Bind: bind})
	if change != nil {
		var q map[string]any
		json.Unmarshal(question, &q)
		change(q["bind"].(map[string]any))
		question, _ = json.Marshal(q)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- ServeProbe(ctx, inR, outW, ProbeIdle)
		outW.Close()
	}()
	go func() {
		inW.Write(append(question, '\n'))
		inW.Close()
	}()
	var a probeAnswer
	if err := json.NewDecoder(outR).Decode(&a); err != nil {
		return "", nil, err
	}
	io.Copy(io.Discard, outR)
	if err := <-served; err != nil {
		return "", nil, err
	}
	return a.Found, a.err(), nil
}
