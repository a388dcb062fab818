// Package refnum is the arithmetic of the ops' plain-Go references,
// written apart from what the kernels run (package ir's semantics, package
// fp8's encoder, the emitted prelude), so that a bug in those is caught
// against these rather than copied into the expected answer.
//
// It works from definitions: maxNum by its IEEE rule, FP8 encoding by
// searching the table of a format's values (each code's value computed from
// its sign, exponent and mantissa fields in float64) for the nearest one,
// ties to the even code.
package refnum

import (
	"encoding/binary"
	"math"
	"math/big"
	"sort"
	"sync"

	"github.com/fp8gen/fp8gen/fp8"
)

// MaxNum is IEEE 754 maxNum with +0 above -0: a NaN operand yields the
// other operand.
func MaxNum(a, b float32) float32 {
	if math.IsNaN(float64(a)) {
		return b
	}
	if math.IsNaN(float64(b)) {
		return a
	}
	if a == 0 && b == 0 { // ±0: the positive one, if any
		if math.Signbit(float64(a)) {
			return b
		}
		return a
	}
	return float32(math.Max(float64(a), float64(b)))
}

// Abs clears the sign, of NaN too.
func Abs(x float32) float32 { return float32(math.Abs(float64(x))) }

// Pow2Floor is the largest power of two not above x, for finite x > 0;
// x itself otherwise.
func Pow2Floor(x float32) float32 {
	if !(x > 0) || math.IsInf(float64(x), 1) {
		return x
	}
	_, exp := math.Frexp(float64(x)) // x = f·2^exp, f in [0.5, 1)
	return float32(math.Ldexp(1, exp-1))
}

// PutF32 writes x as element i of a little-endian float32 array.
func PutF32(b []byte, i int, x float32) {
	binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
}

// table is a format's finite non-negative values, ascending, with codes.
type table struct {
	vals  []float64
	codes []uint8
	nan   uint8
	// from[k] is the first value ≥ the smallest non-negative float32
	// whose top 16 bits are k: where encode's search for |x| (top bits
	// k) starts. Every value is an f32 with 3 mantissa bits or fewer, so
	// at most one lies between from[k] and |x|: the search is a step or
	// two, not a binary search over the table (the references encode
	// billions of elements).
	from []uint8
}

var tables sync.Map // *fp8.Format → *table

// value is code c's value from the format's fields; ok is false for NaN
// and Inf codes.
func value(f *fp8.Format, c uint8) (float64, bool) {
	e := int(c>>f.ManBits) & (1<<f.ExpBits - 1)
	m := int(c) & (1<<f.ManBits - 1)
	neg := c&0x80 != 0
	switch {
	case f.FNUZ && c == 0x80:
		return 0, false // the only NaN
	case f.HasInf && e == 1<<f.ExpBits-1:
		return 0, false // Inf and NaN
	case !f.FNUZ && !f.HasInf && e == 1<<f.ExpBits-1 && m == 1<<f.ManBits-1:
		return 0, false // e4m3fn's NaN
	}
	var v float64
	if e == 0 {
		v = math.Ldexp(float64(m), 1-f.Bias-f.ManBits)
	} else {
		v = math.Ldexp(float64(m+1<<f.ManBits), e-f.Bias-f.ManBits)
	}
	if neg {
		v = -v
	}
	return v, true
}

func tableOf(f *fp8.Format) *table {
	if t, ok := tables.Load(f); ok {
		return t.(*table)
	}
	t := &table{nan: 0x7f}
	if f.FNUZ {
		t.nan = 0x80
	}
	for c := 0; c < 128; c++ {
		if v, ok := value(f, uint8(c)); ok {
			t.vals = append(t.vals, v)
			t.codes = append(t.codes, uint8(c))
		}
	}
	sort.Sort(byValue{t})
	t.from = make([]uint8, 1<<15)
	for k := range t.from {
		t.from[k] = uint8(sort.SearchFloat64s(t.vals, float64(math.Float32frombits(uint32(k)<<16))))
	}
	tables.Store(f, t)
	return t
}

type byValue struct{ *table }

func (b byValue) Len() int           { return len(b.vals) }
func (b byValue) Less(i, j int) bool { return b.vals[i] < b.vals[j] }
func (b byValue) Swap(i, j int) {
	b.vals[i], b.vals[j] = b.vals[j], b.vals[i]
	b.codes[i], b.codes[j] = b.codes[j], b.codes[i]
}

// EncodeFP8 is the saturating conversion of x to format f: the nearest
// value, ties to the even code; ±Inf and beyond ±max to ±max; NaN to the
// format's NaN; in fnuz formats no negative zero.
func EncodeFP8(f *fp8.Format, x float32) uint8 { return encode(f, tableOf(f), x) }

