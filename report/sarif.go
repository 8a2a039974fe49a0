package report

import (
	"encoding/json"
	"io"
	"net/url"
	"path/filepath"
	"strings"
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

// sarifSchema is where the schema of the log is published.
const sarifSchema = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/main/sarif-2.1/schema/sarif-schema-2.1.0.json"

// The log's own types hold only what podroles writes. (A library of every
// SARIF object linked a JSON-schema validator whose start-up each run of
// the checker paid, and wrote every empty list and default there is.)
type (
	sarifLog struct {
		Schema  string     `json:"$schema"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool               sarifTool                `json:"tool"`
		OriginalURIBaseIDs map[string]sarifArtifact `json:"originalUriBaseIds,omitempty"`
		Invocations        []sarifInvocation        `json:"invocations,omitempty"`
		Results            []sarifResult            `json:"results"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name           string           `json:"name"`
		Version        string           `json:"version,omitempty"`
		InformationURI string           `json:"informationUri,omitempty"`
		Rules          []sarifRuleEntry `json:"rules,omitempty"`
	}
	sarifRuleEntry struct {
		ID                   string         `json:"id"`
		Name                 string         `json:"name,omitempty"`
		ShortDescription     sarifText      `json:"shortDescription"`
		FullDescription      sarifText      `json:"fullDescription"`
		Help                 sarifText      `json:"help"`
		DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
		Properties           map[string]any `json:"properties,omitempty"`
	}
	sarifConfig struct {
		Level string `json:"level"`
	}
	sarifText struct {
		Text     string `json:"text"`
		Markdown string `json:"markdown,omitempty"`
	}
	sarifResult struct {
		RuleID              string            `json:"ruleId"`
		RuleIndex           *int              `json:"ruleIndex,omitempty"`
		Level               string            `json:"level"`
		Message             sarifText         `json:"message"`
		Locations           []sarifPlace      `json:"locations,omitempty"`
		RelatedLocations    []sarifPlace      `json:"relatedLocations,omitempty"`
		PartialFingerprints map[string]string `json:"partialFingerprints,omitempty"`
		Properties          map[string]any    `json:"properties,omitempty"`
	}
	sarifPlace struct {
		ID               *int `json:"id,omitempty"`
		PhysicalLocation struct {
			ArtifactLocation sarifArtifact `json:"artifactLocation"`
			Region           *sarifRegion  `json:"region,omitempty"`
		} `json:"physicalLocation"`
		Message *sarifText `json:"message,omitempty"`
	}
	sarifArtifact struct {
		URI       string `json:"uri"`
		URIBaseID string `json:"uriBaseId,omitempty"`
	}
	sarifRegion struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn,omitempty"`
	}
	sarifInvocation struct {
		ExecutionSuccessful        bool                `json:"executionSuccessful"`
		ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
	}
	sarifNotification struct {
		Level     string       `json:"level"`
		Message   sarifText    `json:"message"`
		Locations []sarifPlace `json:"locations,omitempty"`
	}
)

// WriteSARIF writes a SARIF 2.1.0 log of one run. Relative files are
// relative to base (an absolute folder, or "" when unknown). failures,
// when there are any, are what kept the tool from running to its end:
// the run's invocation then did not succeed, and has each as a
// notification (of its Level, Message and Location).
func WriteSARIF(w io.Writer, tool SARIFTool, base string, rules []SARIFRule, results []SARIFResult, failures []SARIFResult) error {
	run := sarifRun{Results: []sarifResult{}}
	run.Tool.Driver = sarifDriver{Name: tool.Name, Version: tool.Version, InformationURI: tool.InformationURI}
	if base != "" {
		root := (&url.URL{Scheme: "file", Path: strings.TrimSuffix(filepath.ToSlash(base), "/") + "/"}).String()
		run.OriginalURIBaseIDs = map[string]sarifArtifact{srcRoot: {URI: root}}
	}
	ruleIndex := map[string]int{}
	for i, r := range rules {
		ruleIndex[r.ID] = i
		props := map[string]any{}
		for k, v := range r.Properties {
			props[k] = v
		}
		if len(r.Tags) > 0 {
			props["tags"] = r.Tags
		}
		entry := sarifRuleEntry{ID: r.ID, Name: r.Name,
			ShortDescription: sarifText{Text: r.Description}, FullDescription: sarifText{Text: r.Description},
			Help: sarifText{Text: r.Description, Markdown: r.Help}, Properties: props}
		entry.DefaultConfiguration.Level = r.Level
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, entry)
	}
	for _, res := range results {
		result := sarifResult{RuleID: res.RuleID, Level: res.Level, Message: sarifText{Text: res.Message}, Properties: res.Properties}
		if i, ok := ruleIndex[res.RuleID]; ok {
			result.RuleIndex = &i
		}
		if res.Location != nil {
			result.Locations = []sarifPlace{sarifLocation(*res.Location, base)}
		}
		for i, rel := range res.Related {
			place := sarifLocation(rel, base)
			place.ID, place.Message = &i, &sarifText{Text: rel.Message}
			result.RelatedLocations = append(result.RelatedLocations, place)
		}
		if res.Fingerprint != "" {
			result.PartialFingerprints = map[string]string{"podrolesFinding/v1": res.Fingerprint}
		}
		run.Results = append(run.Results, result)
	}
	if len(failures) > 0 {
		invocation := sarifInvocation{ExecutionSuccessful: false}
		for _, f := range failures {
			n := sarifNotification{Level: f.Level, Message: sarifText{Text: f.Message}}
			if f.Location != nil {
				n.Locations = []sarifPlace{sarifLocation(*f.Location, base)}
			}
			invocation.ToolExecutionNotifications = append(invocation.ToolExecutionNotifications, n)
		}
		run.Invocations = []sarifInvocation{invocation}
	}
	out, err := json.MarshalIndent(sarifLog{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{run}}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

func sarifLocation(l SARIFLocation, base string) sarifPlace {
	var place sarifPlace
	artifact := &place.PhysicalLocation.ArtifactLocation
	if filepath.IsAbs(l.File) {
		artifact.URI = (&url.URL{Scheme: "file", Path: filepath.ToSlash(l.File)}).String()
	} else {
		artifact.URI = (&url.URL{Path: filepath.ToSlash(l.File)}).String()
		if base != "" {
			artifact.URIBaseID = srcRoot
		}
	}
	if l.Line > 0 {
		place.PhysicalLocation.Region = &sarifRegion{StartLine: l.Line, StartColumn: max(l.Column, 0)}
	}
	return place
}
