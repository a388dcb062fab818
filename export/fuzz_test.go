package export

import "testing"

// A manifest from anywhere either parses, and then Check gives an answer
// for any shape, or is refused with an error: never a panic.
func FuzzParse(f *testing.F) {
	for _, c := range []struct{ op, tg string }{{"rowwise_cast", "sm_90"}, {"tensorwise_cast", "gfx942"}, {"grouped_colwise_cast", "sm_90"}} {
		js, err := bundle(f, c.op, c.tg, nil, nil).Manifest.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js, int64(64), int64(4096), int64(3))
	}
	f.Fuzz(func(t *testing.T, js []byte, a, b, c int64) {
		m, err := Parse(js)
		if err != nil {
			return
		}
		sh := map[string]int64{}
		for i, s := range m.Sizes {
			sh[s.Name] = []int64{a, b, c}[i%3]
		}
		m.Check(sh) //nolint:errcheck // only panics matter
		for _, t := range m.Tensors {
			m.Elems(t, sh) //nolint:errcheck
		}
	})
}
