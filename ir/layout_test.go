package ir_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fp8gen/fp8gen/ir"
)

// docPicture reads the example of Layout's doc comment in layout.go: the
// layout it states and the rows of its lane map.
func docPicture(t *testing.T) (shape []int, l *ir.Layout, lanes int, rows []string) {
	t.Helper()
	src, err := os.ReadFile("layout.go")
	if err != nil {
		t.Fatal(err)
	}
	var comment strings.Builder
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "type Layout struct") {
			break
		}
		if strings.HasPrefix(line, "//") {
			comment.WriteString(strings.TrimPrefix(line, "//"))
			comment.WriteByte('\n')
		}
	}
	text := strings.Join(strings.Fields(comment.String()), " ")
	m := regexp.MustCompile(`A 2-D tile \[(\d+), (\d+)\] in SPT=\[(\d+),(\d+)\] TPW=\[(\d+),(\d+)\] WPB=\[(\d+),(\d+)\] Order=\[(\d+),(\d+)\], on a wave of (\d+) lanes`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("layout.go's doc comment no longer states its example layout in the expected words:\n%s", text)
	}
	n := make([]int, len(m)-1)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	shape = n[0:2]
	l = ir.Blocked(n[2:4], n[4:6], n[6:8], n[8:10])
	lanes = n[10]
	re := regexp.MustCompile(`^//\trow (\d+): ([\d ]+?)(\s{2,}\(.*\))?$`)
	for _, line := range strings.Split(string(src), "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			if want := strconv.Itoa(len(rows)); m[1] != want {
				t.Fatalf("doc picture row %s out of order, want row %s", m[1], want)
			}
			rows = append(rows, strings.TrimSpace(m[2]))
		}
	}
	if len(rows) != shape[0] {
		t.Fatalf("doc picture has %d rows for a tile of %d", len(rows), shape[0])
	}
	return shape, l, lanes, rows
}

// TestLayoutMapMatchesDoc: Map draws the picture of Layout's doc comment.
// Map writes wave.lane; the doc, of a single wave, writes the lane only.
func TestLayoutMapMatchesDoc(t *testing.T) {
	shape, l, lanes, rows := docPicture(t)
	if l.WaveSize() != lanes || l.Waves() != 1 {
		t.Fatalf("doc layout %v: %d lanes in %d waves, doc says one wave of %d", l, l.WaveSize(), l.Waves(), lanes)
	}
	got := strings.Split(strings.TrimSuffix(l.Map(shape, lanes), "\n"), "\n")
	for i, row := range got {
		var cells []string
		for _, c := range strings.Fields(row) {
			w, lane, ok := strings.Cut(c, ".")
			if !ok || w != "0" {
				t.Fatalf("Map cell %q: want wave 0 and a lane", c)
			}
			cells = append(cells, lane)
		}
		got[i] = strings.Join(cells, " ")
	}
	if diff := cmp.Diff(rows, got); diff != "" {
		t.Errorf("Map of %v on %v differs from the doc's picture (-doc +Map):\n%s", l, shape, diff)
	}
	// The doc's note on row 2: lane 0 holds it in registers 4..7.
	for r := 4; r < 8; r++ {
		c, own := l.Elem(shape, 0, r)
		if !own || !reflect.DeepEqual(c, []int{2, r - 4}) {
			t.Errorf("lane 0 register %d holds %v (owner %v); doc says row 2, column %d", r, c, own, r-4)
		}
	}
}

func TestLayoutMapWaves(t *testing.T) {
	l := ir.Blocked([]int{2}, []int{2}, []int{2}, []int{0})
	if got, want := l.Map([]int{8}, 4), "0.0 0.0 0.1 0.1 1.0 1.0 1.1 1.1\n"; got != want {
		t.Errorf("Map = %q; want %q", got, want)
	}
}

func pow2(r *rand.Rand, maxLog int) int { return 1 << r.IntN(maxLog+1) }

