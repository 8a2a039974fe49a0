package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/klog/v2"

	"github.com/fediversity/podroles/internal/oneline"
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
	// The forward outlives ctx, which only bounds its start.
	life, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	start := func(specs []string) (*portforward.PortForwarder, chan struct{}, error) {
		ready := make(chan struct{})
		pf, err := portforward.NewOnAddressesForStreamingWithContext(life, dialer, []string{"127.0.0.1"}, specs, ready, io.Discard, logw)
		if err != nil {
			return nil, nil, fmt.Errorf("port-forward pod %s: %w", where, err)
		}
		return pf, ready, nil
	}
	var specs []string
	for _, p := range ports {
		specs = append(specs, fmt.Sprintf("0:%d", p))
	}
	pf, ready, err := start(specs)
	if err != nil {
		cancel()
		return nil, err
	}
	first := make(chan error, 1)
	go func() { first <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-first:
		cancel()
		return nil, forwardError(namespace, pod, err)
	case <-ctx.Done():
		cancel()
		<-first
		return nil, ctx.Err()
	}
	got, err := pf.GetPorts()
	if err != nil {
		cancel()
		<-first
		return nil, err
	}
	f := &Forward{cancel: cancel, done: make(chan error, 1)}
	specs = specs[:0]
	for _, g := range got {
		f.Addrs = append(f.Addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(int(g.Local))))
		specs = append(specs, fmt.Sprintf("%d:%d", g.Local, g.Remote))
	}
	go f.keep(life, first, func() (func() error, error) {
		pf, _, err := start(specs)
		if err != nil {
			return nil, err
		}
		return pf.ForwardPorts, nil
	}, func(err error) {
		fmt.Fprintf(logw, "port-forward to pod %s ended: %s; forwarding again\n", where, oneline.Err(err))
	})
	return f, nil
}

// keep forwards again on the same local ports whenever the forward ends
// before Close: client-go ends a whole forward when one connection to the
// pod fails, as it does while a restarted container waits in its
// back-off. A connection made in between is refused, as by a pod that
// restarts. Only the first end of a streak is logged.
func (f *Forward) keep(life context.Context, running <-chan error, again func() (func() error, error), ended func(error)) {
	wait, logged, since := 100*time.Millisecond, false, time.Now()
	for {
		err := <-running
		if life.Err() != nil {
			f.done <- nil
			return
		}
		if time.Since(since) > 5*time.Second {
			wait, logged = 100*time.Millisecond, false
		}
		if err == nil {
			err = errors.New("closed by the API server")
		}
		if !logged {
			ended(err)
			logged = true
		}
		select {
		case <-life.Done():
			f.done <- nil
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
		next := make(chan error, 1)
		running, since = next, time.Now()
		forward, err := again()
		if err != nil {
			next <- err
			continue
		}
		go func() { next <- forward() }()
	}
}

func forwardError(namespace, pod string, err error) error {
	if isForbidden(err) {
		return forbidden(fmt.Sprintf("port-forward pod %s/%s", namespace, pod), "create on pods/portforward", namespace)
	}
	return fmt.Errorf("port-forward pod %s/%s: %w", namespace, pod, Answered(err))
}
