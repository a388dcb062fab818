// Checking outputs against the reference: bit for bit, or within an
// op's stated allowance.

package ops

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/fp8gen/fp8gen/ir"
)

// Allow is an output's reference before its final rounding, Value, and
// the error, Slack, a computation of it may carry before that rounding.
type Allow struct{ Value, Slack []float64 }

// Expected is an op's reference for one set of inputs: the outputs (and
// scratch) and, for an op with an Allowance, the bounds. It does not
// depend on the schedule, so one serves every candidate of a shape.
type Expected struct {
	c     *Call
	in    map[string]*Tensor
	want  map[string]*Tensor
	allow map[string]Allow
}

// Expect computes the reference for in.
func (c *Call) Expect(in map[string]*Tensor) *Expected {
	if c.Op.Expected != nil {
		want, allow := c.Op.Expected(c, in)
		return &Expected{c: c, in: in, want: want, allow: allow}
	}
	x := &Expected{c: c, in: in, want: c.Op.Reference(c, in)}
	if c.Op.Allowance != nil {
		x.allow = c.Op.Allowance(c, in)
	}
	return x
}

// CheckOutputs holds a run's outputs to the op's reference: bit for bit,
// or within the op's Allowance. Scratch is held too where got has it (a
// launcher's caller does not). It reports whether the match was exact.
func (c *Call) CheckOutputs(in, got map[string]*Tensor) (exact bool, err error) {
	return c.Expect(in).Check(got)
}

// Check holds got to the reference, as CheckOutputs says.
func (x *Expected) Check(got map[string]*Tensor) (exact bool, err error) {
	c, allow := x.c, x.allow
	// The rows the reference's counts say are written, in both.
	want, got := c.Written(x.want, x.in, nil), c.Written(got, x.in, x.want)
	for _, s := range c.SpecsOf(Scratch) {
		if got[s.Name] == nil {
			delete(want, s.Name)
		}
	}
	var errs []error
	exact = true
	for _, n := range slices.Sorted(maps.Keys(want)) {
		a, ok := allow[n]
		if !ok {
			errs = append(errs, compareBits(map[string]*Tensor{n: want[n]}, got, c.Op.AnyNaN))
			continue
		}
		w, g := want[n], got[n]
		if g == nil || len(g.Data) != len(w.Data) {
			errs = append(errs, Compare(map[string]*Tensor{n: want[n]}, got))
			continue
		}
		if len(a.Value) != w.Elems() || len(a.Slack) != w.Elems() {
			return false, fmt.Errorf("BUG: %s's allowance for %s holds %d values and %d slacks for %d elements", c.Op.Name, n, len(a.Value), len(a.Slack), w.Elems())
		}
		// The result must be a rounding of a value within the slack of
		// the reference's unrounded one: within the slack plus half a
		// unit in the last place. In chunks, in parallel (hundreds of
		// millions of elements at the benchmark shapes).
		bound := func(i int) float64 { return a.Slack[i] + ulp(g, i)/2 }
		var chunks [refChunks]struct {
			bad, first int
			inexact    bool
		}
		for k := range chunks {
			chunks[k].first = -1
		}
		bigParallel(w.Elems(), func(lo, hi, k int) {
			ch := &chunks[k]
			for i := lo; i < hi; i++ {
				if w.Bits(i) == g.Bits(i) {
					continue
				}
				ch.inexact = true
				x, y := w.Float(i), g.Float(i)
				if math.IsNaN(x) && math.IsNaN(y) {
					continue
				}
				// An infinite slack says an f32 intermediate may overflow
				// (terms of both signs past the format's max): the result
				// may then be ±Inf or NaN, whatever the association.
				if math.Abs(a.Value[i]-y) <= bound(i) || math.IsInf(bound(i), 1) {
					continue
				}
				ch.bad++
				if ch.first < 0 {
					ch.first = i
				}
			}
		})
		bad, first := 0, -1
		for _, ch := range chunks {
			bad += ch.bad
			if first < 0 {
				first = ch.first
			}
			if ch.inexact {
				exact = false
			}
		}
		if bad > 0 {
			errs = append(errs, fmt.Errorf("%s: %d of %d elements differ from the reference by more than allowed; first, element %d%s: want %s (%.9g before rounding), got %s (allowed %.3g)",
				n, bad, w.Elems(), first, w.index(first), w.show(first), a.Value[first], g.show(first), bound(first)))
		}
	}
	return exact, errors.Join(errs...)
}

// ulp is the spacing of t's element type at element i's value.
func ulp(t *Tensor, i int) float64 {
	x := math.Abs(t.Float(i))
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0
	}
	bits := 24 // f32's significand
	if t.DType.K == ir.KBF16 {
		bits = 8
	}
	if x < 0x1p-126 {
		return math.Ldexp(1, -126-bits+1)
	}
	_, e := math.Frexp(x)
	return math.Ldexp(1, e-bits)
}

// Compare checks outputs against the reference bit for bit and describes
// the first difference of each tensor.
func Compare(want, got map[string]*Tensor) error { return compareBits(want, got, false) }

// CompareUpToNaN is Compare, except that in bf16 and f32 tensors a NaN
// matches any NaN: the sign and payload of a NaN that float arithmetic
// makes are the hardware's (NVIDIA writes 0x7fffffff, AMD and the host
// other quiet NaNs), not part of an op's contract. FP8 and integer
// tensors are still compared bit for bit.
func CompareUpToNaN(want, got map[string]*Tensor) error { return compareBits(want, got, true) }

func compareBits(want, got map[string]*Tensor, anyNaN bool) error {
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(want)) {
		w, g := want[n], got[n]
		if g == nil {
			errs = append(errs, fmt.Errorf("%s: missing", n))
			continue
		}
		if len(w.Data) != len(g.Data) {
			errs = append(errs, fmt.Errorf("%s: %d bytes, want %d", n, len(g.Data), len(w.Data)))
			continue
		}
		nan := anyNaN && (w.DType.K == ir.KBF16 || w.DType.K == ir.KF32)
		size := w.DType.Bytes()
		bad, first := 0, -1
		for i := range w.Data {
			if w.Data[i] == g.Data[i] {
				continue
			}
			if e := i / size; nan && math.IsNaN(w.Float(e)) && math.IsNaN(g.Float(e)) {
				continue
			}
			bad++
			if first < 0 {
				first = i
			}
		}
		if bad > 0 {
			e := first / size
			errs = append(errs, fmt.Errorf("%s: %d of %d bytes differ from the reference; first in element %d%s: want %s, got %s",
				n, bad, len(w.Data), e, w.index(e), w.show(e), g.show(e)))
		}
	}
	return errors.Join(errs...)
}

// index is element i's multi-index, e.g. " [3 7]".
func (t *Tensor) index(i int) string {
	if len(t.Shape) < 2 {
		return ""
	}
	idx := make([]int, len(t.Shape))
	for d := len(t.Shape) - 1; d >= 0; d-- {
		idx[d] = i % t.Shape[d]
		i /= t.Shape[d]
	}
	return " " + fmt.Sprint(idx)
}

// show is element i's bits and value.
func (t *Tensor) show(i int) string {
	b := t.Bits(i)
	size := t.DType.Bytes()
	return fmt.Sprintf("%#0*x (%s)", 2+2*size, b, strconv.FormatFloat(t.Float(i), 'g', -1, 64))
}