// randomLayout is a blocked layout of one or two base dims with at most 8
// lanes a wave and 4 waves, and a shape for it.
func randomLayout(r *rand.Rand) (*ir.Layout, []int) {
	n := 1 + r.IntN(2)
	spt, tpw, wpb, order, shape := make([]int, n), make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	for d := 0; d < n; d++ {
		spt[d], tpw[d], wpb[d], shape[d] = pow2(r, 2), pow2(r, 3-d), pow2(r, 2-d), pow2(r, 5)
		order[d] = d
	}
	if n == 2 && r.IntN(2) == 0 {
		order[0], order[1] = 1, 0
	}
	return ir.Blocked(spt, tpw, wpb, order), shape
}

// checkOwnership checks that (thread, register) pairs cover a tile of the
// given shape: each element owned exactly once, RegOf and RegCoords
// inverting Elem and RegIndex, and replicas exactly where the tile is
// smaller than the block's coverage.
func checkOwnership(t *testing.T, l *ir.Layout, shape []int) {
	t.Helper()
	threads := l.WaveSize() * l.Waves()
	regs := l.Regs(shape)
	elems := 1
	for _, s := range shape {
		elems *= s
	}
	owners := map[string]int{}
	replicas := 0
	for tid := 0; tid < threads; tid++ {
		held := map[string]bool{}
		for r := 0; r < regs; r++ {
			rc := l.RegCoords(shape, r)
			if back := l.RegIndex(shape, rc); back != r {
				t.Fatalf("%v %v: RegIndex(RegCoords(%d) = %v) = %d", l, shape, r, rc, back)
			}
			c, own := l.Elem(shape, tid, r)
			if len(c) != len(shape) {
				t.Fatalf("%v %v: Elem(%d, %d) = %v: want a coordinate of rank %d", l, shape, tid, r, c, len(shape))
			}
			for a := range c {
				if c[a] < 0 || c[a] >= shape[a] {
					t.Fatalf("%v %v: Elem(%d, %d) = %v is outside the tile", l, shape, tid, r, c)
				}
			}
			if got := l.RegOf(shape, c); got != r {
				t.Fatalf("%v %v: thread %d holds %v in register %d, RegOf says %d", l, shape, tid, c, r, got)
			}
			k := fmt.Sprint(c)
			if held[k] {
				t.Fatalf("%v %v: thread %d holds %v twice", l, shape, tid, c)
			}
			held[k] = true
			if own {
				owners[k]++
			} else {
				replicas++
			}
		}
	}
	if len(owners) != elems {
		t.Fatalf("%v %v: %d elements have an owner; want all %d", l, shape, len(owners), elems)
	}
	for k, n := range owners {
		if n != 1 {
			t.Fatalf("%v %v: element %s has %d owners", l, shape, k, n)
		}
	}
	extent, _, cover, _, _ := l.Geometry(shape)
	smaller := false
	for d := range extent {
		smaller = smaller || extent[d] < cover[d]
	}
	if smaller != (replicas > 0) {
		t.Fatalf("%v %v: %d replicas, but the tile is smaller than the coverage %v: %v", l, shape, replicas, cover, smaller)
	}
	if threads*regs != elems+replicas {
		t.Fatalf("%v %v: %d threads × %d registers for %d elements and %d replicas", l, shape, threads, regs, elems, replicas)
	}
}

func TestLayoutOwnershipRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		l, shape := randomLayout(r)
		checkOwnership(t, l, shape)
		if l.Base() == 2 {
			// A reduction's result: every lane along the dropped dim holds
			// the same element; one of them owns it.
			for a := 0; a < 2; a++ {
				checkOwnership(t, l.Slice(a), []int{shape[1-a]})
			}
			checkOwnership(t, l.Slice(1).Slice(0), nil)
		}
	}
}

