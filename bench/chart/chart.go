// Package chart draws bench rows as a PNG bar chart: for each op and shape
// a group of bars, one an implementation, at the percentage of the
// device copy's bandwidth that each reaches. It is apart from package
// bench, and used by cmd/fp8gen-plot rather than by fp8gen itself, because
// the plotting library parses its fonts when a program starts: linked
// into fp8gen it was a fifth of every command's start (a tune's cache hit
// among them).
package chart

import (
	"fmt"
	"image/color"
	"io"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fp8gen/fp8gen/bench"
	"github.com/fp8gen/fp8gen/internal/atomicfile"
)

// plotImpls are the implementations Write draws, in the order of the bars in
// each group.
var plotImpls = []string{bench.ImplFP8Gen, bench.ImplEager, bench.ImplCompiled, bench.ImplAutotune}

// Write draws a PNG bar chart of rows to path: for each op and shape a
// group of bars, one for each of fp8gen, eager, compiled and max-autotune
// that has rows, whose height is the percentage of the copy's bandwidth
// that it reaches (see bench.FillPctCopy). A dashed line marks the copy at
// 100%. Failed or missing measurements are drawn as zero. The file is
// written atomically.
func Write(rows []bench.Row, path string) error {
	rows = slices.Clone(rows)
	bench.FillPctCopy(rows)
	gs := bench.Groups(rows)
	var labels []string
	for _, g := range gs {
		labels = append(labels, g.Op+"\n"+g.Label())
	}
	if len(gs) == 0 {
		return fmt.Errorf("chart: no rows to plot")
	}

	var present []string
	for _, impl := range plotImpls {
		if slices.ContainsFunc(rows, func(r bench.Row) bool { return r.Impl == impl }) {
			present = append(present, impl)
		}
	}
	if len(present) == 0 {
		return fmt.Errorf("chart: no fp8gen or peer rows to plot")
	}

	p := plot.New()
	p.Title.Text = "FP8 quantization: % of device-to-device copy bandwidth"
	if gpu := firstGPU(rows); gpu != "" {
		p.Title.Text += " (" + gpu + ")"
	}
	p.Y.Label.Text = "% of copy GB/s (higher is better)"
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = false
	p.Add(plotter.NewGrid())

	const barWidth = 14 // points
	w := vg.Points(barWidth)
	for i, impl := range present {
		vals := make(plotter.Values, len(gs))
		for j, g := range gs {
			if r, found := g.Impl[impl]; found && r.Measured() {
				vals[j] = r.PctCopy
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(2*i-len(present)+1) / 2
		p.Add(bars)
		p.Legend.Add(impl, bars)
	}
	ceiling := plotter.NewFunction(func(float64) float64 { return 100 })
	ceiling.Color = color.Gray{Y: 64}
	ceiling.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(ceiling)
	p.Legend.Add("copy", ceiling)
	// Leave room above the tallest bar and the copy line for the legend.
	p.Y.Max = max(p.Y.Max, 100) * 1.35
	p.NominalX(labels...)
	p.X.Tick.Label.YAlign = draw.YTop

	width := max(6*vg.Inch, vg.Length(len(gs))*(vg.Length(len(present)+2)*w))
	wt, err := p.WriterTo(width, 4*vg.Inch, "png")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, func(f io.Writer) error {
		_, err := wt.WriteTo(f)
		return err
	})
}

// firstGPU returns the GPU named by the first row that names one.
func firstGPU(rows []bench.Row) string {
	for _, r := range rows {
		if r.GPU != "" {
			return r.GPU
		}
	}
	return ""
}
