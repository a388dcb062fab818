// Package cost is fp8gen's performance model: a predicted time for a
// lowered plan on its target, by which `fp8gen tune` ranks the candidates
// of an op's space.
//
// The kernels are memory-bound, so the model is about bytes and the
// latency of getting them. For each kernel k of a plan:
//
//	t_k    = launch + bytes_k / bw_k · tail_k
//	bw_k   = min(peak, active_k · threads_k · inflight_k / tile_k)
//	tile_k = latency + instrs_k · instr
//	tail_k = waves_k · resident_k · CUs / programs_k   (1 when one wave)
//
// and the plan's time is the sum over its kernels. The terms:
//
//   - bytes_k: every tensor the kernel loads from or stores to, whole,
//     once. A tensor an earlier kernel of the plan read is read again from
//     L2 (free) when it fits in half of it, else from memory again. A
//     tensor that several of the kernel's own loops read (a fused
//     kernel's two passes) is read again from L2 when the programs
//     running at once hold no more than half of L2 of it, else from
//     memory each time; a loop whose loads are of data read once
//     (MemAttr.EvictFirst) reads rows no other loop does.
//   - inflight_k: the bytes a thread has loading at once from memory: the
//     global loads of its hottest block (the loop body, or the kernel's
//     body, with the most bytes of such loads), counting only streamed tensors
//     (those larger than L2/8; smaller ones, the scales, weights and
//     tables every program rereads, are taken to hit in the caches). A
//     kernel that streams nothing counts all its loads (the latency of
//     the caches is taken to be memory's); one that only stores, the peak.
//   - tile_k: how long a thread takes for one tile: the loads' latency,
//     then its instructions, each a dependent issue of its wave: instrs_k
//     counts the hottest block's operations, one a register (a vector
//     memory access one a 16 bytes), index arithmetic and broadcasts free.
//   - resident_k: the programs a CU holds at once, the least of what its
//     waves, registers (the estimate of schedule.Measure times the
//     target's RegFit, the compiler's count over the estimate as measured,
//     in the allocation granule), LDS and block slots allow; active_k is
//     the programs running at once: resident_k · CUs, or the whole grid
//     where it is smaller (each program then runs its tiles at the
//     latency's pace, however few share a CU).
//   - waves_k = ⌈programs / (resident · CUs)⌉: the last wave of a grid that
//     does not fill the GPU a whole number of times runs as long as a full
//     one (the tail).
//   - launch, latency, instr and peak are the target's (target.Target:
//     LaunchNS, MemLatencyNS, InstrNS, and the bandwidth a device copy
//     reaches, CopyGBs).
//
// By Little's law the resident threads sustain bw when they keep
// bw · latency bytes in flight; below that the kernel waits on its loads
// (the H200's profiles of 2026-12-01 showed exactly that: long-scoreboard
// stalls most of the cycles at 29% occupancy). The model leaves out
// instruction issue (kernels it calls memory-bound may be compute-bound:
// the expert amax of one tile a program was), LDS bank conflicts (the
// layouts pad them away), and the variation of the work between programs
// (jagged groups).
package cost

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fp8gen/fp8gen/ir"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// Kernel is the model's account of one kernel of a plan.
type Kernel struct {
	Name     string
	Bytes    int64         // memory bytes moved
	InFlight int           // memory bytes a thread has loading at once
	Instrs   int           // a thread's operations for one tile
	Resident int           // programs a CU holds at once
	Limit    string        // what bounds Resident
	Programs int           // the grid
	Waves    int           // ⌈Programs / (Resident · CUs)⌉
	BW       float64       // bytes a second its resident threads sustain
	Time     time.Duration // launch + Bytes / BW · tail
}

// Estimate is the model's prediction for a plan.
type Estimate struct {
	Kernels []Kernel
	Time    time.Duration
}

