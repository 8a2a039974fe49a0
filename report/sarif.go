package report

import (
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
)

// SARIF 2.1.0 (OASIS), which GitHub's code scanning, Forgejo's and many
// editors read: a log of one run of one tool, its rules as metadata and
// each result at its location.

// SARIFTool names the tool of the run.
type SARIFTool struct {
	Name    string
	Version string
	// InformationURI is where the tool is described; optional.
	InformationURI string
}

// SARIFRule is a rule's metadata.
type SARIFRule struct {
	ID string
	// Name is the rule's short name (unknown-unit).
	Name string
	// Description is one line: what the rule refuses.
	Description string
	// Help is the rule's documentation, in Markdown.
	Help string
	// Level is the default level of its results: "error" or "warning".
	Level      string
	Tags       []string
	Properties map[string]any
}

// SARIFLocation is a place in a file.
type SARIFLocation struct {
	// File is relative to the run's base folder, or absolute.
	File   string
	Line   int
	Column int
	// Message says what the place is, for a related location.
	Message string
}

// SARIFResult is one result of a rule.
type SARIFResult struct {
	RuleID  string
	Level   string
	Message string
	// Location is where the result is, or nil.
	Location *SARIFLocation
	// Related are further places that bear on the result.
	Related []SARIFLocation
	// Fingerprint identifies the result across runs, whatever lines
	// move: what it is about, not where.
	Fingerprint string
	Properties  map[string]any
}

// srcRoot is the base of the relative file names: the folder the report
// was made in, which CI takes as the checkout's root.
const srcRoot = "%SRCROOT%"

// WriteSARIF writes a SARIF 2.1.0 log of one run. Relative files are
// relative to base (an absolute folder, or "" when unknown). failures,
// when there are any, are what kept the tool from running to its end:
// the run's invocation then did not succeed, and has each as a
// notification (of its Level, Message and Location).
func WriteSARIF(w io.Writer, tool SARIFTool, base string, rules []SARIFRule, results []SARIFResult, failures []SARIFResult) error {
	driver := sarif.NewToolComponent().WithName(tool.Name)
	if tool.Version != "" {
		driver.WithVersion(tool.Version)
	}
	if tool.InformationURI != "" {
		driver.WithInformationURI(tool.InformationURI)
	}
	run := sarif.NewRun().WithTool(sarif.NewTool().WithDriver(driver))
	if base != "" {
		root := (&url.URL{Scheme: "file", Path: strings.TrimSuffix(filepath.ToSlash(base), "/") + "/"}).String()
		// (AddOriginalUriBaseId writes into a map it has not made.)
		run.WithOriginalUriBaseIds(map[string]sarif.ArtifactLocation{srcRoot: *sarif.NewArtifactLocation().WithURI(root)})
	}
	for _, r := range rules {
		props := sarif.NewPropertyBag().WithTags(r.Tags)
		for k, v := range r.Properties {
			props.Add(k, v)
		}
		run.AddRule(r.ID).
			WithName(r.Name).
			WithShortDescription(sarif.NewMultiformatMessageString().WithText(r.Description)).
			WithFullDescription(sarif.NewMultiformatMessageString().WithText(r.Description)).
			WithHelp(sarif.NewMultiformatMessageString().WithText(r.Description).WithMarkdown(r.Help)).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(r.Level)).
			WithProperties(props)
	}
	for _, res := range results {
		result := run.CreateResultForRule(res.RuleID).
			WithLevel(res.Level).
			WithMessage(sarif.NewTextMessage(res.Message))
		if res.Location != nil {
			result.AddLocation(sarifLocation(*res.Location, base))
		}
		for i, rel := range res.Related {
			result.AddRelatedLocation(sarifLocation(rel, base).WithID(i).WithMessage(sarif.NewTextMessage(rel.Message)))
		}
		if res.Fingerprint != "" {
			result.WithPartialFingerprints(map[string]string{"podrolesFinding/v1": res.Fingerprint})
		}
		if len(res.Properties) > 0 {
			props := sarif.NewPropertyBag()
			for k, v := range res.Properties {
				props.Add(k, v)
			}
			result.WithProperties(props)
		}
	}
	if len(failures) > 0 {
		invocation := sarif.NewInvocation().WithExecutionSuccessful(false)
		for _, f := range failures {
			n := sarif.NewNotification().WithLevel(f.Level).WithMessage(sarif.NewTextMessage(f.Message))
			if f.Location != nil {
				n.WithLocations([]*sarif.Location{sarifLocation(*f.Location, base)})
			}
			invocation.AddToolExecutionNotification(n)
		}
		run.AddInvocation(invocation)
	}
	log := sarif.NewReport()
	log.AddRun(run)
	return log.PrettyWrite(w)
}

func sarifLocation(l SARIFLocation, base string) *sarif.Location {
	artifact := sarif.NewArtifactLocation()
	if filepath.IsAbs(l.File) {
		artifact.WithURI((&url.URL{Scheme: "file", Path: filepath.ToSlash(l.File)}).String())
	} else {
		artifact.WithURI((&url.URL{Path: filepath.ToSlash(l.File)}).String())
		if base != "" {
			artifact.WithURIBaseID(srcRoot)
		}
	}
	physical := sarif.NewPhysicalLocation().WithArtifactLocation(artifact)
	if l.Line > 0 {
		region := sarif.NewRegion().WithStartLine(l.Line)
		if l.Column > 0 {
			region.WithStartColumn(l.Column)
		}
		physical.WithRegion(region)
	}
	return sarif.NewLocationWithPhysicalLocation(physical)
}
