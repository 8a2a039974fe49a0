package nixeval

// Test helpers for the external tests of package nixeval_test, which may
// import packages that import nixeval.
var (
	RequireNix       = requireNix
	NewTestEvaluator = evaluator
	WriteTree        = writeTree
	MustSources      = mustSources
)
