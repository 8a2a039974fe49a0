package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// CountVar defines a flag of a count of at least one. Its zero default
// means the flag was not given (usage says what then); a given 0 or a
// negative count is refused when the flags are read.
func CountVar(f *pflag.FlagSet, p *int, name, shorthand string, value int, usage string) {
	*p = value
	f.VarP((*countValue)(p), name, shorthand, usage)
}

type countValue int

func (c *countValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is no whole number", s)
	}
	if n < 1 {
		return fmt.Errorf("%d: give 1 or more", n)
	}
	*c = countValue(n)
	return nil
}

func (c *countValue) String() string { return strconv.Itoa(int(*c)) }

// Type names the flag's value in --help.
func (c *countValue) Type() string { return "int" }

// OutputVar defines --output, -o: a file's name, given at most once. An
// empty name would write to standard output: it is refused.
func OutputVar(f *pflag.FlagSet, p *string, usage string) {
	f.VarP(&onceValue{p: p, empty: "name a file, or leave the flag out for standard output"}, "output", "o", usage)
}

// OnceVar defines a flag of a file's name that may be given once and not
// empty (empty says what to do instead): a second value would win over
// the first without a word.
func OnceVar(f *pflag.FlagSet, p *string, name, empty, usage string) {
	f.Var(&onceValue{p: p, empty: empty}, name, usage)
}

type onceValue struct {
	p     *string
	set   bool
	empty string
}

func (o *onceValue) Set(s string) error {
	switch {
	case o.set:
		return fmt.Errorf("given twice (%s and %s); give one", *o.p, s)
	case s == "":
		return fmt.Errorf("empty; %s", o.empty)
	}
	*o.p, o.set = s, true
	return nil
}

func (o *onceValue) String() string {
	if o.p == nil {
		return ""
	}
	return *o.p
}

// Type names the flag's value in --help.
func (o *onceValue) Type() string { return "string" }

// DurationVar defines a flag of a duration that is not negative; a
// negative one is refused when the flags are read.
func DurationVar(f *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	f.Var((*durationValue)(p), name, usage)
}

type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is no duration (e.g. 90s, 5m)", s)
	}
	if v < 0 {
		return fmt.Errorf("%s is negative", s)
	}
	*d = durationValue(v)
	return nil
}

// String is "0" for no duration, which --help leaves out as a default.
func (d *durationValue) String() string {
	if *d == 0 {
		return "0"
	}
	return time.Duration(*d).String()
}

// Type names the flag's value in --help.
func (d *durationValue) Type() string { return "duration" }
