package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/klog/v2"

	"github.com/fediversity/podroles/internal/poll"
)

// Forward is a port-forward of a pod's ports to loopback, running until
// Close.
type Forward struct {
	// Addrs are the local addresses, "127.0.0.1:PORT", of the pod's ports,
	// in the order they were asked for.
	Addrs  []string
	cancel context.CancelFunc
	done   chan error
}

// Close stops the forward and waits until its listeners are closed.
func (f *Forward) Close() {
	f.cancel()
	<-f.done
}

// Forward forwards ports of a pod to free loopback ports through the API
// server, as kubectl port-forward does: over WebSocket, falling back to
// SPDY. ctx bounds only its start: the forward lives until Close. What
// goes wrong meanwhile (a connection the pod refuses, the forward lost) is
// one line each on log (nil drops it).
func (c *Client) Forward(ctx context.Context, namespace, pod string, ports []int32, log io.Writer) (*Forward, error) {
	logw := log
	if logw == nil {
		logw = io.Discard
	}
	where := namespace + "/" + pod
	logger := funcr.New(func(_, args string) { fmt.Fprintf(logw, "port-forward to pod %s: %s\n", where, args) }, funcr.Options{})
	req := c.Clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward")
	transport, upgrader, err := spdy.RoundTripperFor(c.Config)
	if err != nil {
		return nil, err
	}
	spdyDialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, req.URL())
	wsDialer, err := portforward.NewSPDYOverWebsocketDialerForStreamingWithLogger(logger, req.URL(), c.Config)
	if err != nil {
		return nil, err
	}
	dialer := portforward.NewFallbackDialerForStreaming(wsDialer, spdyDialer, fallBackToSPDY)
	var specs []string
	for _, p := range ports {
		specs = append(specs, fmt.Sprintf("0:%d", p))
	}
	// The forward outlives ctx, which only bounds its start.
	life, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	ready := make(chan struct{})
	pf, err := portforward.NewOnAddressesForStreamingWithContext(life, dialer, []string{"127.0.0.1"}, specs, ready, io.Discard, logw)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("port-forward pod %s: %w", where, err)
	}
	done := make(chan error, 1)
	go func() {
		err := pf.ForwardPorts()
		select {
		case <-ready:
			if err != nil && life.Err() == nil {
				fmt.Fprintf(logw, "port-forward to pod %s ended: %s\n", where, oneLine(err))
			}
		default:
		}
		done <- err
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		return nil, forwardError(namespace, pod, err)
	case <-ctx.Done():
		cancel()
		<-done
		return nil, ctx.Err()
	}
	f := &Forward{cancel: cancel, done: done}
	got, err := pf.GetPorts()
	if err != nil {
		f.Close()
		return nil, err
	}
	for _, g := range got {
		f.Addrs = append(f.Addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(int(g.Local))))
	}
	return f, nil
}

func forwardError(namespace, pod string, err error) error {
	if apierrors.IsForbidden(err) || isForbidden(err) {
		return poll.Permanent(fmt.Errorf("port-forward pod %s/%s: forbidden: the kubeconfig's user needs create on pods/portforward in namespace %s", namespace, pod, namespace))
	}
	return fmt.Errorf("port-forward pod %s/%s: %v", namespace, pod, oneLine(err))
}
