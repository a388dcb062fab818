// Package bench holds the results of `fp8gen bench` and reports them.
//
// A benchmark run times each op (rowwise_cast, tensorwise_cast,
// colwise_cast, ...) on each shape ("8192x8192") with several
// implementations: fp8gen's own kernel, timed from Go, and the PyTorch
// peers that bench/peers.py times on the same GPU: "eager" (the plain chain
// of PyTorch ops), "compiled" (torch.compile of that chain) and "copy" (a
// device-to-device copy of the same byte count, the memory-bandwidth
// ceiling that a memory-bound kernel can hope to reach).
//
// # Timing
//
// fp8gen (backend.Prepared.Time), its copy and the peers are timed alike:
// before each repetition 256 MB of zeros are written in the stream (the
// L2 flush of triton's do_bench, which times the peers; peers.py's own
// event loop, where triton is missing, writes the same), then events
// around the op alone, and the median. The flush leaves the L2 full of
// another buffer's dirty lines, whose write-back falls in the op's time:
// on the H200 it costs a 128 MB read-only kernel about 10 µs (33 → 43),
// a copy of 201 MB about 1 µs. Until the tenth session fp8gen was timed
// back to back with no flush while the peers were flushed: its ratios to
// the peers were 2–5% too kind.
//
// Every measurement is a [Row]; rows from Go and from peers.py share one
// JSON form ([ReadJSON], [WriteJSON]), so the two sets can be concatenated
// and reported together with [Table] (a markdown table); package chart
// draws them as a PNG bar chart (in its own binary, fp8gen-plot, so that
// the plotting library's fonts are not loaded at every fp8gen start).
//
// # Peers
//
// bench/peers.py needs python3 with torch (and, for its timing, triton) on
// the GPU machine; Go is not needed there:
//
//	python3 bench/peers.py --jobs jobs.json --out peers.json [--check]
//
// where jobs.json lists the op, shape, sizes, options, FP8 format and
// ideal bytes of each case (fp8gen bench writes it). It times each op
// eager, under torch.compile and under torch.compile(mode=
// "max-autotune-no-cudagraphs") (ImplCompiled, ImplAutotune).
//
// It writes its rows after every measurement, so a crash keeps what was
// measured; a peer that fails (torch.compile cannot build e4m3fnuz on
// NVIDIA, say) gets a row with Error set and the run goes on.
package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/fp8gen/fp8gen/internal/atomicfile"
)

// Implementation names used in Row.Impl.
const (
	ImplFP8Gen   = "fp8gen"
	ImplEager    = "eager"
	ImplCompiled = "compiled" // torch.compile, the default mode
	ImplAutotune = "autotune" // torch.compile(mode="max-autotune-no-cudagraphs")
	ImplCopy     = "copy"
	// ImplSweepBest is fp8gen at the fastest point of its space (bench
	// --sweep), beside the default it reports.
	ImplSweepBest = "fp8gen-sweep-best"
)

// Row is one measurement: one implementation of one op on one shape. Its
// JSON form is the one bench/peers.py writes.
type Row struct {
	Op    string `json:"op"`    // "rowwise_cast"
	Shape string `json:"shape"` // "8192x8192", M x K
	Impl  string `json:"impl"`  // ImplFP8Gen, ImplEager, ImplCompiled, ImplAutotune or ImplCopy

	TimeUS float64 `json:"time_us"` // median time of one launch, microseconds
	// Bytes is the ideal traffic of the op: the input read once and the
	// outputs written once. For a copy row it is the bytes copied, read and
	// written counted both.
	Bytes  int64   `json:"bytes"`
	GBPerS float64 `json:"gb_per_s"` // Bytes / TimeUS, in 1e9 bytes per second
	// PctCopy is GBPerS as a percentage of the copy row's GBPerS for the
	// same op and shape, measured in the same run.
	PctCopy float64 `json:"pct_copy"`
	// PctCeiling is PctCopy as a percentage of the op's own ceiling at this
	// shape: 100% of copy where x is read once, 60% where it must be read
	// twice (fp8gen rows only).
	PctCeiling float64 `json:"pct_ceiling,omitempty"`
	// Schedule names the kernels and schedules that were timed (fp8gen rows).
	Schedule string `json:"schedule,omitempty"`

	GPU         string `json:"gpu"`                    // torch.cuda.get_device_name() or equivalent
	Date        string `json:"date"`                   // UTC date, "2006-01-02"
	Torch       string `json:"torch,omitempty"`        // torch version, for peer rows
	FP8         string `json:"fp8,omitempty"`          // fp8 format, "e4m3fn"
	CompileMode string `json:"compile_mode,omitempty"` // torch.compile mode, for compiled rows
	Check       string `json:"check,omitempty"`        // result of peers.py --check, for compiled rows
	// Error says why the measurement failed; the numbers are then zero.
	Error string `json:"error,omitempty"`
}

