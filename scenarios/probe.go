package scenarios

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"strconv"
	"time"

	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// The probe is the spec's reader in the main pod: the runner adds it to
// the node's main pod as an ephemeral container (podroles probe, from the
// runner's image), so that a connection leaves from the main pod's
// network, through its DNS, to the Service by its name. The runner reads
// the contract's files in the main pod, as before, and hands each
// question to the probe on its stdin, one JSON line; the probe answers
// on its stdout. Secrets cross the stdin only: never the pod's spec,
// the probe's argv or its log.

// probeStart bounds the wait for the probe to run: on a stock cluster its
// node may first pull the runner's image from a registry.
const probeStart = 2 * time.Minute

// ProbeIdle is how long the probe waits for a question: the runner asks
// every few seconds while it polls.
const ProbeIdle = 2 * time.Minute

// probeArgs are the arguments of the runner image's entrypoint that
// start the probe: one that never ends by itself, as the runs after the
// first attach to it again.
var probeArgs = []string{"probe", "--idle=0"}

// probeQuestion is one question to the probe. ID is echoed in the answer:
// an answer that comes after its try gave up is not taken for the next.
type probeQuestion struct {
	ID   int         `json:"id"`
	Bind *readerBind `json:"bind,omitempty"`
	// Reach asks for a connection to a port (ports-from-main-pod).
	Reach *reachPort `json:"reach,omitempty"`
}

// probeAnswer is the probe's answer: what it found, or its error, with
// the kind that poll tells apart.
type probeAnswer struct {
	ID    int    `json:"id"`
	Found string `json:"found,omitempty"`
	Error string `json:"error,omitempty"`
	// Permanent: waiting will not mend it.
	Permanent bool `json:"permanent,omitempty"`
	// Saw: the server answered, but not as expected.
	Saw bool `json:"saw,omitempty"`
	// NoAnswer: the server did not answer in time (poll.NoAnswer).
	NoAnswer bool `json:"noAnswer,omitempty"`
}

// answerOf is the answer of a try.
func answerOf(found string, err error) probeAnswer {
	if err == nil {
		return probeAnswer{Found: found}
	}
	var m *poll.Mismatch
	a := probeAnswer{Error: err.Error()}
	switch {
	case errors.As(err, &m):
		a.Error, a.Saw = m.Seen, true
	case poll.IsPermanent(err):
		a.Permanent = true
	case poll.IsNoAnswer(err):
		a.NoAnswer = true
	}
	return a
}

// err turns an answer back into the error of the try.
func (a probeAnswer) err() error {
	switch {
	case a.Error == "":
		return nil
	case a.Saw:
		return poll.Saw("%s", a.Error)
	case a.Permanent:
		return poll.Permanent(errors.New(a.Error))
	case a.NoAnswer:
		return poll.NoAnswer(errors.New(a.Error))
	}
	return errors.New(a.Error)
}

// ServeProbe is the probe: it answers each question of in, a JSON line,
// with one JSON line on out, until in ends. With idle, it also ends after
// idle with no question; with none, it waits for the next run's session
// for the pod's life (runs attach to it again rather than add another).
func ServeProbe(ctx context.Context, in io.Reader, out io.Writer, idle time.Duration) error {
	lines := make(chan []byte)
	failed := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			lines <- bytes.Clone(sc.Bytes())
		}
		failed <- sc.Err()
		close(lines)
	}()
	enc := json.NewEncoder(out)
	timer := time.NewTimer(idle)
	defer timer.Stop()
	var idleEnds <-chan time.Time // nil, with no idle: never
	if idle > 0 {
		idleEnds = timer.C
	}
	for {
		var line []byte
		select {
		case l, ok := <-lines:
			if !ok {
				return <-failed
			}
			line = l
		case <-idleEnds:
			return fmt.Errorf("no question in %s: the probe ends", idle)
		case <-ctx.Done():
			return ctx.Err()
		}
		var q probeQuestion
		var a probeAnswer
		switch err := json.Unmarshal(line, &q); {
		case err == nil && q.Bind != nil:
			a = answerOf(q.Bind.do(ctx))
		case err == nil && q.Reach != nil:
			a = answerOf(q.Reach.do(ctx))
		default:
			a = probeAnswer{Error: "the probe takes one JSON line with a bind or a port to reach", Permanent: true}
		}
		a.ID = q.ID
		if err := enc.Encode(a); err != nil {
			return err
		}
		timer.Reset(idle)
	}
}

