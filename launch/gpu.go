package launch

import (
	"context"
	"fmt"
	"strings"

	"github.com/fp8gen/fp8gen/export"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/runtime"
)

// kernel loads one of a bundle's kernels: from its code object where that
// is for this device's architecture, else compiled from its source.
func (r *Runner) kernel(ctx context.Context, b *export.Bundle, k export.Kernel) (*runtime.Kernel, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rk := r.kernels[k.Symbol]; rk != nil {
		return rk, nil
	}
	img := b.Object
	if b.Manifest.CodeObject == nil || b.Manifest.CodeObject.Arch != r.arch() {
		var err error
		if img, _, err = r.Compiler.Compile(ctx, b.Source, r.target, k.Symbol); err != nil {
			return nil, err
		}
		r.modules.jit++
	} else {
		r.modules.objects++
	}
	mod, err := r.dev.LoadModule(img)
	if err != nil {
		return nil, err
	}
	// Every kernel of the unit is in the module: keep them all.
	for _, mk := range b.Manifest.Kernels {
		rk, err := mod.Kernel(mk.Symbol)
		if err != nil {
			return nil, err
		}
		if mk.DynamicLDSBytes > 0 {
			if err := rk.SetMaxDynamicShared(mk.DynamicLDSBytes); err != nil {
				return nil, err
			}
		}
		r.kernels[mk.Symbol] = rk
	}
	return r.kernels[k.Symbol], nil
}

// arch is the device's own architecture, which a code object must be
// built for: gfx940 for a gfx940 under the gfx942 target, say.
func (r *Runner) arch() string {
	a, _, _ := strings.Cut(r.dev.Props().Arch, ":") // gfx942:sramecc+:xnack- → gfx942
	return a
}

func (r *Runner) runGPU(ctx context.Context, b *export.Bundle, call *ops.Call, sh map[string]int64, ts Tensors) error {
	m := b.Manifest
	isStatus := map[string]bool{}
	for _, t := range m.Tensors {
		isStatus[t.Name] = t.Status != ""
	}
	bufs := map[string]*runtime.Buffer{}
	var owned []*runtime.Buffer
	defer func() {
		for _, x := range owned {
			x.Free()
		}
	}()
	alloc := func(name string, bytes int) (*runtime.Buffer, error) {
		x, err := r.dev.Alloc(max(bytes, 1))
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", m.Op, name, err)
		}
		owned = append(owned, x)
		return x, nil
	}
	for _, s := range call.Specs() {
		a := ts[s.Name]
		switch {
		case s.Role == ops.Scratch:
			x, err := alloc(s.Name, s.Bytes())
			if err != nil {
				return err
			}
			if s.Init == 0 {
				err = r.dev.Memset(x, 0)
			} else {
				err = r.dev.Upload(x, ops.Tensors([]ops.Spec{s})[s.Name].Data)
			}
			if err != nil {
				return err
			}
			bufs[s.Name] = x
		case a.Buf != nil:
			bufs[s.Name] = a.Buf
		default:
			x, err := alloc(s.Name, s.Bytes())
			if err != nil {
				return err
			}
			if s.Role == ops.Input {
				if err := r.dev.Upload(x, a.Data); err != nil {
					return err
				}
			}
			bufs[s.Name] = x
		}
	}
	for _, k := range m.Kernels {
		rk, err := r.kernel(ctx, b, k)
		if err != nil {
			return err
		}
		var args []any
		for _, p := range k.Params {
			switch {
			case p.Kind == "tensor":
				args = append(args, bufs[p.Name])
			case p.DType == "i64":
				args = append(args, sh[p.Name])
			default:
				args = append(args, int32(sh[p.Name])) // Check held it to the index width
			}
		}
		g, _ := k.GridAt(sh)
		launch := r.dev.Launch
		if k.DependentLaunch {
			launch = r.dev.LaunchDependent
		}
		if err := launch(rk, [3]int{int(g[0]), int(g[1]), int(g[2])}, k.Block, k.DynamicLDSBytes, args...); err != nil {
			return err
		}
	}
	if err := r.dev.Synchronize(); err != nil {
		return err
	}
	status := map[string]*ops.Tensor{}
	for _, s := range call.Specs() {
		a := ts[s.Name]
		switch {
		case s.Role == ops.Output && a.Data != nil:
			if err := r.dev.Download(a.Data, bufs[s.Name]); err != nil {
				return err
			}
		case isStatus[s.Name]:
			t := &ops.Tensor{Spec: s, Data: make([]byte, s.Bytes())}
			if err := r.dev.Download(t.Data, bufs[s.Name]); err != nil {
				return err
			}
			status[s.Name] = t
		}
	}
	return call.CheckStatus(status)
}
