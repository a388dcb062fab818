package ops

import (
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/target"
)

func permuteCall(t *testing.T, op *Op, sh Shape, o Options) *Plan {
	t.Helper()
	tg, _ := target.Lookup("sm_90")
	p, err := op.NewPlan(tg, sh, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The permute's layout, checked from its definition rather than against
// the reference: rows grouped by expert, in token then k order, each
// expert starting at a multiple of PAD right after the previous one's
// padded rows; each route's row holds its token's row; the padding rows
// zero. PAD=1 (no padding) included.
func TestPermuteLayout(t *testing.T) {
	for _, sh := range []Shape{{"T": 50, "H": 16, "E": 4, "TOPK": 3, "PAD": 1}, {"T": 61, "H": 24, "E": 7, "TOPK": 4, "PAD": 8}} {
		for _, adv := range []bool{false, true} {
			p := permuteCall(t, MoEPermute, sh, Options{"quant": "none", "ep": "2"})
			in := Inputs(p.Call, 3, adv)
			out := runInterp(t, p, in)
			check(t, p.Call, in, out)
			h, topk, pad := sh["H"], sh["TOPK"], int64(sh["PAD"])
			idx, rm := in["indices"].Ints(), out["row_map"].Ints()
			offs, counts := out["offsets"].Ints(), out["counts"].Ints()
			start := int64(0)
			for g := range offs {
				if start%pad != 0 || offs[g] < start+counts[g] || offs[g]-start-counts[g] >= pad {
					t.Fatalf("%v: expert %d: rows %d … %d for %d routes (PAD %d)", sh, g, start, offs[g], counts[g], pad)
				}
				next := start
				for i, e := range idx {
					if e != int64(g) {
						continue
					}
					if rm[i] != next {
						t.Fatalf("%v: route %d (token %d, k %d) of expert %d at row %d, want %d", sh, i, i/topk, i%topk, g, rm[i], next)
					}
					src, dst := in["x"].Data[i/topk*h*2:(i/topk+1)*h*2], out["out"].Data[int(next)*h*2:(int(next)+1)*h*2]
					if string(src) != string(dst) {
						t.Fatalf("%v: row %d is not token %d's row", sh, next, i/topk)
					}
					next++
				}
				for r := next; r < offs[g]; r++ {
					if strings.Trim(string(out["out"].Data[int(r)*h*2:int(r+1)*h*2]), "\x00") != "" {
						t.Fatalf("%v: padding row %d is not zero", sh, r)
					}
				}
				start = offs[g]
			}
			for i, e := range idx {
				if e < 0 && rm[i] != -1 {
					t.Fatalf("%v: unrouted route %d at row %d", sh, i, rm[i])
				}
			}
		}
	}
}

// The rows past offsets[E-1] are not part of the result: a difference
// there passes, one in the rows before it fails.
func TestPermuteWrittenRows(t *testing.T) {
	p := permuteCall(t, MoEPermute, Shape{"T": 40, "H": 8, "E": 3, "TOPK": 2, "PAD": 4}, nil)
	in := Inputs(p.Call, 5, false)
	out := runInterp(t, p, in) // runInterp poisons the outputs first
	used := int(out["offsets"].Ints()[2])
	if used >= 40*2+3*3 {
		t.Fatalf("the routing fills every row (%d): nothing to leave unwritten", used)
	}
	check(t, p.Call, in, out)
	out["out"].Data[used*8] ^= 1
	if _, err := p.CheckOutputs(in, out); err != nil {
		t.Errorf("a byte past the written rows changed: %v", err)
	}
	out["out"].Data[used*8-1] ^= 1
	if _, err := p.CheckOutputs(in, out); err == nil || !strings.Contains(err.Error(), "out:") {
		t.Errorf("a byte of the last written row changed, and the check says %v", err)
	}
	if b := p.BytesFor(in); b >= p.IdealBytes() {
		t.Errorf("ideal bytes at the routing %d, not below the capacity's %d", b, p.IdealBytes())
	}
}

// Bad indices and row maps are refused on the host, naming the element.
func TestMoEBadInput(t *testing.T) {
	sh := Shape{"T": 4, "H": 8, "E": 3, "TOPK": 2, "PAD": 4}
	p := permuteCall(t, MoEPermute, sh, nil)
	in := Inputs(p.Call, 1, false)
	in["indices"].SetBits(5, 3)
	if err := MoEPermute.Validate(p.Call, in); err == nil || !strings.Contains(err.Error(), "indices[2, 1] = 3") {
		t.Errorf("expert 3 of 3: %v", err)
	}
	in["indices"].SetBits(5, uint64(uint32(0xfffffffe)))
	if err := MoEPermute.Validate(p.Call, in); err == nil || !strings.Contains(err.Error(), "indices[2, 1] = -2") {
		t.Errorf("expert −2: %v", err)
	}
	u := permuteCall(t, MoEUnpermute, sh, nil)
	in = Inputs(u.Call, 1, false)
	in["row_map"].SetBits(7, uint64(8+3*3))
	if err := MoEUnpermute.Validate(u.Call, in); err == nil || !strings.Contains(err.Error(), "row_map[3, 1] = 17") {
		t.Errorf("row 17 of 17: %v", err)
	}
}

// The permute then the un-permute without probabilities gives each token
// its row times its route count (exact in bf16 for counts of 1 and 2):
// the two ops agree on the layout.
func TestPermuteRoundTrip(t *testing.T) {
	sh := Shape{"T": 33, "H": 16, "E": 5, "TOPK": 2, "PAD": 4}
	p := permuteCall(t, MoEPermute, sh, Options{"quant": "none", "probs": "false", "ep": "1"})
	in := Inputs(p.Call, 2, false)
	out := runInterp(t, p, in)
	b := permuteCall(t, MoEPermuteBwd, sh, Options{"ep": "1"})
	back := runInterp(t, b, map[string]*Tensor{"d_perm": out["out"], "row_map": out["row_map"]})
	rm := out["row_map"].Ints()
	for tok := range 33 {
		n := 0
		for k := range 2 {
			if rm[tok*2+k] >= 0 {
				n++
			}
		}
		for j := range 16 {
			want, got := float64(n)*in["x"].Float(tok*16+j), back["d_x"].Float(tok*16+j)
			if want != got && !(want != want && got != got) {
				t.Fatalf("token %d column %d: %d routes of %g came back as %g", tok, j, n, in["x"].Float(tok*16+j), got)
			}
		}
	}
}

// The backward's layout inputs are held to moe_permute's layout: a route
// on a padding row, two routes on one row, or offsets that go back.
func TestUnpermuteBwdBadLayout(t *testing.T) {
	sh := Shape{"T": 6, "H": 8, "E": 2, "TOPK": 2, "PAD": 4}
	p := permuteCall(t, MoEUnpermuteBwd, sh, Options{"ep": "1"})
	fresh := func() map[string]*Tensor { return Inputs(p.Call, 1, false) }
	in := fresh()
	if err := MoEUnpermuteBwd.Validate(p.Call, in); err != nil {
		t.Fatalf("moe_permute's own layout refused: %v", err)
	}
	offs, counts := in["offsets"].Ints(), in["counts"].Ints()
	if counts[0] == offs[0] {
		t.Fatalf("expert 0 has no padding row to name (offsets %v, counts %v)", offs, counts)
	}
	in["row_map"].SetBits(0, uint64(counts[0])) // expert 0's first padding row
	if err := MoEUnpermuteBwd.Validate(p.Call, in); err == nil || !strings.Contains(err.Error(), "not a used row") {
		t.Errorf("a route on a padding row: %v", err)
	}
	in = fresh()
	rm := in["row_map"].Ints()
	in["row_map"].SetBits(1, uint64(rm[0]))
	if err := MoEUnpermuteBwd.Validate(p.Call, in); rm[0] >= 0 && (err == nil || !strings.Contains(err.Error(), "another route")) {
		t.Errorf("two routes on row %d: %v", rm[0], err)
	}
	in = fresh()
	in["offsets"].SetBits(1, 0)
	if err := MoEUnpermuteBwd.Validate(p.Call, in); err == nil || !strings.Contains(err.Error(), "offsets[1] = 0") {
		t.Errorf("offsets going back: %v", err)
	}
}
