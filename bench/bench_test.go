package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sample is a handmade run: fp8gen timed from Go, the peers from peers.py.
func sample() []Row {
	const gpu, date = "NVIDIA H200", "2026-01-02"
	return []Row{
		{Op: "rowwise_cast", Shape: "8192x8192", Impl: ImplEager, TimeUS: 400, Bytes: 201359360, GBPerS: 503.4, PctCopy: 12.5, GPU: gpu, Date: date, Torch: "2.11.0"},
		{Op: "rowwise_cast", Shape: "8192x8192", Impl: ImplCompiled, TimeUS: 90, Bytes: 201359360, GBPerS: 2237.3, PctCopy: 55.5, GPU: gpu, Date: date, CompileMode: "default"},
		{Op: "rowwise_cast", Shape: "8192x8192", Impl: ImplAutotune, TimeUS: 75, Bytes: 201359360, GBPerS: 2684.8, PctCopy: 66.7, GPU: gpu, Date: date, CompileMode: "max-autotune-no-cudagraphs"},
		{Op: "rowwise_cast", Shape: "8192x8192", Impl: ImplCopy, TimeUS: 50, Bytes: 201359360, GBPerS: 4027.2, PctCopy: 100, GPU: gpu, Date: date},
		{Op: "rowwise_cast", Shape: "8192x8192", Impl: ImplFP8Gen, TimeUS: 60, Bytes: 201359360, GBPerS: 3356.0, PctCeiling: 69.9, GPU: gpu, Date: date},
		{Op: "colwise_cast", Shape: "16384x8192", Impl: ImplEager, TimeUS: 1000, GBPerS: 400, PctCopy: 10, GPU: gpu, Date: date},
		{Op: "colwise_cast", Shape: "16384x8192", Impl: ImplCompiled, GPU: gpu, Date: date, Error: "BackendCompilerFailed: boom"},
		{Op: "colwise_cast", Shape: "16384x8192", Impl: ImplFP8Gen, TimeUS: 250, GBPerS: 1600, GPU: gpu, Date: date},
	}
}

func TestJSONRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.json")
	rows := sample()
	if err := WriteJSON(path, rows); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, rows)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("WriteJSON left %d files, want 1", len(entries))
	}
}

func TestReadJSONFromPython(t *testing.T) {
	// A row as peers.py writes it: null for a failed time, fields Row does
	// not know, snake_case names.
	const js = `[{"op": "tensorwise_cast", "shape": "8192x8192", "impl": "compiled",
		"time_us": null, "bytes": 201326596, "gb_per_s": null, "pct_copy": null,
		"gpu": "NVIDIA H200", "date": "2026-01-02", "torch": "2.11.0+cu128",
		"fp8": "e4m3fn", "compile_mode": "default", "error": "RuntimeError: x", "extra": 1,
		"options": {"fp8": "e4m3", "in": "bf16"}}]`
	path := filepath.Join(t.TempDir(), "peers.json")
	if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Row{Op: "tensorwise_cast", Shape: "8192x8192", Impl: ImplCompiled, Bytes: 201326596,
		GPU: "NVIDIA H200", Date: "2026-01-02", Torch: "2.11.0+cu128", FP8: "e4m3fn",
		CompileMode: "default", Error: "RuntimeError: x", Options: map[string]string{"fp8": "e4m3", "in": "bf16"}}
	if diff := cmp.Diff([]Row{want}, rows); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
}

func TestTable(t *testing.T) {
	table := Table(sample())
	t.Log("\n" + table)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header, rule and 2 lines, got %d lines", len(lines))
	}
	want := []string{
		// fp8gen 60 µs vs eager 400 µs, compiled 90 µs and autotune 75 µs;
		// % copy filled in from the copy row: 3356/4027.2.
		"| rowwise_cast | 8192x8192 | 60.0 | 3356 | 83.3 | 69.9 | 400.0 | 90.0 | 75.0 | 6.67× | 1.50× | 1.25× |",
		// 1000/250 = 4×; compiled failed, autotune not run; no copy row, no ceiling.
		"| colwise_cast | 16384x8192 | 250.0 | 1600 | — | — | 1000.0 | error | — | 4.00× | — | — |",
	}
	for i, w := range want {
		if lines[2+i] != w {
			t.Errorf("line %d:\n got %s\nwant %s", i, lines[2+i], w)
		}
	}
	if !strings.HasPrefix(lines[0], "| op | shape | fp8gen µs |") {
		t.Errorf("header %s", lines[0])
	}
}

func TestTableLastRowWins(t *testing.T) {
	rows := sample()[:5]
	rows = append(rows, Row{Op: "rowwise_cast", Shape: "8192x8192", Impl: ImplFP8Gen, TimeUS: 45, GBPerS: 4474})
	if table := Table(rows); !strings.Contains(table, "| 45.0 |") || !strings.Contains(table, "| 2.00× |") {
		t.Errorf("the later fp8gen row should count:\n%s", table)
	}
}

