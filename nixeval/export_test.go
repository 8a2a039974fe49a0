package nixeval

// Test helpers for the external tests of package nixeval_test, which may
// import packages that import nixeval.
var (
	RequireNix  = requireNix
	WriteTree   = writeTree
	MustSources = mustSources
)
