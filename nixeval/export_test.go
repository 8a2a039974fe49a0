package nixeval

// Test helpers for the external tests of package nixeval_test, which may
// import packages that import nixeval.
// WithoutListsProbe returns e without the FR-007 probe, for the benchmark
// of what the probe costs.
func WithoutListsProbe(e *Evaluator) *Evaluator {
	return &Evaluator{Nix: e.Nix, Timeout: e.Timeout, K8sPodModule: e.K8sPodModule, withoutListsProbe: true}
}

var (
	RequireNix       = requireNix
	NewTestEvaluator = evaluator
	WriteTree        = writeTree
	MustSources      = mustSources
)
