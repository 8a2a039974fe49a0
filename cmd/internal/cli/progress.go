package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/fediversity/podroles/nixeval"
)

// progressLine is one live line on a terminal while nix works: how many
// nodes are done of how many, the nodes nix evaluates now, and the time
// since the start. It is redrawn in place (a carriage return and an erase
// of the line), at most ten times a second, and never wider than the
// terminal, so that it never wraps.
type progressLine struct {
	w     io.Writer
	width func() int
	start time.Time

	mu    sync.Mutex
	state nixeval.Progress
	// shown is the text last drawn, "" when the line is clear.
	shown string

	stop chan struct{}
	done chan struct{}
}

// progressInterval is how often the line is redrawn, at most.
const progressInterval = 100 * time.Millisecond

// startProgress draws on w, a terminal, until end.
func startProgress(w io.Writer, start time.Time) *progressLine {
	p := &progressLine{w: w, width: terminalWidth(w), start: start, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(progressInterval)
		defer tick.Stop()
		for {
			p.draw()
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// update takes the evaluation's progress; the next tick draws it.
func (p *progressLine) update(pr nixeval.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = pr
}

func (p *progressLine) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	text := fit(p.text(), p.width()-1)
	if text == p.shown {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s", text)
	p.shown = text
}

// text is the line: "evaluating nodes: 3 of 24 done (12s); now web-03,
// web-04". The nodes come last, where a narrow terminal cuts the line.
func (p *progressLine) text() string {
	elapsed := time.Since(p.start).Truncate(time.Second)
	s := p.state
	switch s.Phase {
	case "":
		return fmt.Sprintf("starting nix (%s)", elapsed)
	case "listing":
		text := fmt.Sprintf("listing the nodes (%s)", elapsed)
		if len(s.Current) > 0 {
			text += " of " + strings.Join(s.Current, ", ")
		}
		return text
	}
	what := map[string]string{"evaluating": "evaluating nodes", "locating": "locating definitions"}[s.Phase]
	if what == "" {
		what = s.Phase
	}
	text := fmt.Sprintf("%s: %d of %d done (%s)", what, s.Done, s.Total, elapsed)
	if len(s.Current) > 0 {
		text += "; now " + strings.Join(s.Current, ", ")
	}
	return text
}

// end stops drawing and clears the line.
func (p *progressLine) end() {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown != "" {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = ""
	}
}

// fit cuts text to width runes, with an ellipsis where it cut.
func fit(text string, width int) string {
	if width < 1 || utf8.RuneCountInString(text) <= width {
		return text
	}
	runes := []rune(text)
	return string(runes[:width-1]) + "…"
}

// terminalWidth reads the width of the terminal w each time it is asked
// (the window may change), 80 when it cannot.
func terminalWidth(w io.Writer) func() int {
	return func() int {
		if f, ok := w.(*os.File); ok {
			if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
				return width
			}
		}
		return 80
	}
}
