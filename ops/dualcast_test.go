package ops

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/fp8gen/fp8gen/target"
)

// TestDualCastsAreTheSingleCasts holds the dual casts' references to the
// single casts' run apart on the same x, bit for bit: q and inv_scale of
// tensorwise_cast and qt as q transposed; q and inv_scale of rowwise_cast
// as q and inv_scale_row, qt and inv_scale of colwise_cast as qt and
// inv_scale_col.
func TestDualCastsAreTheSingleCasts(t *testing.T) {
	shapes := append(castTests.Shapes, Shape{"M": 300, "K": 257})
	for _, tname := range target.Names() {
		tg, _ := target.Lookup(tname)
		for _, sh := range shapes {
			for _, o := range TensorwiseCastTranspose.OptionSets() {
				for _, adv := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%v/%v/adv=%v", tname, sh, o, adv), func(t *testing.T) {
						call := func(op *Op) *Call {
							c, err := op.NewCall(tg, sh, o)
							if err != nil {
								t.Fatal(err)
							}
							return c
						}
						m, k := sh["M"], sh["K"]
						tc := call(TensorwiseCastTranspose)
						in := Inputs(tc, 11, adv)
						dual := tc.Op.Reference(tc, in)
						single := Tensorwise.Reference(call(Tensorwise), in)
						same(t, "tensorwise q", dual["q"].Data, single["q"].Data)
						same(t, "tensorwise inv_scale", dual["inv_scale"].Data, single["inv_scale"].Data)
						same(t, "tensorwise qt", dual["qt"].Data, transpose(single["q"].Data, m, k))

						rc := call(RowcolCast)
						dual = rc.Op.Reference(rc, in)
						row := Rowwise.Reference(call(Rowwise), in)
						col := Colwise.Reference(call(Colwise), in)
						same(t, "rowcol q", dual["q"].Data, row["q"].Data)
						same(t, "rowcol inv_scale_row", dual["inv_scale_row"].Data, row["inv_scale"].Data)
						same(t, "rowcol qt", dual["qt"].Data, col["qt"].Data)
						same(t, "rowcol inv_scale_col", dual["inv_scale_col"].Data, col["inv_scale"].Data)
						same(t, "rowcol amax_col", dual["amax_col"].Data, col["amax"].Data)
					})
				}
			}
		}
	}
}

// TestGroupedRowcolIsTheSingleCasts holds grouped_rowcol_cast's
// reference to rowwise_cast's and grouped_colwise_cast's run apart on the
// same x and offsets, bit for bit.
func TestGroupedRowcolIsTheSingleCasts(t *testing.T) {
	for _, tname := range target.Names() {
		tg, _ := target.Lookup(tname)
		for _, sh := range GroupedColwise.Tests.Shapes {
			for _, o := range GroupedRowcol.OptionSets() {
				for _, adv := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%v/%v/adv=%v", tname, sh, o, adv), func(t *testing.T) {
						gc, err := GroupedRowcol.NewCall(tg, sh, o)
						if err != nil {
							t.Fatal(err)
						}
						in := Inputs(gc, 13, adv)
						dual := GroupedRowcol.Reference(gc, in)
						rc, err := Rowwise.NewCall(tg, Shape{"M": sh["T"], "K": sh["K"]}, o)
						if err != nil {
							t.Fatal(err)
						}
						row := Rowwise.Reference(rc, in)
						cc, err := GroupedColwise.NewCall(tg, sh, o)
						if err != nil {
							t.Fatal(err)
						}
						col := GroupedColwise.Reference(cc, in)
						same(t, "q", dual["q"].Data, row["q"].Data)
						same(t, "inv_scale_row", dual["inv_scale_row"].Data, row["inv_scale"].Data)
						same(t, "qt", dual["qt"].Data, col["qt"].Data)
						same(t, "inv_scale_col", dual["inv_scale_col"].Data, col["inv_scale"].Data)
					})
				}
			}
		}
	}
}

// TestApartPartsMakeTheOutputs holds each op's Apart to what bench needs
// of it: every part is a call at the op's shape and options (the part's
// shape), and the parts' outputs have the op's outputs' shapes, each of
// the op's outputs by some part (by name, or with a suffix the op adds:
// inv_scale_row is a part's inv_scale).
func TestApartPartsMakeTheOutputs(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	n := 0
	for _, name := range Names() {
		op, _ := Lookup(name)
		if len(op.Apart) == 0 {
			continue
		}
		n++
		for _, o := range op.OptionSets() {
			c, err := op.NewCall(tg, op.Example, o)
			if err != nil {
				t.Fatal(err)
			}
			var parts []Spec
			for _, p := range op.Apart {
				pc, err := p.Op.NewCall(tg, p.PartShape(op.Example), o)
				if err != nil {
					t.Fatalf("%s: part %s: %v", op.Name, p.Op.Name, err)
				}
				parts = append(parts, pc.SpecsOf(Output)...)
			}
			for _, s := range c.SpecsOf(Output) {
				found := false
				for _, ps := range parts {
					if (ps.Name == s.Name || ps.Name+"_row" == s.Name || ps.Name+"_col" == s.Name) && ps.Bytes() == s.Bytes() {
						found = true
					}
				}
				if !found {
					t.Errorf("%s %v: no part writes an output like %s (%d bytes)", op.Name, o, s.Name, s.Bytes())
				}
			}
		}
	}
	if n != 3 {
		t.Errorf("%d ops have parts, want the 3 dual casts", n)
	}
}

func same(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("%s: byte %d is %#x, the single cast's %#x (%d and %d bytes)", what, i, got[i], want[i], len(got), len(want))
				return
			}
		}
		t.Errorf("%s: %d bytes, the single cast's %d", what, len(got), len(want))
	}
}

// transpose is the m × k byte matrix a as k × m.
func transpose(a []byte, m, k int) []byte {
	out := make([]byte, len(a))
	for i := range m {
		for j := range k {
			out[j*m+i] = a[i*k+j]
		}
	}
	return out
}
