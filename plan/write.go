package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Write writes plans as YAML documents (one per object) or as a JSON List.
// In YAML, each node's first document opens with comments that name the
// image references the plan made up (JSON has no comments: PlaceholderNote
// says the same in one line).
func Write(w io.Writer, format string, plans []*Plan) error {
	switch format {
	case "yaml":
		first := true
		for _, p := range plans {
			for i, o := range p.Objects() {
				data, err := yaml.Marshal(o)
				if err != nil {
					return err
				}
				var b strings.Builder
				if !first {
					b.WriteString("---\n")
				}
				first = false
				if i == 0 {
					fmt.Fprintf(&b, "# podroles plan of node %s\n", p.Node)
					for _, ref := range slices.Sorted(maps.Keys(p.Placeholders)) {
						fmt.Fprintf(&b, "# %s is a placeholder image: give the real one with %s\n", ref, p.Placeholders[ref])
					}
				}
				b.Write(data)
				if _, err := io.WriteString(w, b.String()); err != nil {
					return err
				}
			}
		}
		return nil
	case "json":
		objects := []any{}
		for _, p := range plans {
			objects = append(objects, p.Objects()...)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": objects})
	}
	return fmt.Errorf("format %q: want yaml or json", format)
}

// PlaceholderNote is one line naming the placeholder images of plans, or ""
// when every reference was given.
func PlaceholderNote(plans []*Plan) string {
	flags := map[string]string{}
	for _, p := range plans {
		maps.Copy(flags, p.Placeholders)
	}
	if len(flags) == 0 {
		return ""
	}
	var refs []string
	for _, ref := range slices.Sorted(maps.Keys(flags)) {
		refs = append(refs, ref+" ("+flags[ref]+")")
	}
	return "placeholder images, give real ones with the flags named: " + strings.Join(refs, ", ")
}