func TestLayoutSliceExpandInverse(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100; i++ {
		l, _ := randomLayout(r)
		if l.Base() != 2 {
			continue
		}
		for a := 0; a < 2; a++ {
			s := l.Slice(a)
			if s.Rank() != 1 || s.BaseDim(0) != 1-a {
				t.Fatalf("%v.Slice(%d) = %v: want rank 1 over base dim %d", l, a, s, 1-a)
			}
			e, ok := s.Expand(a)
			if !ok || !reflect.DeepEqual(e, l) {
				t.Fatalf("%v.Slice(%d).Expand(%d) = %v, %v; want %v", l, a, a, e, ok, l)
			}
			if e, ok := s.Expand(1 - a); ok {
				t.Fatalf("%v.Expand(%d) = %v: no dropped dim lands there", s, 1-a, e)
			}
			if again := e.Slice(a); !reflect.DeepEqual(again, s) {
				t.Fatalf("Slice(Expand(%v)) = %v", s, again)
			}
			if _, ok := l.Expand(0); ok {
				t.Fatalf("%v has no dropped dim to expand", l)
			}
		}
	}
}

func TestLayoutTrans(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 100; i++ {
		l, shape := randomLayout(r)
		if l.Base() != 2 {
			continue
		}
		tr := l.Trans()
		if back := tr.Trans(); !reflect.DeepEqual(back, l) {
			t.Fatalf("%v.Trans().Trans() = %v", l, back)
		}
		// Each thread holds, in the transposed layout of the transposed
		// shape, the transposes of the elements it held.
		ts := []int{shape[1], shape[0]}
		if l.Regs(shape) != tr.Regs(ts) {
			t.Fatalf("%v: %d registers, transposed %d", l, l.Regs(shape), tr.Regs(ts))
		}
		for tid := 0; tid < l.WaveSize()*l.Waves(); tid++ {
			a, b := map[string]bool{}, map[string]bool{}
			for reg := 0; reg < l.Regs(shape); reg++ {
				c, own := l.Elem(shape, tid, reg)
				a[fmt.Sprint([]int{c[1], c[0]}, own)] = true
				c, own = tr.Elem(ts, tid, reg)
				b[fmt.Sprint(c, own)] = true
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%v on %v, thread %d: transposed elements %v, Trans layout holds %v", l, shape, tid, a, b)
			}
		}
	}
}

func TestLayoutEquivalent(t *testing.T) {
	l := ir.Blocked([]int{1, 4}, []int{4, 8}, []int{4, 1}, []int{1, 0})
	shape := []int{16, 32}
	for _, tt := range []struct {
		name  string
		other *ir.Layout
		shape []int
		want  bool
	}{
		{"same pointer", l, shape, true},
		{"equal copy", ir.Blocked([]int{1, 4}, []int{4, 8}, []int{4, 1}, []int{1, 0}), shape, true},
		// Per-lane extents clamp to the tile: SPT 8 and 4 agree on 4 columns.
		{"clamped SPT", ir.Blocked([]int{1, 8}, []int{4, 8}, []int{4, 1}, []int{1, 0}), []int{16, 4}, true},
		{"other SPT", ir.Blocked([]int{1, 2}, []int{4, 8}, []int{4, 1}, []int{1, 0}), shape, false},
		{"other order", ir.Blocked([]int{1, 4}, []int{4, 8}, []int{4, 1}, []int{0, 1}), shape, false},
		{"other TPW", ir.Blocked([]int{1, 4}, []int{8, 4}, []int{4, 1}, []int{1, 0}), shape, false},
		{"other WPB", ir.Blocked([]int{1, 4}, []int{4, 8}, []int{2, 2}, []int{1, 0}), shape, false},
		{"nil", nil, shape, false},
	} {
		if got := ir.Equivalent(l, tt.other, tt.shape, 128); got != tt.want {
			t.Errorf("%s: Equivalent(%v, %v, %v) = %v; want %v", tt.name, l, tt.other, tt.shape, got, tt.want)
		}
		if tt.other != nil {
			if got := ir.Equivalent(tt.other, l, tt.shape, 128); got != tt.want {
				t.Errorf("%s: Equivalent is not symmetric", tt.name)
			}
		}
	}
	if ir.Equivalent(l, l.Slice(0), shape, 128) {
		t.Errorf("a layout and its slice are not equivalent")
	}
}
