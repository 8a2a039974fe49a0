package world

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
)

// RenderInterval: the local environment's agents render at the interval
// the inventory gives them (openbao.renderInterval).
func (w filesWorld) RenderInterval(context.Context, inventory.Endpoint) (time.Duration, string, error) {
	return w.inv.OpenBao.Render(), "the inventory's openbao.renderInterval", nil
}

// RenderInterval reads the agent's configuration in the pod's sidecar: the
// file its -config flag names, through exec, and in it
// static_secret_render_interval (JSON or HCL), or the agent's default
// where it sets none. A sidecar whose configuration cannot be read gives
// an error that says why: the caller falls back to the inventory's word.
func (c *Cluster) RenderInterval(ctx context.Context, pod inventory.Endpoint) (time.Duration, string, error) {
	got, err := c.Clientset.CoreV1().Pods(c.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return 0, "", ObjectError("Pod", c.Namespace, pod.Name, "get", err)
	}
	var argv []string
	for _, ct := range append(got.Spec.InitContainers, got.Spec.Containers...) {
		if ct.Name == plan.ContainerSidecar {
			argv = append(append(argv, ct.Command...), ct.Args...)
		}
	}
	file := agentConfigFlag(argv)
	if file == "" {
		return 0, "", fmt.Errorf("pod %s: its sidecar's command (%s) names no -config file", pod.Name, strings.Join(argv, " "))
	}
	out, err := c.Exec(ctx, c.Namespace, pod.Name, plan.ContainerSidecar, []string{"cat", file})
	if err != nil {
		return 0, "", err
	}
	d, set, err := parseRenderInterval(out)
	if err != nil {
		return 0, "", fmt.Errorf("pod %s: %s: %w", pod.Name, file, err)
	}
	where := fmt.Sprintf("static_secret_render_interval in %s, pod %s's agent configuration", file, pod.Name)
	if !set {
		where = fmt.Sprintf("the agent's default: %s in pod %s sets no static_secret_render_interval", file, pod.Name)
	}
	return d, where, nil
}

// agentConfigFlag is the file an agent's argv names by -config (or
// --config), as FILE after it or =FILE.
func agentConfigFlag(argv []string) string {
	for i, a := range argv {
		for _, flag := range []string{"-config", "--config"} {
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				return v
			}
			if a == flag && i+1 < len(argv) {
				return argv[i+1]
			}
		}
	}
	return ""
}

// hclRenderInterval is the setting in an HCL configuration.
var hclRenderInterval = regexp.MustCompile(`(?m)^\s*static_secret_render_interval\s*=\s*"?([0-9a-z.]+)"?`)

// parseRenderInterval reads static_secret_render_interval from an agent's
// configuration, JSON or HCL; false where it is not set (the agent's
// default applies).
func parseRenderInterval(config []byte) (time.Duration, bool, error) {
	var value string
	var doc struct {
		TemplateConfig json.RawMessage `json:"template_config"`
	}
	if json.Unmarshal(config, &doc) == nil {
		// template_config is an object, or a list of one in HCL's JSON.
		var one struct {
			Interval any `json:"static_secret_render_interval"`
		}
		var list []struct {
			Interval any `json:"static_secret_render_interval"`
		}
		if json.Unmarshal(doc.TemplateConfig, &one) == nil && one.Interval != nil {
			value = fmt.Sprint(one.Interval)
		} else if json.Unmarshal(doc.TemplateConfig, &list) == nil && len(list) > 0 && list[0].Interval != nil {
			value = fmt.Sprint(list[0].Interval)
		}
	} else if m := hclRenderInterval.FindSubmatch(config); m != nil {
		value = string(m[1])
	}
	if value == "" {
		return inventory.DefaultRenderInterval, false, nil
	}
	if secs, err := strconv.Atoi(value); err == nil {
		return time.Duration(secs) * time.Second, true, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil || d <= 0 {
		return 0, false, fmt.Errorf("static_secret_render_interval %q is no duration", value)
	}
	return d, true, nil
}
