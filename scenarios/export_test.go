package scenarios

import (
	"context"
	"net/url"

	"github.com/fediversity/podroles/scenarios/inventory"
)

// LocateDatabase is locateDatabase for the package's external tests: where
// the URL that pod (of role) reads leads, as pod and role of the node
// (empty when none serves it) and the report's words.
func LocateDatabase(ctx context.Context, inv *inventory.Inventory, pod inventory.Endpoint, role, rawURL string) (inPod, ofRole, where string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", "", err
	}
	place, err := locateDatabase(ctx, &State{Inv: inv}, pod, role, u)
	if err != nil {
		return "", "", "", err
	}
	return place.pod, place.role, place.where, nil
}