func (e Estimate) String() string {
	var parts []string
	for _, k := range e.Kernels {
		parts = append(parts, fmt.Sprintf("%s: %.1f MB, %d B in flight and %d operations a thread, %d a CU (%s), %d wave(s), %.2f TB/s, %.1f µs",
			k.Name, float64(k.Bytes)/1e6, k.InFlight, k.Instrs, k.Resident, k.Limit, k.Waves, k.BW/1e12, us(k.Time)))
	}
	return fmt.Sprintf("%.1f µs (%s)", us(e.Time), strings.Join(parts, "; "))
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// Predict is the model's time for a lowered plan.
func Predict(p *ops.Plan) Estimate {
	t := p.Target
	bytes := map[string]int64{}
	for _, s := range p.Specs() {
		bytes[s.Name] = int64(s.Bytes())
	}
	streamed := func(name string) bool { return bytes[name] > int64(t.L2Bytes/8) }
	read := map[string]bool{} // tensors an earlier kernel loaded
	var est Estimate
	for _, s := range p.Steps {
		k := Kernel{Name: s.Func.Name, Programs: s.Grid[0] * s.Grid[1] * s.Grid[2]}
		regs := schedule.CompilerRegs(s.Resources, t)
		k.Resident, k.Limit = resident(t, s.Resources.Threads, regs, s.Resources.LDSBytes)
		slots := k.Resident * t.CUs
		loads, stores := accesses(s.Func)
		passes := rereads(s.Func)
		touched := maps.Clone(loads)
		maps.Copy(touched, stores)
		for _, n := range slices.Sorted(maps.Keys(touched)) {
			b := bytes[n]
			if loads[n] && read[n] && b <= int64(t.L2Bytes/2) && !stores[n] {
				b = 0 // the second read comes from L2
			}
			// A tensor read again by a later loop of the same kernel: from
			// L2 if the programs running at once have read no more than
			// half of it in between, else from memory again.
			if p := passes[n]; p > 1 && k.Programs > 0 {
				between := float64(bytes[n]) / float64(k.Programs) * float64(min(k.Programs, slots))
				if between > float64(t.L2Bytes/2) {
					b += int64(p-1) * bytes[n]
				}
			}
			k.Bytes += b
		}
		for n := range loads {
			read[n] = true
		}
		k.InFlight, k.Instrs = hottest(s.Func, streamed)
		if k.InFlight == 0 { // nothing streamed: its loads of what it has
			k.InFlight, k.Instrs = hottest(s.Func, func(string) bool { return true })
		}
		k.Waves = max(1, (k.Programs+slots-1)/slots)
		// The programs at once: a full wave's, or all of one that is not.
		active := float64(slots)
		tail := 1.0
		if k.Waves == 1 {
			active = float64(k.Programs)
		} else {
			tail = float64(k.Waves*slots) / float64(k.Programs)
		}
		peak := float64(t.CopyGBs) * 1e9
		tile := (float64(t.MemLatencyNS) + float64(k.Instrs)*t.InstrNS) * 1e-9
		k.BW = math.Min(peak, active*float64(s.Resources.Threads)*float64(k.InFlight)/tile)
		sec := float64(t.LaunchNS) * 1e-9
		if k.BW == 0 { // stores only
			k.BW = peak
		}
		sec += float64(k.Bytes) / k.BW * tail
		k.Time = time.Duration(sec * 1e9)
		est.Kernels = append(est.Kernels, k)
		est.Time += k.Time
	}
	return est
}

// Rank orders plans by predicted time, fastest first; ties keep the
// op's order of preference.
func Rank(plans []*ops.Plan) []*ops.Plan {
	type ranked struct {
		p *ops.Plan
		t time.Duration
	}
	var rs []ranked
	for _, p := range plans {
		rs = append(rs, ranked{p, Predict(p).Time})
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return cmp.Compare(a.t, b.t) })
	out := make([]*ops.Plan, len(rs))
	for i, r := range rs {
		out[i] = r.p
	}
	return out
}

// resident is the programs of threads lanes, regs registers a lane and
// lds bytes of LDS that one CU holds at once, and the limit that binds.
func resident(t *target.Target, threads, regs, lds int) (int, string) {
	if threads <= 0 {
		return 1, "no threads"
	}
	n, why := t.MaxBlocksCU, "block slots"
	if w := t.MaxWaves * t.WaveSize / threads; w < n {
		n, why = w, "waves"
	}
	g := t.RegGranule
	if r := (regs + g - 1) / g * g; r > 0 {
		if m := t.RegsCU / (r * threads); m < n {
			n, why = m, "registers"
		}
	}
	if lds > 0 {
		if m := t.LDSCU / lds; m < n {
			n, why = m, "LDS"
		}
	}
	return max(1, n), why
}

