package scenarios

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A port answers when a connection stays open, or, for a metrics port,
// when GET of its path answers 2xx; a port that accepts and closes at
// once (a port-forward to a port nothing serves) or a 404 is an answer
// that differs.
func TestReachPort(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	if found, err := (&reachPort{Addr: addr, HTTPPath: "/metrics"}).do(ctx); err != nil || !strings.Contains(found, "200 OK") {
		t.Errorf("metrics: %q, %v", found, err)
	}
	if _, err := (&reachPort{Addr: addr, HTTPPath: "/nope"}).do(ctx); err == nil || !strings.Contains(err.Error(), "GET /nope answered 404 Not Found") {
		t.Errorf("a path that answers 404: %v", err)
	}
	if found, err := (&reachPort{Addr: addr}).do(ctx); err != nil || found != "connected" {
		t.Errorf("a port that stays open: %q, %v", found, err)
	}
	closing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer closing.Close()
	go func() {
		for {
			c, err := closing.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := (&reachPort{Addr: closing.Addr().String()}).do(ctx); err == nil || !strings.Contains(err.Error(), "nothing serves the port") {
		t.Errorf("a port closed at once: %v", err)
	}
	free := closing.Addr().String()
	closing.Close()
	if _, err := (&reachPort{Addr: free}).do(ctx); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a port nothing listens on: %v", err)
	}
}

// The Service's scrape annotations must be the plan's, which the node's
// metrics make.
func TestScrapeAnnotations(t *testing.T) {
	want := &corev1.Service{}
	want.Annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9959", "prometheus.io/path": "/metrics"}
	got := want.DeepCopy()
	got.Name = "directory-authelia"
	if err := scrapeAnnotations(want, got); err != nil {
		t.Errorf("as planned: %v", err)
	}
	got.Annotations["prometheus.io/path"] = "/other"
	delete(got.Annotations, "prometheus.io/scrape")
	err := scrapeAnnotations(want, got)
	if err == nil || !strings.Contains(err.Error(), `prometheus.io/path is "/other", the node's metrics give "/metrics"`) || !strings.Contains(err.Error(), `prometheus.io/scrape is ""`) {
		t.Errorf("other annotations: %v", err)
	}
}
