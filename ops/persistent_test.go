package ops

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/schedule"
	"github.com/fp8gen/fp8gen/target"
)

// The persistent rowwise loop (PER_CU > 0) at shapes where each program
// takes several trips and the last trip holds fewer row blocks than there
// are programs, so that the block loaded ahead lies past the last row:
// bit for bit against the reference on every target, with and without
// the prefetch, rows a trip 1 and 2 (M odd, so the last block is cut).
func TestRowwisePersistentTrips(t *testing.T) {
	for _, tname := range target.Names() {
		tg, _ := target.Lookup(tname)
		for _, k := range []int{72, 1000} {
			for _, rows := range []int{1, 2} {
				for _, prefetch := range []int{0, 1} {
					bk, warps := 128, 1
					if k > bk {
						bk, warps = 1024, 4
					}
					m := 2*tg.CUs*rows + 3 // three trips for the first programs, the third nearly empty
					s := schedule.Params{"BLOCK_K": bk, "WARPS": warps, "ROWS": rows, "LOOP": 0, "PER_CU": 1, "PREFETCH": prefetch}
					t.Run(fmt.Sprintf("%s/K=%d/%v", tname, k, s), func(t *testing.T) {
						p, err := Rowwise.NewPlan(tg, Shape{"M": m, "K": k}, nil, s)
						if err != nil {
							t.Fatal(err)
						}
						if g := p.Steps[0].Grid[0]; g != tg.CUs {
							t.Fatalf("grid %d programs, want one a CU (%d): the loop would not take several trips", g, tg.CUs)
						}
						for _, adv := range []bool{false, true} {
							in := Inputs(p.Call, 9, adv)
							check(t, p.Call, in, runInterp(t, p, in))
						}
					})
				}
			}
		}
	}
}

// The persistent loop's reach past M is held below 2^31 by a constraint,
// which a 32-bit export carries into its manifest (the Python loader
// checks only element counts and constraints): near 2^31 rows it is
// refused by name, and the default falls back to a program a block.
func TestRowwisePersistentReach(t *testing.T) {
	tg, _ := target.Lookup("sm_90")
	sh := Shape{"M": 2147483647 - 1000, "K": 1}
	s := schedule.Params{"BLOCK_K": 1, "WARPS": 1, "ROWS": 32, "LOOP": 0, "PER_CU": 1, "PREFETCH": 1}
	if _, err := Rowwise.NewPlan(tg, sh, nil, s); err == nil || !strings.Contains(err.Error(), "steps PER_CU·CUS·ROWS rows past M") {
		t.Errorf("PER_CU=1 at M=%d: %v; want the reach refused", sh["M"], err)
	}
	p, err := Rowwise.NewPlan(tg, sh, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Schedule["PER_CU"] != 0 {
		t.Errorf("default at M=%d: %v; want PER_CU=0", sh["M"], p.Schedule)
	}
}