// accesses are the tensors (by argument name) a kernel loads from and
// stores to (atomics count as both).
func accesses(f *ir.Func) (loads, stores map[string]bool) {
	loads, stores = map[string]bool{}, map[string]bool{}
	f.Walk(func(v *ir.Value) {
		// op switch: which ops read and write global memory through their
		// pointer (a stage and an LDS copy write LDS, not their pointer).
		switch v.Op {
		case ir.OpLoad, ir.OpStage, ir.OpLDSCopy:
			if b := base(v.Ptr()); b != nil {
				loads[b.ArgName()] = true
			}
		case ir.OpStore, ir.OpAtomic:
			if b := base(v.Ptr()); b != nil {
				stores[b.ArgName()] = true
				if v.Op == ir.OpAtomic {
					loads[b.ArgName()] = true
				}
			}
		}
	})
	return loads, stores
}

// rereads is, for each tensor, how many of the kernel's outermost loops
// load it (the fused kernels read their data twice). Loads of data read
// once (MemAttr.EvictFirst) do not count: their loop reads rows that no
// other reads.
func rereads(f *ir.Func) map[string]int {
	loops := map[string]map[*ir.Value]bool{}
	f.Walk(func(v *ir.Value) {
		if v.Op != ir.OpLoad || v.Mem().EvictFirst {
			return
		}
		b := base(v.Ptr())
		if b == nil {
			return
		}
		var outer *ir.Value
		for p := v.Block.Parent; p != nil; p = p.Block.Parent {
			if p.Op == ir.OpFor {
				outer = p
			}
		}
		if outer == nil {
			return
		}
		if loops[b.ArgName()] == nil {
			loops[b.ArgName()] = map[*ir.Value]bool{}
		}
		loops[b.ArgName()][outer] = true
	})
	out := map[string]int{}
	for n, l := range loops {
		out[n] = len(l)
	}
	return out
}

// base is the kernel argument a pointer value derives from.
func base(v *ir.Value) *ir.Value {
	for v != nil && v.Op != ir.OpParam {
		if len(v.Args) == 0 {
			return nil
		}
		v = v.Args[0]
	}
	return v
}

// hottest is the bytes of streamed tensors a thread loads in the hottest
// block of f, and that block's operations: the body (a loop's or the
// kernel's, with the conditional regions inside it) whose loads of
// streamed tensors are the most bytes.
func hottest(f *ir.Func, streamed func(string) bool) (bytes, instrs int) {
	var visit func(b *ir.Block) (int, int)
	visit = func(b *ir.Block) (int, int) {
		n, ops := 0, 0
		for _, v := range b.Values {
			ops += opCost(v)
			if v.Op == ir.OpLoad || v.Op == ir.OpLDSCopy {
				if p := base(v.Ptr()); p != nil && streamed(p.ArgName()) {
					n += readBytes(v)
				}
			}
			if v.Body != nil {
				nb, no := visit(v.Body)
				if v.Op != ir.OpFor { // an if's work is the enclosing body's
					n, ops = n+nb, ops+no
				}
			}
		}
		if n > bytes || (n == bytes && ops > instrs) {
			bytes, instrs = n, ops
		}
		return n, ops
	}
	visit(f.Entry)
	return bytes, instrs
}

// readBytes is what a load or an lds_copy (which has no result: its
// pointer's elements) reads from global memory, a lane.
func readBytes(v *ir.Value) int {
	if v.Op == ir.OpLDSCopy {
		return max(1, v.Ptr().Type.Regs) * v.Ptr().Type.DType.Elem().Bytes()
	}
	return max(1, v.Type.Regs) * v.Type.DType.Bytes()
}

// opCost is the instructions one thread issues for v: one a register, a
// memory access one a 16-byte vector, nothing for what the compiler folds
// into addresses or immediates (the op table's Cost).
func opCost(v *ir.Value) int {
	switch v.Op.Cost() {
	case ir.CostFree:
		return 0
	case ir.CostVector:
		return max(1, (movedBytes(v)+15)/16)
	}
	return max(1, v.Type.Regs)
}

// movedBytes is what a memory access moves: what it writes, what a copy's
// pointers read, or what it reads.
func movedBytes(v *ir.Value) int {
	if v.Op.HasResult() {
		return max(1, v.Type.Regs) * max(1, v.Type.DType.Bytes())
	}
	if x := v.Data(); x != nil {
		return max(1, x.Type.Regs) * max(1, x.Type.DType.Bytes())
	}
	return readBytes(v)
}
