package ir_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestFewOpSwitches holds the module to the op table: what an op does
// lives in its row (ir/op.go) or in a pass's rule table (ir.Rules), and a
// switch on an op outside them needs a comment above it beginning "op
// switch:" that says why it is not a table. At most eight may remain.
func TestFewOpSwitches(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sw, ok := n.(*ast.SwitchStmt)
			if !ok || !onOp(sw.Tag) {
				return true
			}
			pos := fset.Position(sw.Pos())
			found = append(found, pos.String())
			if !commented(f, fset, pos.Line) {
				t.Errorf("%s: a switch on the op without an \"op switch:\" comment saying why it is not a rule table", pos)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 8 {
		t.Errorf("%d switches on the op outside the op table (at most 8):\n%s", len(found), strings.Join(found, "\n"))
	}
	if len(found) == 0 {
		t.Fatal("no switch on the op found: the walk reads nothing")
	}
	t.Logf("%d switches on the op: %s", len(found), strings.Join(found, ", "))
}

// onOp reports whether a switch's tag reads an op: x.Op or a variable op.
func onOp(tag ast.Expr) bool {
	switch x := tag.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == "Op"
	case *ast.Ident:
		return x.Name == "op"
	}
	return false
}

// commented reports whether a comment beginning "op switch:" ends on one
// of the lines just above line.
func commented(f *ast.File, fset *token.FileSet, line int) bool {
	for _, g := range f.Comments {
		end := fset.Position(g.End()).Line
		if end == line-1 && strings.Contains(g.Text(), "op switch:") {
			return true
		}
	}
	return false
}