func TestFillPctCopy(t *testing.T) {
	rows := sample()
	FillPctCopy(rows)
	if got := rows[4].PctCopy; got < 83.3 || got > 83.4 {
		t.Errorf("fp8gen PctCopy = %v, want 100*3356/4027.2", got)
	}
	if rows[0].PctCopy != 12.5 {
		t.Errorf("FillPctCopy overwrote a measured PctCopy: %v", rows[0].PctCopy)
	}
	if rows[7].PctCopy != 0 {
		t.Errorf("PctCopy without a copy row = %v, want 0", rows[7].PctCopy)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{10, 10, 1, 1000, 10}, 10},
	} {
		in := append([]float64(nil), tc.in...)
		if got := Median(in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !reflect.DeepEqual(in, tc.in) && tc.in != nil {
			t.Errorf("Median reordered its input: %v", in)
		}
	}
}

func TestProgressSilentOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, 3, "bench")
	p.Step("rowwise_cast 8192x8192")
	p.Step("colwise_cast 8192x8192")
	p.Done()
	if buf.Len() != 0 {
		t.Fatalf("wrote %q to a non-terminal", buf.String())
	}
	// A regular file is not a terminal either.
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p = NewProgress(f, 1, "bench")
	p.Step("x")
	p.Done()
	if fi, _ := f.Stat(); fi.Size() != 0 {
		t.Fatalf("wrote %d bytes to a file", fi.Size())
	}
}

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, 2, "bench")
	p.tty = true // as if buf were a terminal
	p.Step("rowwise_cast 16384x8192")
	p.Step("tensorwise")
	p.Step(strings.Repeat("x", 200))
	p.Done()
	out := buf.String()
	parts := strings.Split(out, "\r")
	if len(parts) != 5 || parts[0] != "" {
		t.Fatalf("want 4 lines each started by \\r, got %q", out)
	}
	if parts[1] != "bench [1/2] rowwise_cast 16384x8192" {
		t.Errorf("first line %q", parts[1])
	}
	// The shorter second line blanks the rest of the first.
	if want := "bench [2/2] tensorwise"; !strings.HasPrefix(parts[2], want) || len(parts[2]) != len(parts[1]) || strings.TrimRight(parts[2], " ") != want {
		t.Errorf("second line %q", parts[2])
	}
	if n := len([]rune(parts[3])); n != maxLine {
		t.Errorf("long line is %d runes, want it cut to %d", n, maxLine)
	}
	if !strings.HasPrefix(parts[4], "bench: 3 steps in ") || !strings.HasSuffix(parts[4], "\n") {
		t.Errorf("done line %q", parts[4])
	}
}

// With --sweep's rows the table shows the space's best beside the
// default, and how much slower the default is.
func TestTableSweep(t *testing.T) {
	rows := append(sample(), Row{Op: "rowwise_cast", Shape: "8192x8192", Impl: ImplSweepBest, TimeUS: 50, GBPerS: 4027})
	table := Table(rows)
	if !strings.Contains(table, "| sweep best µs | default vs best |") || !strings.Contains(table, "| 50.0 | +20.0% |") {
		t.Errorf("no sweep columns, or wrong ones:\n%s", table)
	}
	if strings.Contains(Table(sample()), "sweep best") {
		t.Error("sweep columns without sweep rows")
	}
}

// With apart rows the table shows the single ops' time back to back and
// fp8gen's speedup over it.
func TestTableApart(t *testing.T) {
	rows := append(sample(), Row{Op: "rowwise_cast", Shape: "8192x8192", Impl: ImplApart, TimeUS: 90, GBPerS: 2000})
	table := Table(rows)
	if !strings.Contains(table, "| apart µs | vs apart |") || !strings.Contains(table, "| 90.0 | 1.50× |") {
		t.Errorf("no apart columns, or wrong ones:\n%s", table)
	}
	if strings.Contains(Table(sample()), "apart") {
		t.Error("apart columns without apart rows")
	}
}

// Log writes whole lines everywhere; on a terminal it first blanks the
// progress line, which the next Step draws again.
func TestProgressLog(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, 2, "bench")
	p.Log("  rowwise_cast 8192x8192: fp8gen 60.0 µs")
	if got := buf.String(); got != "  rowwise_cast 8192x8192: fp8gen 60.0 µs\n" {
		t.Errorf("off a terminal: %q", got)
	}
	buf.Reset()
	p.tty = true
	p.Step("rowwise_cast 8192x8192")
	p.Log("a result")
	p.Step("colwise_cast 8192x8192")
	want := "\rbench [1/2] rowwise_cast 8192x8192\r" + strings.Repeat(" ", len("bench [1/2] rowwise_cast 8192x8192")) + "\ra result\n\rbench [2/2] colwise_cast 8192x8192"
	if got := buf.String(); got != want {
		t.Errorf("on a terminal:\n got %q\nwant %q", got, want)
	}
}