// readerFindsAtService is service-ldaps-bind: the contract's reader
// binds at the role's Service by the contract's host name. It connects
// from the main pod, through a probe; with --from-runner, or in a world
// whose pods share the runner's network, from the runner.
func readerFindsAtService(ctx context.Context, s *State) error {
	svc := s.Inv.Roles[s.Inv.LDAP.Role].Service
	if s.fromRunner {
		s.Note("from the runner (--from-runner), through the Service's address")
		return readerFinds(ctx, s, *svc)
	}
	main, err := mainPod(s.Inv)
	if err != nil {
		return err
	}
	ca, err := contractCAPEM(ctx, s)
	if err != nil {
		return err
	}
	// What the discovery found of the Service (from outside: that it
	// leads to no pod that serves the port) holds for any reader.
	if _, err := world.Addr(*svc, s.Inv.LDAP.Port); err != nil {
		return err
	}
	p, err := addProbe(ctx, s, main)
	if err != nil {
		return err
	}
	if p == nil {
		return readerFindsWith(ctx, s, ca, *svc)
	}
	defer p.Close()
	l := s.Inv.LDAP
	addr := net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
	where := fmt.Sprintf("ldaps://%s from the main pod %s (probe %s)", addr, main.Name, p.Name)
	from := fmt.Sprintf("from the main pod %s (probe %s) to %s", main.Name, p.Name, addr)
	// Another run may be attached to the same probe, and sees its
	// answers: the questions of this one are numbered from a base of its
	// own.
	asked := probeBase()
	return readerBinds(ctx, s, ca, addr, where, from, func(bind *readerBind, ctx context.Context) (string, error) {
		asked++
		return askProbe(ctx, p, probeQuestion{ID: asked, Bind: bind})
	})
}

// probeBase is where a run numbers its questions to a probe from: another
// run may be attached to the same probe, and sees its answers.
func probeBase() int { return int(mathrand.Int64N(1 << 40)) }

// askProbe asks the probe one question, and turns its answer back into
// what the try found or its error.
func askProbe(ctx context.Context, p *kube.Probe, q probeQuestion) (string, error) {
	question, err := json.Marshal(q)
	if err != nil {
		return "", poll.Permanent(err)
	}
	line, err := p.Ask(ctx, question)
	for {
		if err != nil {
			return "", err
		}
		var a probeAnswer
		if err := json.Unmarshal(line, &a); err != nil {
			return "", poll.Permanent(fmt.Errorf("the probe %s answered no JSON: %q", p.Name, line))
		}
		if a.ID == q.ID {
			return a.Found, a.err()
		}
		// The late answer of an earlier try.
		line, err = p.Read(ctx)
	}
}

// addProbe adds the reader's probe to the main pod, where the world has
// one to add. Without the runner's image it fails, saying how to go on.
func addProbe(ctx context.Context, s *State, main inventory.Endpoint) (*kube.Probe, error) {
	p, err := s.World.Probe(ctx, main, kube.ProbeSpec{Image: s.probeImage, Args: probeArgs, Start: max(s.Patience, probeStart)})
	if errors.Is(err, world.ErrNoProbeImage) {
		return nil, poll.Permanent(errors.New("the reader in the main pod needs the runner's image for its probe: give --probe-image (the image of podroles), or --from-runner to connect from the runner"))
	}
	return p, err
}
