// Package report holds what the reports of podroles check and podroles
// scenarios share. These are the formats they are written in, and JUnit
// XML, which CI systems read to show each failure on its own.
package report

import (
	"encoding/xml"
	"fmt"
	"io"
)

// Suites is the root element of JUnit XML, <testsuites>.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr,omitempty"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr,omitempty"`
	Skipped  int      `xml:"skipped,attr"`
	Time     float64  `xml:"time,attr"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one <testsuite>.
type Suite struct {
	Name     string  `xml:"name,attr"`
	Tests    int     `xml:"tests,attr"`
	Failures int     `xml:"failures,attr"`
	Errors   int     `xml:"errors,attr,omitempty"`
	Skipped  int     `xml:"skipped,attr"`
	Time     float64 `xml:"time,attr"`
	Cases    []Case  `xml:"testcase"`
}

// Case is one <testcase>.
type Case struct {
	Name      string `xml:"name,attr"`
	ClassName string `xml:"classname,attr"`
	// File and Line place the case's failure in a file, as the JUnit
	// readers of GitLab, Jenkins and the test-reporter actions take them.
	File    string   `xml:"file,attr,omitempty"`
	Line    int      `xml:"line,attr,omitempty"`
	Time    float64  `xml:"time,attr"`
	Failure *Failure `xml:"failure,omitempty"`
	// Error marks a case that could not run to a verdict, as a test
	// that panicked: JUnit's <error>.
	Error     *Failure `xml:"error,omitempty"`
	Skipped   *Skipped `xml:"skipped,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Failure marks a failed case, or one in error; Text holds the details.
type Failure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// Skipped marks a case that did not run, and why.
type Skipped struct {
	Message string `xml:"message,attr"`
}

// Add appends a case to the suite and keeps its counts.
func (s *Suite) Add(c Case) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	s.Time += c.Time
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Error != nil:
		s.Errors++
	case c.Skipped != nil:
		s.Skipped++
	}
}

// WriteJUnit writes the suites, with their totals, as an XML document.
func WriteJUnit(w io.Writer, name string, suites []Suite) error {
	root := Suites{Name: name, Suites: suites}
	for _, s := range suites {
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Errors += s.Errors
		root.Skipped += s.Skipped
		root.Time += s.Time
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
