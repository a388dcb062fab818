package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/export"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/runtime"
)

func gpuRunner(t *testing.T) *Runner {
	t.Helper()
	r, err := Open("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	if r.dev == nil {
		if os.Getenv("FP8GEN_REQUIRE_GPU") == "1" {
			t.Fatal("no GPU, and FP8GEN_REQUIRE_GPU=1 says there must be one")
		}
		t.Skip("no GPU: the launcher's GPU path is tested on the GPU machine (scripts/gpu.sh)")
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// On the GPU, every op's export, with its code object, matches the
// reference (bit for bit, or within the op's allowance), from host tensors
// and from device buffers, and leaves no device memory behind; the kernels
// come from the code objects, not the JIT.
func TestGPUExportsMatchReference(t *testing.T) {
	r := gpuRunner(t)
	ctx := context.Background()
	r.Compiler.CacheDir = os.Getenv("FP8GEN_CACHE")
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		sh := op.Tests.Odd
		dir := t.TempDir()
		exportCompiled(t, dir, name, sh, r)
		lo, err := Load(os.DirFS(dir), ".")
		if err != nil {
			t.Fatal(err)
		}
		c, err := op.NewCall(r.target, sh, nil)
		if err != nil {
			t.Fatal(err)
		}
		buffers0, _ := r.dev.Live()
		for _, onDevice := range []bool{false, true} {
			ts, in := tensors(c, 3, true)
			var bufs []*runtime.Buffer
			if onDevice {
				for _, a := range ts {
					b, err := r.dev.Alloc(len(a.Data))
					if err != nil {
						t.Fatal(err)
					}
					if err := r.dev.Upload(b, a.Data); err != nil {
						t.Fatal(err)
					}
					bufs = append(bufs, b)
					a.Buf, a.Data = b, nil
				}
			}
			if err := r.Run(ctx, lo, Sizes(sh), ts); err != nil {
				t.Fatalf("%s at %v (device buffers %v): %v", name, sh, onDevice, err)
			}
			got := map[string]*ops.Tensor{}
			for _, s := range c.SpecsOf(ops.Output) {
				data := ts[s.Name].Data
				if onDevice {
					data = make([]byte, s.Bytes())
					if err := r.dev.Download(data, ts[s.Name].Buf); err != nil {
						t.Fatal(err)
					}
				}
				got[s.Name] = &ops.Tensor{Spec: s, Data: data}
			}
			if _, err := c.CheckOutputs(in, got); err != nil {
				t.Errorf("%s at %v on %s (device buffers %v): %v", name, sh, r, onDevice, err)
			}
			for _, b := range bufs {
				b.Free()
			}
		}
		if n, _ := r.dev.Live(); n != buffers0 {
			t.Errorf("%s: %d device buffers live after the runs; %d before", name, n, buffers0)
		}
	}
	if r.modules.objects != len(ops.Names()) || r.modules.jit != 0 {
		t.Errorf("modules from code objects %d, from the JIT %d; want %d and 0", r.modules.objects, r.modules.jit, len(ops.Names()))
	}
}

// Offsets in a device buffer are not read on the host: the kernels' status
// word reports the bad group after the run.
func TestGPUStatusWord(t *testing.T) {
	r := gpuRunner(t)
	sh := ops.Shape{"T": 7, "K": 33, "E": 3}
	dir := t.TempDir()
	exportTo(t, dir, "grouped_colwise_cast", sh, nil, r.Target())
	lo, err := Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	op, _ := ops.Lookup("grouped_colwise_cast")
	c, _ := op.NewCall(r.target, sh, nil)
	ts, _ := tensors(c, 1, false)
	off := make([]byte, 12)
	for i, v := range []uint32{5, 2, 7} { // group 1 ends before it starts
		off[4*i], off[4*i+1], off[4*i+2], off[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	b, err := r.dev.Alloc(len(off))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	if err := r.dev.Upload(b, off); err != nil {
		t.Fatal(err)
	}
	ts["offsets"].Data, ts["offsets"].Buf = nil, b
	err = r.Run(context.Background(), lo, Sizes(sh), ts)
	if err == nil || !strings.Contains(err.Error(), "found bad input on the device") {
		t.Errorf("decreasing offsets on the device: %v", err)
	}
}

// exportCompiled exports op at sh for the runner's target with a code
// object for the device (as fp8gen export --compile yes does).
func exportCompiled(t *testing.T, dir, name string, sh ops.Shape, r *Runner) {
	t.Helper()
	op, _ := ops.Lookup(name)
	p, err := op.NewPlan(r.target, sh, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := export.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Compile(context.Background(), &r.Compiler, r.arch()); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(filepath.Join(dir, r.Target())); err != nil {
		t.Fatal(err)
	}
}
