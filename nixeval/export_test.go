package nixeval

// Test helpers for the external tests of package nixeval_test, which may
// import packages that import nixeval.
// WithoutListsProbe returns e without the FR-007 probe, for the benchmark
// of what the probe costs.
func WithoutListsProbe(e *Evaluator) *Evaluator {
	c := *e
	c.withoutListsProbe = true
	return &c
}

var (
	RequireNix  = requireNix
	WriteTree   = writeTree
	MustSources = mustSources
)
