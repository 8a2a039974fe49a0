package nixeval

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
)

// Stats says what an evaluator's workers did, for the tests and
// benchmarks that hold the workers to Jobs and MaxMemory.
type Stats struct {
	// Workers is the number of nix processes started.
	Workers int
	// Replaced is the number of workers replaced because they passed
	// MaxMemory after a node.
	Replaced int
	// PeakRSS is the highest peak resident memory of one worker, in
	// bytes (its process's high-water mark).
	PeakRSS int64
	// Groups are the process groups of the workers (each worker's pid).
	Groups []int
}

// Stats returns what the evaluator's workers have done so far.
func (e *Evaluator) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Groups = slices.Clone(s.Groups)
	return s
}

// Progress is what an evaluation has done, for a progress line.
type Progress struct {
	// Phase is "listing" (the nodes of flakes), "evaluating" or
	// "locating".
	Phase string
	// Done and Total count the tasks of the phase: flakes listed, nodes
	// evaluated or located.
	Done, Total int
	// Current are the nodes (or flakes) that nix works on now, in the
	// order of the nodes.
	Current []string
}

// task is one request to a worker (serve.nix's TASK).
type task struct {
	Op     string      `json:"op"`
	Source int         `json:"source"`
	Attr   *string     `json:"attr"`
	Node   *locateNode `json:"node,omitempty"`
	// label is what the progress line shows while nix works on it.
	label string
}

// outcome is a task's answer or error.
type outcome struct {
	value json.RawMessage
	err   error
}

// errNotRun is the outcome of a task that the pool never gave nix: the
// evaluation was stopped first.
var errNotRun = errors.New("not evaluated: the evaluation was stopped")

// pool runs tasks on up to jobs workers of serve.nix, each taking the next
// task of a shared queue when it is done with one, so that a slow node
// holds only its own worker. Workers outlive a run: the pool keeps them
// idle for the next one (a flake's nodes after its list) until close.
type pool struct {
	e         *Evaluator
	dir       string   // serve.nix and its files, request.json
	lock      *os.File // held while dir is in use (rundir.go)
	mark      string   // the word before each answer
	jobs      int
	maxMemory int64

	mu      sync.Mutex
	idle    []*worker
	started int
	// warned is what tasks printed on stderr with a warning of nix's in
	// it (lockNotWritten reads them).
	warned []byte
	// retiring are the workers being stopped.
	retiring sync.WaitGroup
}

// newPool writes the program and its request in a new folder, after it
// removed what runs that ended before left. The caller closes the pool.
func (e *Evaluator) newPool(req *request) (*pool, error) {
	removeDeadRuns()
	dir, lock, err := makeRunDir()
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	fail := func(err error) (*pool, error) {
		os.RemoveAll(dir)
		lock.Close()
		return nil, err
	}
	// Nix 2.24 refuses to read a file through a symbolic link (a
	// temporary folder under a linked /tmp, as on macOS).
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if err := readThroughCopies(req, dir); err != nil {
		return fail(err)
	}
	nonce := make([]byte, 8)
	rand.Read(nonce)
	req.AnswerMark = "podroles-answer-" + hex.EncodeToString(nonce)
	reqJSON, err := json.Marshal(req)
	if err != nil {
		return fail(err)
	}
	// The request goes in a file: an environment variable holds 128 KiB at
	// most, a few hundred file names.
	for name, text := range map[string][]byte{"facts.nix": FactsNix, "node.nix": nodeNix, "extract.nix": extractNix, "locate.nix": locateNix, "serve.nix": serveNix, "request.json": reqJSON, emptyRegistry: []byte(`{"flakes":[],"version":2}`)} {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			return fail(fmt.Errorf("eval: %w", err))
		}
	}
	jobs := e.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	return &pool{e: e, dir: dir, lock: lock, mark: req.AnswerMark, jobs: jobs, maxMemory: e.MaxMemory}, nil
}

