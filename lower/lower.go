// Package lower turns a tile-level kernel into the program each lane runs.
//
// Lowering is one ordered table of named passes over one IR (package ir),
// in three phases. The layout pass gives every tile a layout (which lane
// holds which element in which register) and inserts a convert where a
// value is needed in a layout other than the one it was computed in;
// vectorize chooses the width of each global access. Then expand rewrites
// every tile into the registers of each lane, and every layout rule into
// the lanes program: thread coordinates and owner predicates as index
// arithmetic on tid, register maps, register folds, butterfly shuffles, LDS
// round trips with their byte addresses and barriers. After expand nothing
// downstream knows what a layout is: the interpreter runs that program and
// the emitter prints it. simplify then folds constants, drops what the
// ranges of values make trivial, and shares common subexpressions.
//
// Each pass is a func(*ir.Func, *Config) error that states the passes it
// needs and the phases it reads and writes; the order is checked when the
// package loads. The verifier may run after each pass, and any pass's
// output can be printed (fp8gen ir --after=PASS).
package lower

import (
	"fmt"

	"github.com/fp8gen/fp8gen/ir"
)

// Config is what lowering needs from the schedule and the call site.
type Config struct {
	Warps int // waves per block
	// Lanes, if set, is the most lanes of a wave a global access puts
	// along a tile's contiguous axis; the anchor then wraps the axis, each
	// lane holding several 16-byte vectors of a row (element d and
	// d + Lanes·vector in one lane). 0: as many lanes as the vectors fill.
	Lanes int
	// Div holds, for a size parameter, a power of two known to divide it (the
	// runtime specializes kernels on it, as Triton does on 16): it lets loads
	// and stores use vectors.
	Div map[string]int
	// Verify runs the verifier after every pass.
	Verify bool
	// After, if set, is called with the function after each pass.
	After func(pass string, f *ir.Func)
}

type pass struct {
	name     string
	fn       func(*ir.Func, *Config) error
	from, to ir.Phase
	needs    []string
	doc      string
}

// Passes, in order.
var passes = []pass{
	{name: "dce", fn: dce, from: ir.PhaseTile, to: ir.PhaseTile,
		doc: "drop values nothing uses"},
	{name: "layout", fn: assignLayout, from: ir.PhaseTile, to: ir.PhaseLayout, needs: []string{"dce"},
		doc: "layouts: loads coalesced, the rest propagated; index arithmetic recomputed, data converted, where layouts disagree"},
	{name: "hoist", fn: hoist, from: ir.PhaseLayout, to: ir.PhaseLayout, needs: []string{"layout"},
		doc: "move loop-invariant values (converts above all) out of loops"},
	{name: "vectorize", fn: vectorize, from: ir.PhaseLayout, to: ir.PhaseLayout, needs: []string{"layout"},
		doc: "vector widths of global loads and stores, and whether one mask bit guards each vector"},
	{name: "expand", fn: expand, from: ir.PhaseLayout, to: ir.PhaseLanes, needs: []string{"layout", "vectorize"},
		doc: "tiles into each lane's registers; layouts into index arithmetic, shuffles, LDS round trips and barriers"},
	{name: "simplify", fn: simplify, from: ir.PhaseLanes, to: ir.PhaseLanes, needs: []string{"expand"},
		doc: "fold constants and ranges, share common subexpressions, drop dead values"},
}

func init() {
	if err := checkOrder(passes); err != nil {
		panic("BUG: " + err.Error())
	}
}

// checkOrder holds the pass table to what each pass states: the passes it
// needs run before it, and each reads the phase the previous one wrote.
func checkOrder(ps []pass) error {
	seen := map[string]bool{}
	phase := ir.PhaseTile
	for _, p := range ps {
		if seen[p.name] {
			return fmt.Errorf("pass %s twice", p.name)
		}
		for _, n := range p.needs {
			if !seen[n] {
				return fmt.Errorf("pass %s needs %s before it", p.name, n)
			}
		}
		if p.from != phase {
			return fmt.Errorf("pass %s reads the %v phase after a pass that wrote the %v phase", p.name, p.from, phase)
		}
		seen[p.name] = true
		phase = p.to
	}
	if phase != ir.PhaseLanes {
		return fmt.Errorf("the last pass leaves the %v phase, not lanes", phase)
	}
	return nil
}

// PassNames lists the passes in order.
func PassNames() []string {
	var n []string
	for _, p := range passes {
		n = append(n, p.name)
	}
	return n
}

// Run lowers f in place.
func Run(f *ir.Func, cfg *Config) error {
	if f.Phase != ir.PhaseTile {
		return fmt.Errorf("lower %s: the kernel is already in the %v phase", f.Name, f.Phase)
	}
	if cfg.Warps <= 0 || cfg.Warps&(cfg.Warps-1) != 0 || cfg.Warps > f.Target.MaxBlock {
		return fmt.Errorf("lower %s: %d waves per block: want a power of two", f.Name, cfg.Warps)
	}
	f.Threads = cfg.Warps * f.Target.WaveSize
	if f.Threads > f.Target.MaxBlock {
		return fmt.Errorf("lower %s: %d threads per block > %d on %s", f.Name, f.Threads, f.Target.MaxBlock, f.Target.Name)
	}
	for _, p := range passes {
		if err := p.fn(f, cfg); err != nil {
			return fmt.Errorf("lower %s: pass %s: %w", f.Name, p.name, err)
		}
		f.Phase = p.to
		if cfg.Verify {
			if err := ir.Verify(f, p.to); err != nil {
				panic(fmt.Sprintf("BUG: after pass %s: %v\n%v", p.name, err, f))
			}
		}
		if cfg.After != nil {
			cfg.After(p.name, f)
		}
	}
	return nil
}

// dce removes values whose results nothing uses and whose ops may go.
func dce(f *ir.Func, _ *Config) error {
	removeDead(f)
	return nil
}

func removeDead(f *ir.Func) {
	for {
		uses := f.Uses()
		removed := false
		var sweep func(b *ir.Block)
		sweep = func(b *ir.Block) {
			out := b.Values[:0]
			for _, v := range b.Values {
				if v.Body != nil {
					sweep(v.Body)
				}
				if v.Op.Removable() && uses[v] == 0 {
					removed = true
					continue
				}
				out = append(out, v)
			}
			b.Values = out
		}
		sweep(f.Entry)
		if !removed {
			return
		}
	}
}
