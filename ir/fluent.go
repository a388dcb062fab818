package ir

// The DSL's operations as methods of the values they take first, so that
// a kernel reads as the arithmetic it is: n.Mul(cs).Add(rot.Mul(sn)).Cast(BF16)
// for b.Cast(b.Add(b.Mul(n, cs), b.Mul(rot, sn)), BF16). Each is its
// Builder method: the same checks, the same IR, the kernel's own line as
// the position.

// builder is the builder that made v.
func (v *Value) builder() *Builder {
	if v.b == nil {
		panic("BUG: a DSL method on " + v.String() + ", which no builder made")
	}
	return v.b
}

func (v *Value) Add(y any) *Value { return v.builder().Add(v, y) }
func (v *Value) Sub(y any) *Value { return v.builder().Sub(v, y) }

// MulAdd is v·y + z rounded once (FMA).
func (v *Value) MulAdd(y, z any) *Value { return v.builder().FMA(v, y, z) }

func (v *Value) Mul(y any) *Value  { return v.builder().Mul(v, y) }
func (v *Value) Div(y any) *Value  { return v.builder().Div(v, y) }
func (v *Value) Rem(y any) *Value  { return v.builder().Rem(v, y) }
func (v *Value) Max(y any) *Value  { return v.builder().Max(v, y) }
func (v *Value) Min(y any) *Value  { return v.builder().Min(v, y) }
func (v *Value) And(y any) *Value  { return v.builder().And(v, y) }
func (v *Value) Or(y any) *Value   { return v.builder().Or(v, y) }
func (v *Value) Xor(y any) *Value  { return v.builder().Xor(v, y) }
func (v *Value) Shl(y any) *Value  { return v.builder().Shl(v, y) }
func (v *Value) Shr(y any) *Value  { return v.builder().Shr(v, y) }
func (v *Value) ShrU(y any) *Value { return v.builder().ShrU(v, y) }
func (v *Value) Lt(y any) *Value   { return v.builder().Lt(v, y) }
func (v *Value) Le(y any) *Value   { return v.builder().Le(v, y) }
func (v *Value) Gt(y any) *Value   { return v.builder().Gt(v, y) }
func (v *Value) Ge(y any) *Value   { return v.builder().Ge(v, y) }
func (v *Value) Eq(y any) *Value   { return v.builder().Eq(v, y) }
func (v *Value) Ne(y any) *Value   { return v.builder().Ne(v, y) }
func (v *Value) CDiv(y any) *Value { return v.builder().CDiv(v, y) }

func (v *Value) Abs() *Value       { return v.builder().Abs(v) }
func (v *Value) Neg() *Value       { return v.builder().Neg(v) }
func (v *Value) Rsqrt() *Value     { return v.builder().Rsqrt(v) }
func (v *Value) Pow2Floor() *Value { return v.builder().Pow2Floor(v) }

// Cast converts v to d (Builder.Cast); Bitcast reinterprets its bits.
func (v *Value) Cast(d DType) *Value    { return v.builder().Cast(v, d) }
func (v *Value) Bitcast(d DType) *Value { return v.builder().Bitcast(v, d) }

// Col and Row make v a column [n, 1] or a row [1, n]; ExpandDims and
// BroadcastTo are the general forms.
func (v *Value) Col() *Value                     { return v.builder().Col(v) }
func (v *Value) Row() *Value                     { return v.builder().Row(v) }
func (v *Value) ExpandDims(axis int) *Value      { return v.builder().ExpandDims(v, axis) }
func (v *Value) BroadcastTo(shape ...int) *Value { return v.builder().BroadcastTo(v, shape...) }
func (v *Value) Trans() *Value                   { return v.builder().Trans(v) }

// Reduce folds v along axis by kind (RSum, RMax, …).
func (v *Value) Reduce(axis int, kind ReduceKind) *Value { return v.builder().Reduce(v, axis, kind) }

// MultipleOf asserts that v's elements are multiples of n (Builder.MultipleOf).
func (v *Value) MultipleOf(n int) *Value { return v.builder().MultipleOf(v, n) }