// run gives each task to a worker and returns the outcomes in the tasks'
// order. progress, when set, is told of each task that starts and ends.
func (p *pool) run(ctx context.Context, phase string, tasks []task) []outcome {
	out := make([]outcome, len(tasks))
	if len(tasks) == 0 {
		return out
	}
	var mu sync.Mutex
	next := 0
	busy := map[int]bool{}
	done := 0
	report := func() {
		if p.e.Progress == nil {
			return
		}
		pr := Progress{Phase: phase, Done: done, Total: len(tasks)}
		for i := range tasks {
			if busy[i] {
				pr.Current = append(pr.Current, tasks[i].label)
			}
		}
		p.e.Progress(pr)
	}
	claim := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(tasks) {
			return 0, false
		}
		i := next
		next++
		if ctx.Err() == nil {
			busy[i] = true
			report()
		}
		return i, true
	}
	finish := func(i int) {
		mu.Lock()
		defer mu.Unlock()
		delete(busy, i)
		done++
		report()
	}
	mu.Lock()
	report()
	mu.Unlock()

	var wg sync.WaitGroup
	for range min(p.jobs, len(tasks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := p.takeIdle()
			defer func() {
				if w != nil {
					p.putIdle(w)
				}
			}()
			for {
				i, ok := claim()
				if !ok {
					return
				}
				if ctx.Err() != nil {
					out[i].err = errNotRun
					continue
				}
				if w != nil && w.next > 0 && p.maxMemory > 0 {
					// A worker past the bound has finished a node; a
					// fresh one takes this one. Asked only when another
					// task comes: reading /proc after the last task
					// would cost a one-node check for nothing.
					if _, rss := processGroup(w.cmd.Process.Pid); rss > p.maxMemory {
						p.retire(w, true)
						w = nil
					}
				}
				if w == nil {
					var err error
					if w, err = p.startWorker(); err != nil {
						out[i].err = err
						finish(i)
						continue
					}
				}
				var stderr []byte
				out[i].value, stderr, out[i].err = w.do(ctx, tasks[i])
				p.keepWarnings(stderr)
				finish(i)
				if w.dead {
					p.retire(w, false)
					w = nil
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// keepWarnings keeps stderr, what nix printed during a task, if it has a
// warning of nix's.
func (p *pool) keepWarnings(stderr []byte) {
	if !bytes.HasPrefix(stderr, []byte("warning: ")) && !bytes.Contains(stderr, []byte("\nwarning: ")) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.warned = append(p.warned, stderr...)
}

// warnings is what tasks printed on stderr with warnings of nix's.
func (p *pool) warnings() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.warned)
}

func (p *pool) startWorker() (*worker, error) {
	p.mu.Lock()
	p.started++
	dir := filepath.Join(p.dir, "worker-"+strconv.Itoa(p.started))
	p.mu.Unlock()
	w, err := p.e.startWorker(p.dir, dir, p.mark)
	if err != nil {
		return nil, err
	}
	p.e.mu.Lock()
	p.e.stats.Workers++
	p.e.stats.Groups = append(p.e.stats.Groups, w.cmd.Process.Pid)
	p.e.mu.Unlock()
	return w, nil
}

func (p *pool) takeIdle() *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) == 0 {
		return nil
	}
	w := p.idle[len(p.idle)-1]
	p.idle = p.idle[:len(p.idle)-1]
	return w
}

func (p *pool) putIdle(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle = append(p.idle, w)
}

// retire stops w beside the work that goes on, and records its peak
// memory; overMemory counts it as replaced.
func (p *pool) retire(w *worker, overMemory bool) {
	p.retiring.Add(1)
	go func() {
		defer p.retiring.Done()
		w.stop()
		p.e.mu.Lock()
		defer p.e.mu.Unlock()
		p.e.stats.PeakRSS = max(p.e.stats.PeakRSS, w.peakRSS)
		if overMemory {
			p.e.stats.Replaced++
		}
	}()
}

// close stops every worker, removes the pool's folder and lets go of its
// lock.
func (p *pool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		p.retire(w, false)
	}
	p.retiring.Wait()
	os.RemoveAll(p.dir)
	p.lock.Close()
}
