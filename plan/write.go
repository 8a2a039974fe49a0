package plan

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// Write writes plans as YAML documents (one per object) or as a JSON List.
func Write(w io.Writer, format string, plans []*Plan) error {
	var objects []any
	for _, p := range plans {
		objects = append(objects, p.Objects()...)
	}
	switch format {
	case "yaml":
		for i, o := range objects {
			data, err := yaml.Marshal(o)
			if err != nil {
				return err
			}
			if i > 0 {
				io.WriteString(w, "---\n")
			}
			if _, err := w.Write(data); err != nil {
				return err
			}
		}
		return nil
	case "json":
		if objects == nil {
			objects = []any{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": objects})
	}
	return fmt.Errorf("--format %q: want yaml or json", format)
}
