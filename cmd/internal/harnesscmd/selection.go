package harnesscmd

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fediversity/podroles/scenarios"
)

// SelectionOptions are the flags that select scenarios, for scenarios
// run and for the runner of scenarios manifest alike: --suite, --run and
// --disruptive.
type SelectionOptions struct {
	Suites []string
	Run    string
	// Disruptive lets the scenarios that change the deployment run.
	Disruptive bool
}

// AddFlags adds --suite, --run and --disruptive, the last with the
// command's own usage.
func (s *SelectionOptions) AddFlags(f *pflag.FlagSet, disruptive string) {
	f.StringSliceVar(&s.Suites, "suite", nil, "run only these suites (comma-separated)")
	f.StringVar(&s.Run, "run", "", "run only the scenarios whose suite/scenario matches this regular expression")
	f.BoolVar(&s.Disruptive, "disruptive", false, disruptive)
}

// Select gives the suites of --suite and the compiled --run, or an
// error naming the flag that is wrong; a selection of no scenario is one.
func (s *SelectionOptions) Select() ([]*scenarios.Suite, *regexp.Regexp, error) {
	suites, err := scenarios.Select(s.Suites)
	if err != nil {
		return nil, nil, fmt.Errorf("--suite: %w", err)
	}
	var re *regexp.Regexp
	if s.Run != "" {
		if re, err = regexp.Compile(s.Run); err != nil {
			return nil, nil, fmt.Errorf("--run %q: %w", s.Run, err)
		}
	}
	for _, su := range suites {
		for _, sc := range su.Scenarios {
			if re == nil || re.MatchString(su.Name+"/"+sc.Name) {
				return suites, re, nil
			}
		}
	}
	if len(s.Suites) == 0 {
		return nil, nil, fmt.Errorf("no scenario matches --run %q", s.Run)
	}
	return nil, nil, fmt.Errorf("no scenario matches --suite %s --run %q", strings.Join(s.Suites, ","), s.Run)
}