func TestMergeReplacesMeasuredCases(t *testing.T) {
	nk := map[string]string{"layout": "nk"}
	kn := map[string]string{"layout": "kn"}
	old := []Row{
		{Op: "expert_colwise_cast", Shape: "1x2x3", Options: kn, Impl: ImplFP8Gen, TimeUS: 1},
		{Op: "expert_colwise_cast", Shape: "4x5x6", Options: kn, Impl: ImplFP8Gen, TimeUS: 2},
		{Op: "expert_colwise_cast", Shape: "1x2x3", Options: nk, Impl: ImplFP8Gen, TimeUS: 3},
		{Op: "rowwise_cast", Shape: "8x8", Impl: ImplFP8Gen, TimeUS: 4},
	}
	fresh := []Row{{Op: "expert_colwise_cast", Shape: "1x2x3", Options: kn, Impl: ImplFP8Gen, TimeUS: 5}}
	got := Merge(old, fresh, []string{"rowwise_cast", "expert_colwise_cast"})
	// The kn case's rows at every shape give way to the run's; nk and
	// rowwise stay; rowwise first, as the ops list orders them.
	var times []float64
	for _, r := range got {
		times = append(times, r.TimeUS)
	}
	if diff := cmp.Diff([]float64{4, 3, 5}, times); diff != "" {
		t.Errorf("merged rows' times (-want +got):\n%s", diff)
	}
}

func TestGroupsNameTheVaryingOptions(t *testing.T) {
	rows := []Row{
		{Op: "expert_colwise_cast", Shape: "1x2x3", Options: map[string]string{"layout": "kn", "fp8": "e4m3"}, Impl: ImplFP8Gen},
		{Op: "expert_colwise_cast", Shape: "1x2x3", Options: map[string]string{"layout": "nk", "fp8": "e4m3"}, Impl: ImplFP8Gen},
		{Op: "rowwise_cast", Shape: "8x8", Options: map[string]string{"fp8": "e4m3"}, Impl: ImplFP8Gen},
	}
	var labels []string
	for _, g := range Groups(rows) {
		labels = append(labels, g.Op+" "+g.Label())
	}
	want := []string{"expert_colwise_cast 1x2x3 layout=kn", "expert_colwise_cast 1x2x3 layout=nk", "rowwise_cast 8x8"}
	if diff := cmp.Diff(want, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

// Rows of two GPUs: each case is its own GPU's, named in a column, and a
// case timed on both stays two rows with their own peers.
func TestSummaryTwoGPUs(t *testing.T) {
	row := func(gpu, impl string, us float64) Row {
		return Row{Op: "mx_cast", Shape: "64x64", Impl: impl, TimeUS: us, GBPerS: 100 / us, GPU: gpu, Date: "2026-12-06"}
	}
	s := Summary([]Row{
		row("NVIDIA H200", ImplCopy, 4), row("NVIDIA H200", ImplFP8Gen, 5), row("NVIDIA H200", ImplCompiled, 10),
		row("NVIDIA H100", ImplCopy, 6), row("NVIDIA H100", ImplFP8Gen, 8), row("NVIDIA H100", ImplCompiled, 12),
	})
	for _, want := range []string{"| op | shape | GPU |", "| `mx_cast` | 64x64 | H200 | 5.0 | 80.0 | — | 2.00× | — |", "| `mx_cast` | 64x64 | H100 | 8.0 | 75.0 | — | 1.50× | — |"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// A case only one GPU ran is labelled by the options that tell it from the
// other GPU's cases of its op, though its own GPU's rows agree on them.
func TestSummaryTwoGPUsVariant(t *testing.T) {
	row := func(gpu, impl, scales string) Row {
		return Row{Op: "mx_cast", Shape: "64x64", Impl: impl, TimeUS: 5, GBPerS: 20, GPU: gpu, Date: "2026-12-07",
			Options: map[string]string{"dim": "0", "scales": scales}}
	}
	s := Summary([]Row{
		row("NVIDIA H200", ImplCopy, "swizzled"), row("NVIDIA H200", ImplFP8Gen, "swizzled"),
		row("NVIDIA H100", ImplCopy, "rowmajor"), row("NVIDIA H100", ImplFP8Gen, "rowmajor"),
	})
	for _, want := range []string{"| `mx_cast` | 64x64 scales=swizzled | H200 |", "| `mx_cast` | 64x64 scales=rowmajor | H100 |"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}
