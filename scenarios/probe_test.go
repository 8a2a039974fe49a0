package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/internal/poll"
)

// TestServeProbe: the probe answers a line per question, with the
// question's ID, refuses what is no question, ends with its stdin, and ends alone when no question comes
// (a runner that may not attach leaves nothing waiting in the pod).
func TestServeProbe(t *testing.T) {
	var out bytes.Buffer
	in := strings.NewReader("not json\n" + `{"id":7,"bind":{"addr":"127.0.0.1:1","ca":""}}` + "\n")
	if err := ServeProbe(context.Background(), in, &out, time.Minute); err != nil {
		t.Fatal(err)
	}
	var answers []probeAnswer
	dec := json.NewDecoder(&out)
	for {
		var a probeAnswer
		if err := dec.Decode(&a); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, a)
	}
	if len(answers) != 2 || !answers[0].Permanent || !strings.Contains(answers[1].Error, "no PEM certificate") || !answers[1].Permanent || answers[1].ID != 7 {
		t.Errorf("answers: %+v", answers)
	}

	r, w := io.Pipe()
	defer w.Close()
	start := time.Now()
	err := ServeProbe(context.Background(), r, io.Discard, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no question in 200ms") {
		t.Errorf("an idle probe: %v after %s", err, time.Since(start))
	}
}

// An answer keeps the kind of its error across the probe's stdout, so that
// the runner's wait treats a server that did not answer in time as no
// answer, a refusal as permanent, and a mismatch as seen.
func TestProbeAnswerKeepsKind(t *testing.T) {
	slow := poll.NoAnswer(errors.New("ldap: connection timed out"))
	if got := answerOf("", slow).err(); !poll.IsNoAnswer(got) || poll.IsPermanent(got) {
		t.Errorf("no answer: %v", got)
	}
	if got := answerOf("", poll.Permanent(errors.New("refused"))).err(); !poll.IsPermanent(got) {
		t.Errorf("permanent: %v", got)
	}
	var m *poll.Mismatch
	if got := answerOf("", poll.Saw("2 entries")).err(); !errors.As(got, &m) {
		t.Errorf("seen: %v", got)
	}
}
