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
// a copy of 201 MB about 1 µs. Timing fp8gen back to back without the
// flush, while the peers are flushed, makes its ratios to them 2–5% too
// kind (measured on the H200).
//
// Every measurement is a [Row] naming its op, shape, options, schedule,
// GPU, date and commit; rows from Go and from peers.py share one JSON form
// ([ReadJSON], [WriteJSON]), so the two sets can be concatenated and
// reported together with [Table] (a markdown table) and [Summary] (the
// README's). The newest rows of each GPU live in one file,
// bench/results/<GPU>.json, into which each run is merged ([Merge]: a
// case measured again replaces its old rows); package chart
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
	"maps"
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
	// ImplApart is fp8gen's single ops that compute the same outputs
	// (Op.Apart), timed back to back, over the op's ideal bytes.
	ImplApart = "fp8gen-apart"
)

// Row is one measurement: one implementation of one op on one shape. Its
// JSON form is the one bench/peers.py writes.
type Row struct {
	Op    string `json:"op"`    // "rowwise_cast"
	Shape string `json:"shape"` // "8192x8192": the op's sizes in its order, joined by x
	// Options are every option of the call, defaults included
	// ({"fp8": "e4m3", "in": "bf16", "pow2": "false"}): the rows of one op
	// and shape with other options are another case.
	Options map[string]string `json:"options,omitempty"`
	Impl    string            `json:"impl"` // ImplFP8Gen, ImplEager, ImplCompiled, ImplAutotune or ImplCopy

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
	Commit      string `json:"commit,omitempty"`       // fp8gen's commit that measured it ("2087d26", "+dirty" if modified)
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

// key identifies one case: an op on one shape with one set of options.
type key struct{ op, shape, options string }

func keyOf(r Row) key { return key{r.Op, r.Shape, r.OptionsText()} }

// OptionsText is Options as NAME=VALUE pairs in name order, joined by
// commas ("fp8=e4m3,in=bf16,pow2=false"); "" for none.
func (r Row) OptionsText() string { return optionsText(r.Options, nil) }

// optionsText joins the options named in only (every option where only
// is nil), in name order.
func optionsText(o map[string]string, only map[string]bool) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if only == nil || only[k] {
			kv = append(kv, k+"="+o[k])
		}
	}
	return strings.Join(kv, ",")
}

// Group is the rows of one case (op, shape, options), by implementation
// (ImplFP8Gen, …).
type Group struct {
	Op, Shape string
	Options   map[string]string
	// Variant is the options that tell this case from the other cases of
	// its op among the rows grouped ("layout=nk"), "" where the op has one
	// set of options.
	Variant string
	Impl    map[string]Row
}

// Label is the case as a table or chart names it: the shape, and the
// variant where there is one.
func (g *Group) Label() string {
	if g.Variant == "" {
		return g.Shape
	}
	return g.Shape + " " + g.Variant
}

// Groups gathers rows by case, in the order in which each case first
// appears. Where one case and implementation has several rows, the last
// one counts.
func Groups(rows []Row) []*Group {
	var gs []*Group
	index := map[key]*Group{}
	for _, r := range rows {
		k := keyOf(r)
		g := index[k]
		if g == nil {
			g = &Group{Op: r.Op, Shape: r.Shape, Options: r.Options, Impl: map[string]Row{}}
			index[k] = g
			gs = append(gs, g)
		}
		g.Impl[r.Impl] = r
	}
	varying := varyingOptions(rows)
	for _, g := range gs {
		g.Variant = optionsText(g.Options, varying[g.Op])
	}
	return gs
}

// varyingOptions names, for each op, the options whose value is not the
// same in all of its rows (an option some rows lack counts as varying).
func varyingOptions(rows []Row) map[string]map[string]bool {
	first := map[string]map[string]string{}
	out := map[string]map[string]bool{}
	for _, r := range rows {
		f, seen := first[r.Op]
		if !seen {
			first[r.Op] = r.Options
			out[r.Op] = map[string]bool{}
			continue
		}
		for k := range maps.Keys(f) {
			if v, ok := r.Options[k]; !ok || v != f[k] {
				out[r.Op][k] = true
			}
		}
		for k := range maps.Keys(r.Options) {
			if _, ok := f[k]; !ok {
				out[r.Op][k] = true
			}
		}
	}
	return out
}

// Merge returns old's rows with the cases that fresh measured replaced:
// every row of old whose op and options fresh has rows of, at any shape,
// gives way to fresh's rows, so that a results file holds each op's
// latest run whole. Rows come out in op order (the order of ops, then of
// first appearance for ops it does not name), each op's rows in the order
// of the run that measured them.
func Merge(old, fresh []Row, ops []string) []Row {
	type variant struct{ op, options string }
	measured := map[variant]bool{}
	for _, r := range fresh {
		measured[variant{r.Op, r.OptionsText()}] = true
	}
	var out []Row
	for _, r := range old {
		if !measured[variant{r.Op, r.OptionsText()}] {
			out = append(out, r)
		}
	}
	out = append(out, fresh...)
	rank := map[string]int{}
	for i, op := range ops {
		rank[op] = i
	}
	for _, r := range out {
		if _, ok := rank[r.Op]; !ok {
			rank[r.Op] = len(rank)
		}
	}
	slices.SortStableFunc(out, func(a, b Row) int { return rank[a.Op] - rank[b.Op] })
	return out
}

