package main

import (
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/ops"
	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// FuzzFlags: the shape and schedule parsers refuse bad text with a usage
// error naming the flag, and planning from what they accept refuses bad
// points with an error, never a panic.
func FuzzFlags(f *testing.F) {
	for _, s := range []string{"M=4,K=4", "WARPS=8,BLOCK_K=4096", "M=1,M=2", "K==3", " M = 7 , K=33 ", "WARPS=4611686018427387904", "LOOP=2,ROWS=64"} {
		f.Add(s, s)
	}
	tg, _ := target.Lookup("sm_90")
	f.Fuzz(func(t *testing.T, shape, sched string) {
		sh, err := parseShape(shape)
		if err != nil {
			if !strings.Contains(err.Error(), "--shape") {
				t.Errorf("error %q does not name the flag", err)
			}
			return
		}
		sm, err := parseKV("--schedule", sched)
		if err != nil {
			if !strings.Contains(err.Error(), "--schedule") {
				t.Errorf("error %q does not name the flag", err)
			}
			return
		}
		for k := range sh {
			if strings.ContainsAny(k, ",=") || k != strings.TrimSpace(k) || k == "" {
				t.Errorf("parsed size name %q", k)
			}
		}
		if m, k := sh["M"], sh["K"]; m <= 0 || k <= 0 || m > 1<<10 || k > 1<<12 || len(sh) != 2 {
			return // planning big shapes is slow; the parsers are what this fuzzes
		}
		ops.Rowwise.NewPlan(tg, sh, nil, schedule.Params(sm)) //nolint:errcheck // refusals are errors, not panics
	})
}
