package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/export"
	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/target"
)

func TestExport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	args := []string{"export", "tensorwise_cast", "--target", "gfx942", "--shape", "M=64,K=256", "--compile", "no", "-o", dir}
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "manifest.json: tensorwise_cast for gfx942, kernels tensorwise_amax_", "no code object (--compile no)")
	b, err := export.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := b.Manifest; m.Op != "tensorwise_cast" || m.Target.Name != "gfx942" || m.FP8.Name != "e4m3fnuz" || len(m.Kernels) != 2 || m.CodeObject != nil {
		t.Errorf("manifest: %+v", m)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("%s holds %d files; want manifest.json and the source", dir, len(ents))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "rowwise_cast", "--target", "sm_90"}, "-o DIR is required"},
		{[]string{"export", "rowwise_cast", "--target", "sm_90", "--compile", "maybe", "-o", dir}, `--compile "maybe": want auto, yes or no`},
		{[]string{"export", "rowwise_cast", "--target", "sm_90", "--compile", "no", "--object-arch", "sm_80", "-o", dir}, "nothing would be compiled"},
		{[]string{"export", "rowwise_cast", "--target", "sm_90", "-o", filepath.Join(dir, "manifest.json")}, "is not a folder"},
		{[]string{"export", "rowwise_cast", "--target", "sm_90", "-o", filepath.Join(dir, "manifest.json", "x")}, "is a file, not a folder"},
		{[]string{"export", "nosuch", "--target", "sm_90", "-o", dir}, "nosuch"},
	} {
		code, out, errs := fp8gen(t, c.args...)
		want(t, c.args, code, 2, out+errs, c.want)
	}
}

// With hipcc, export builds the code object; here for gfx940, the stand-in
// of gfx942 that CI's hipcc knows.
func TestExportCodeObject(t *testing.T) {
	if _, err := exec.LookPath("hipcc"); err != nil {
		if os.Getenv("FP8GEN_REQUIRE_HIPCC") == "1" {
			t.Fatal("hipcc not found, and FP8GEN_REQUIRE_HIPCC=1")
		}
		t.Skip("no hipcc")
	}
	dir := t.TempDir()
	t.Setenv("FP8GEN_CACHE", t.TempDir())
	args := []string{"export", "rowwise_cast", "--target", "gfx942", "--compile", "yes", "--object-arch", "gfx940", "-o", dir}
	code, out, errs := fp8gen(t, args...)
	want(t, args, code, 0, out+errs, "code object rowwise_cast.gfx940.hsaco")
	b, err := export.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	co := b.Manifest.CodeObject
	if co == nil || co.Arch != "gfx940" || !strings.HasPrefix(string(b.Object[:4]), "\x7fELF") && !strings.Contains(string(b.Object[:64]), "__CLANG_OFFLOAD_BUNDLE__") {
		t.Errorf("code object %+v, %d bytes", co, len(b.Object))
	}
}

// The jobs bench hands bench/peers.py: every option given, the target's
// FP8 format, and a backward's ideal bytes with its forward's.
func TestPeerJobs(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	rw, _ := ops.Lookup("rowwise_cast")
	pj, err := peerJobOf(job{rw, ops.Shape{"M": 64, "K": 256}, "64x256", nil}, tg)
	if err != nil {
		t.Fatal(err)
	}
	if pj.FP8 == nil || *pj.FP8 != "e4m3fn" || pj.Options["in"] != "bf16" || pj.IdealBytes != 64*256*3+64*4 || pj.Shape != "64x256" {
		t.Errorf("rowwise job %+v", pj)
	}
	sh := ops.Shape{"B": 1, "S": 4, "HQ": 4, "HKV": 2, "D": 64}
	fwd, _ := ops.Lookup("qk_norm_rope")
	bwd, _ := ops.Lookup("qk_norm_rope_bwd")
	pf, _ := peerJobOf(job{fwd, sh, "x", nil}, tg)
	pb, _ := peerJobOf(job{bwd, sh, "x", nil}, tg)
	cb, _ := bwd.NewCall(tg, sh, nil)
	if pf.FP8 != nil || pb.IdealBytes != pf.IdealBytes+cb.IdealBytes() || pb.Options["dx"] != "bf16" {
		t.Errorf("qk jobs: forward %+v, backward %+v", pf, pb)
	}
	// bench --opt: the options reach the peers; a backward's forward takes
	// those it has (dx is the backward's alone: given to the forward, its
	// NewCall would fail).
	ex, _ := ops.Lookup("expert_colwise_cast")
	pe, err := peerJobOf(job{ex, ops.Shape{"E": 2, "K": 64, "N": 32}, "2x64x32 layout=nk", ops.Options{"layout": "nk"}}, tg)
	if err != nil || pe.Options["layout"] != "nk" || pe.Shape != "2x64x32 layout=nk" {
		t.Errorf("expert job with layout=nk: %+v, %v", pe, err)
	}
	pb32, err := peerJobOf(job{bwd, sh, "x", ops.Options{"dx": "f32", "order": "sbhd"}}, tg)
	cb32, _ := bwd.NewCall(tg, sh, ops.Options{"dx": "f32"})
	if err != nil || pb32.Options["dx"] != "f32" || pb32.Options["order"] != "sbhd" || pb32.IdealBytes != pf.IdealBytes+cb32.IdealBytes() {
		t.Errorf("backward job with dx=f32, order=sbhd: %+v, %v", pb32, err)
	}
}

// bench/peers.py's test fixture holds the ideal bytes, options and FP8
// formats Go gives: it must not drift from the ops.
func TestPeersFixture(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "bench", "testdata", "peers_jobs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var jobs []peerJob
	if err := json.Unmarshal(data, &jobs); err != nil {
		t.Fatal(err)
	}
	tg, _ := target.Lookup("sm_90")
	for _, pj := range jobs {
		op, err := ops.Lookup(pj.Op)
		if err != nil {
			t.Fatal(err)
		}
		c, err := op.NewCall(tg, ops.Shape(pj.Sizes), ops.Options(pj.Options))
		if err != nil {
			t.Fatalf("%s %s: %v", pj.Op, pj.Shape, err)
		}
		bytes := c.IdealBytes()
		if op.Forward != nil {
			fo := ops.Options{}
			for _, o := range op.Forward.Options {
				if v, ok := pj.Options[o.Name]; ok {
					fo[o.Name] = v
				}
			}
			f, err := op.Forward.NewCall(tg, ops.Shape(pj.Sizes), fo)
			if err != nil {
				t.Fatal(err)
			}
			bytes += f.IdealBytes()
		}
		fp8 := ""
		if c.Format != nil {
			fp8 = c.Format.Name
		}
		got := ""
		if pj.FP8 != nil {
			got = *pj.FP8
		}
		if pj.IdealBytes != bytes || got != fp8 || c.Options.String() != ops.Options(pj.Options).String() {
			t.Errorf("%s %s %v: fixture says %d bytes, fp8 %q; Go gives %d, %q, options %v", pj.Op, pj.Shape, pj.Options, pj.IdealBytes, got, bytes, fp8, c.Options)
		}
	}
	t.Logf("%d fixture jobs agree with the ops", len(jobs))
}