// ReadJSON reads the rows of a JSON file written by WriteJSON or peers.py.
func ReadJSON(path string) ([]Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []Row
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// WriteJSON writes rows to path as an indented JSON list, atomically: it
// writes a temporary file in the same directory and renames it over path.
func WriteJSON(path string, rows []Row) error {
	if rows == nil {
		rows = []Row{} // "[]", not "null"
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// Median returns the median of durations (the mean of the middle two for an
// even count), or 0 for none. It does not reorder durations.
func Median(durations []float64) float64 {
	n := len(durations)
	if n == 0 {
		return 0
	}
	s := slices.Clone(durations)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// key identifies one op on one shape.
type key struct{ op, shape string }

// Group is the rows of one op and shape, by implementation (ImplFP8Gen, …).
type Group struct {
	Op, Shape string
	Impl      map[string]Row
}

// Groups gathers rows by op and shape, in the order in which each op and
// shape first appears. Where one op, shape and implementation has several
// rows, the last one counts.
func Groups(rows []Row) []*Group {
	var gs []*Group
	index := map[key]*Group{}
	for _, r := range rows {
		k := key{r.Op, r.Shape}
		g := index[k]
		if g == nil {
			g = &Group{Op: r.Op, Shape: r.Shape, Impl: map[string]Row{}}
			index[k] = g
			gs = append(gs, g)
		}
		g.Impl[r.Impl] = r
	}
	return gs
}

// Measured reports whether r is a successful measurement.
func (r Row) Measured() bool { return r.Error == "" && r.TimeUS > 0 }

// ok reports whether r was found and is a successful measurement.
func ok(r Row, found bool) bool { return found && r.Measured() }

// FillPctCopy sets PctCopy of every successful row that lacks it from the
// copy row of the same op and shape, such as fp8gen's rows timed from Go
// merged with the peers' rows of the same run.
func FillPctCopy(rows []Row) {
	copies := map[key]Row{}
	for _, r := range rows {
		if r.Impl == ImplCopy && ok(r, true) && r.GBPerS > 0 {
			copies[key{r.Op, r.Shape}] = r
		}
	}
	for i, r := range rows {
		c, found := copies[key{r.Op, r.Shape}]
		if r.PctCopy == 0 && found && ok(r, true) && r.GBPerS > 0 {
			rows[i].PctCopy = 100 * r.GBPerS / c.GBPerS
		}
	}
}

// Table returns a markdown table with one line per op and shape: fp8gen's
// time, bandwidth, percentage of the copy's bandwidth and of the nominal
// ceiling, the eager and compiled peers' times, and fp8gen's speedup over
// each peer (peer time / fp8gen time, so 2.00× means fp8gen takes half the
// time). Missing or failed measurements show as "—" or "error".
func Table(rows []Row) string {
	rows = slices.Clone(rows)
	FillPctCopy(rows)
	var b strings.Builder
	sweep := slices.ContainsFunc(rows, func(r Row) bool { return r.Impl == ImplSweepBest })
	b.WriteString("| op | shape | fp8gen µs | GB/s | % copy | % ceiling | eager µs | compiled µs | autotune µs | vs eager | vs compiled | vs autotune |")
	rule := "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	if sweep {
		b.WriteString(" sweep best µs | default vs best |")
		rule += "--:|--:|"
	}
	b.WriteString("\n" + rule + "\n")
	for _, g := range Groups(rows) {
		f, fok := g.Impl[ImplFP8Gen]
		e, eok := g.Impl[ImplEager]
		c, cok := g.Impl[ImplCompiled]
		a, aok := g.Impl[ImplAutotune]
		cols := []string{
			g.Op, g.Shape,
			cell(f, fok, f.TimeUS, "%.1f"),
			cell(f, fok, f.GBPerS, "%.0f"),
			cell(f, fok && f.PctCopy > 0, f.PctCopy, "%.1f"),
			cell(f, fok && f.PctCeiling > 0, f.PctCeiling, "%.1f"),
			cell(e, eok, e.TimeUS, "%.1f"),
			cell(c, cok, c.TimeUS, "%.1f"),
			cell(a, aok, a.TimeUS, "%.1f"),
			speedup(f, fok, e, eok),
			speedup(f, fok, c, cok),
			speedup(f, fok, a, aok),
		}
		if sweep {
			sb, sok := g.Impl[ImplSweepBest]
			slower := "—"
			if ok(f, fok) && ok(sb, sok) {
				slower = fmt.Sprintf("%+.1f%%", 100*(f.TimeUS/sb.TimeUS-1))
			}
			cols = append(cols, cell(sb, sok, sb.TimeUS, "%.1f"), slower)
		}
		b.WriteString("| " + strings.Join(cols, " | ") + " |\n")
	}
	return b.String()
}

// cell formats v from row r, or says why there is no value.
func cell(r Row, found bool, v float64, format string) string {
	switch {
	case r.Error != "":
		return "error"
	case !found || math.IsNaN(v) || math.IsInf(v, 0) || v == 0:
		return "—"
	}
	return fmt.Sprintf(format, v)
}

// speedup formats how many times faster fp8gen's row f is than the peer p.
func speedup(f Row, fok bool, p Row, pok bool) string {
	if !ok(f, fok) || !ok(p, pok) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", p.TimeUS/f.TimeUS)
}
