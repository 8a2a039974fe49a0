package codeshape

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxMethods is the most methods a type may have, test files' included:
// more, and the type is doing the work of several.
const maxMethods = 30

// No type of the module has more than maxMethods methods.
func TestNoTypeHasTooManyMethods(t *testing.T) {
	methods := map[string]int{} // "folder.Type" → count
	eachGoFile(t, 0, func(rel string, f *ast.File) {
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv != nil && len(fn.Recv.List) == 1 {
				methods[fmt.Sprintf("%s.%s", filepath.Dir(rel), receiver(fn.Recv.List[0].Type))]++
			}
		}
	})
	if len(methods) < 50 {
		t.Fatalf("only %d types with methods found: does the walk still reach the code?", len(methods))
	}
	for typ, n := range methods {
		if n > maxMethods {
			t.Errorf("%s has %d methods, more than %d: split what it does among types of their own", typ, n, maxMethods)
		}
	}
}

// receiver is the name of a method's receiver type: T of T, *T, T[P] and
// *T[P].
func receiver(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprintf("%T", e)
		}
	}
}

// maxSynopsisWords bounds the first sentence of a package's doc: the
// summary that go doc, pkg.go.dev and docs/architecture.md's reader take
// in at a glance.
const maxSynopsisWords = 20

// Every package's doc opens with "Package name …" (a command's with what
// it is), in a first sentence of at most maxSynopsisWords words.
func TestPackageDocsOpenShort(t *testing.T) {
	docs := map[string]string{} // folder → its package doc
	names := map[string]string{}
	eachGoFile(t, parser.ParseComments|parser.PackageClauseOnly, func(rel string, f *ast.File) {
		if strings.HasSuffix(rel, "_test.go") {
			return
		}
		dir := filepath.Dir(rel)
		names[dir] = f.Name.Name
		if f.Doc != nil {
			docs[dir] = f.Doc.Text()
		}
	})
	if len(names) < 30 {
		t.Fatalf("only %d packages found: does the walk still reach the code?", len(names))
	}
	for rel, name := range names {
		text, ok := docs[rel]
		if !ok {
			t.Errorf("package %s (%s) has no doc", name, rel)
			continue
		}
		synopsis := new(doc.Package).Synopsis(text)
		if name != "main" && !strings.HasPrefix(synopsis, "Package "+name+" ") {
			t.Errorf("%s: its doc opens %q, not with \"Package %s\"", rel, synopsis, name)
		}
		if n := len(strings.Fields(synopsis)); n > maxSynopsisWords {
			t.Errorf("%s: its doc's first sentence has %d words, more than %d: %q", rel, n, maxSynopsisWords, synopsis)
		}
	}
}

// eachGoFile parses, with mode, each Go file of the module (not of the
// other modules below it, servers/, nor of testdata) and calls f with its
// path relative to the module's root.
func eachGoFile(t *testing.T, mode parser.Mode, f func(rel string, file *ast.File)) {
	t.Helper()
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Folders of other modules (servers/) and of no Go code.
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, mode|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		f(rel, file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
