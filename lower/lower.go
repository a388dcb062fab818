// Package lower turns a tile-level kernel into a thread-level one: it gives
// every tile a layout (which lane holds which element in which register),
// converts layouts through LDS where a value is stored in a layout other than
// the one it was computed in, expands reductions into a lane-local fold,
// wave shuffles and an LDS step across waves, and chooses vector widths for
// global memory accesses.
//
// Lowering is one ordered table of named passes over one IR (package ir):
// tile ops are rewritten into thread ops in place. Each pass is a
// func(*ir.Func, *Config) error; the verifier may run after each one, and
// any pass's output can be printed (fp8gen ir --after=PASS).
package lower

import (
	"fmt"

	"github.com/fp8gen/fp8gen/ir"
)

// Config is what lowering needs from the schedule and the call site.
type Config struct {
	Warps int // waves per block
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
	name string
	fn   func(*ir.Func, *Config) error
}

// Passes, in order. Each relies on the ones before it.
var passes = []pass{
	{"dce", dce},             // drop values nothing uses
	{"layout", assignLayout}, // layouts: loads coalesced, the rest propagated; converts where they disagree
	{"regmaps", regMaps},     // register maps of broadcast, expand_dims and trans
	{"reduce", lowerReduce},  // reduce → reduce_lanes, reduce_wave, reduce_waves
	{"convert", lowerConvert},
	{"vectorize", vectorize}, // vector widths of global loads and stores
	{"lds", allocLDS},        // LDS bytes of the kernel
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
	if cfg.Warps <= 0 || cfg.Warps&(cfg.Warps-1) != 0 {
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
		if cfg.Verify {
			phase := ir.PhaseThreads
			if p.name == "dce" {
				phase = ir.PhaseTile
			}
			if err := ir.Verify(f, phase); err != nil {
				panic(fmt.Sprintf("BUG: after pass %s: %v\n%v", p.name, err, f))
			}
		}
		if cfg.After != nil {
			cfg.After(p.name, f)
		}
	}
	return nil
}

// dce removes values without effects whose results nothing uses.
func dce(f *ir.Func, _ *Config) error {
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
				keep := v.Op.HasEffect() || uses[v.ID] > 0 || v.Op == ir.OpParam || v.Op == ir.OpSize
				if keep {
					out = append(out, v)
				} else {
					removed = true
				}
			}
			b.Values = out
		}
		sweep(f.Entry)
		if !removed {
			return nil
		}
	}
}