// Encoder is EncodeFP8 for one format, its table looked up once (for the
// references' loops over billions of elements).
func Encoder(f *fp8.Format) func(float32) uint8 {
	t := tableOf(f)
	return func(x float32) uint8 { return encode(f, t, x) }
}

func encode(f *fp8.Format, t *table, x float32) uint8 {
	if math.IsNaN(float64(x)) {
		return t.nan
	}
	a := math.Abs(float64(x))
	i := int(t.from[math.Float32bits(x)>>16&0x7fff])
	for i < len(t.vals) && t.vals[i] < a {
		i++
	} // i: the first value ≥ a
	var c uint8
	switch {
	case i == len(t.vals):
		c = t.codes[len(t.codes)-1] // saturate
	case t.vals[i] == a || i == 0:
		c = t.codes[i]
	default:
		lo, hi := t.vals[i-1], t.vals[i]
		switch {
		case a-lo < hi-a:
			c = t.codes[i-1]
		case a-lo > hi-a:
			c = t.codes[i]
		case t.codes[i-1]&1 == 0:
			c = t.codes[i-1]
		default:
			c = t.codes[i]
		}
	}
	if math.Signbit(float64(x)) && !(f.FNUZ && c == 0) {
		c |= 0x80
	}
	return c
}

// DecodeFP8 is code c's value in format f, from the format's fields: NaN
// for NaN codes, ±Inf for the infinities of formats that have them.
func DecodeFP8(f *fp8.Format, c uint8) float32 {
	if v, ok := value(f, c); ok {
		return float32(v) // exact: every FP8 value is an f32
	}
	e := int(c>>f.ManBits) & (1<<f.ExpBits - 1)
	if f.HasInf && e == 1<<f.ExpBits-1 && c&(1<<f.ManBits-1) == 0 {
		return float32(math.Inf(1 - 2*int(c>>7)))
	}
	return float32(math.NaN())
}

// BF16 rounds x to bfloat16, to nearest with ties to even, by comparing
// the two neighbours' distances in float64. A NaN keeps its sign and top
// bits, quieted (bit 6 of the bf16 set), as the kernels' conversion does.
func BF16(x float32) uint16 {
	u := math.Float32bits(x)
	if x != x {
		return uint16(u>>16) | 0x40
	}
	lo := u &^ 0xffff // toward zero
	if lo == u {
		return uint16(u >> 16)
	}
	hi := lo + 0x10000 // away from zero; past the largest finite, Inf
	mag := func(v uint32) float64 {
		if v&0x7fffffff == 0x7f800000 {
			return math.Ldexp(1, 128) // Inf stands where 2^128 would be
		}
		return math.Abs(float64(math.Float32frombits(v)))
	}
	a := math.Abs(float64(x))
	dlo, dhi := a-mag(lo), mag(hi)-a
	switch {
	case dlo < dhi:
		return uint16(lo >> 16)
	case dhi < dlo:
		return uint16(hi >> 16)
	case (lo>>16)&1 == 0:
		return uint16(lo >> 16)
	}
	return uint16(hi >> 16)
}

// BF16ToF32 is a bfloat16's value.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// FMA is a·b + c rounded once to f32 (nearest even). math.FMA rounds the
// exact value once to float64; converting that to f32 rounds a second
// time, which differs from one rounding only where the float64 lands on a
// midpoint of two f32 neighbours that the exact value was not on: there
// the exact value's side of the midpoint, taken with big.Float, decides.
func FMA(a, b, c float32) float32 {
	r := math.FMA(float64(a), float64(b), float64(c))
	f := float32(r)
	if math.IsInf(r, 0) || math.IsNaN(r) || float64(f) == r {
		return f
	}
	lo, hi := f, f
	if float64(f) < r {
		hi = math.Nextafter32(f, float32(math.Inf(1)))
	} else {
		lo = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	mid := (wide(lo) + wide(hi)) / 2 // exact: 25 significant bits
	if r != mid {
		return f
	}
	exact := new(big.Float).SetPrec(0).SetFloat64(float64(a))
	exact.SetPrec(2000).Mul(exact, big.NewFloat(float64(b))).Add(exact, big.NewFloat(float64(c)))
	switch exact.Cmp(big.NewFloat(mid)) {
	case 1:
		return hi
	case -1:
		return lo
	}
	return f // the exact value is the midpoint: the tie went to even once
}

// wide is x in float64, with f32's overflow as 2^128 (the neighbour past
// the largest finite f32 that a tie rounds to).
func wide(x float32) float64 {
	if math.IsInf(float64(x), 0) {
		return math.Copysign(math.Ldexp(1, 128), float64(x))
	}
	return float64(x)
}