// Measured reports whether r is a successful measurement.
func (r Row) Measured() bool { return r.Error == "" && r.TimeUS > 0 }

// ok reports whether r was found and is a successful measurement.
func ok(r Row, found bool) bool { return found && r.Measured() }

// FillPctCopy sets PctCopy of every successful row that lacks it from the
// copy row of the same op and shape, such as fp8gen's rows timed from Go
// merged with the peers' rows of the same run.
func FillPctCopy(rows []Row) {
	type onGPU struct {
		k   key
		gpu string
	}
	copies := map[onGPU]Row{} // a row's copy is its own GPU's
	for _, r := range rows {
		if r.Impl == ImplCopy && ok(r, true) && r.GBPerS > 0 {
			copies[onGPU{keyOf(r), r.GPU}] = r
		}
	}
	for i, r := range rows {
		c, found := copies[onGPU{keyOf(r), r.GPU}]
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
	apart := slices.ContainsFunc(rows, func(r Row) bool { return r.Impl == ImplApart })
	b.WriteString("| op | shape | fp8gen µs | GB/s | % copy | % ceiling | eager µs | compiled µs | autotune µs | vs eager | vs compiled | vs autotune |")
	rule := "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	if apart {
		b.WriteString(" apart µs | vs apart |")
		rule += "--:|--:|"
	}
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
			g.Op, g.Label(),
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
		if apart {
			ap, apok := g.Impl[ImplApart]
			cols = append(cols, cell(ap, apok, ap.TimeUS, "%.1f"), speedup(f, fok, ap, apok))
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

// Summary is the performance table of the README: for each case, fp8gen's
// time and percentage of the copy's bandwidth and its speedup over each
// PyTorch peer, under a line naming the GPUs, dates, torch versions and
// fp8gen commits of the rows, so that the table says which run it shows.
func Summary(rows []Row) string {
	rows = slices.Clone(rows)
	FillPctCopy(rows)
	var gpus, dates, torches, commits []string
	add := func(list *[]string, v string) {
		if v != "" && !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	for _, r := range rows {
		add(&gpus, r.GPU)
		add(&dates, r.Date)
		add(&torches, r.Torch)
		if r.Impl == ImplFP8Gen {
			add(&commits, r.Commit)
		}
	}
	slices.Sort(dates)
	none := func(l []string) string {
		if len(l) == 0 {
			return "—"
		}
		return strings.Join(l, ", ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s; fp8gen %s; PyTorch %s.\n\n", none(gpus), none(dates), none(commits), none(torches))
	// Rows from several GPUs each name theirs.
	multi := len(gpus) > 1
	if multi {
		b.WriteString("| op | shape | GPU | fp8gen µs | % of copy | vs eager | vs torch.compile | vs max-autotune |\n")
		b.WriteString("|---|---|---|--:|--:|--:|--:|--:|\n")
	} else {
		b.WriteString("| op | shape | fp8gen µs | % of copy | vs eager | vs torch.compile | vs max-autotune |\n")
		b.WriteString("|---|---|--:|--:|--:|--:|--:|\n")
	}
	// A case is grouped with its own GPU's rows (its copy and peers).
	groups := Groups(rows)
	if multi {
		groups = nil
		for _, gpu := range gpus {
			groups = append(groups, Groups(slices.DeleteFunc(slices.Clone(rows), func(r Row) bool { return r.GPU != gpu }))...)
		}
		// Labelled by the options that vary over every GPU's rows: a case
		// one GPU ran alone still names what tells it from the others.
		varying := varyingOptions(rows)
		for _, g := range groups {
			g.Variant = optionsText(g.Options, varying[g.Op])
		}
	}
	for _, g := range groups {
		f, fok := g.Impl[ImplFP8Gen]
		e, eok := g.Impl[ImplEager]
		c, cok := g.Impl[ImplCompiled]
		a, aok := g.Impl[ImplAutotune]
		cols := []string{
			"`" + g.Op + "`", g.Label(),
			cell(f, fok, f.TimeUS, "%.1f"),
			cell(f, fok && f.PctCopy > 0, f.PctCopy, "%.1f"),
			speedup(f, fok, e, eok),
			speedup(f, fok, c, cok),
			speedup(f, fok, a, aok),
		}
		if multi {
			cols = slices.Insert(cols, 2, strings.TrimPrefix(f.GPU, "NVIDIA "))
		}
		b.WriteString("| " + strings.Join(cols, " | ") + " |\n")
	}
	return b.String()
}

// ReplaceBetween returns doc with the text between the lines begin and end
// (each alone on its line, both kept) replaced by body.
func ReplaceBetween(doc, begin, end, body string) (string, error) {
	i := strings.Index(doc, begin+"\n")
	if i < 0 {
		return "", fmt.Errorf("no line %q", begin)
	}
	i += len(begin) + 1
	j := strings.Index(doc[i:], end)
	if j < 0 {
		return "", fmt.Errorf("no line %q after %q", end, begin)
	}
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return doc[:i] + body + doc[i+j:], nil
}
