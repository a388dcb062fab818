package bench

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

	"github.com/fp8gen/fp8gen/internal/atomicfile"
)

// plotImpls are the implementations Plot draws, in the order of the bars in
// each group.
var plotImpls = []string{ImplFP8Gen, ImplEager, ImplCompiled, ImplAutotune}

// Plot draws a PNG bar chart of rows to path: for each op and shape a group
// of bars, one for each of fp8gen, eager and compiled that has rows, whose
// height is the percentage of the copy's bandwidth that it reaches (see
// FillPctCopy). A dashed line marks the copy at 100%. Failed or missing
// measurements are drawn as zero. The file is written atomically.
func Plot(rows []Row, path string) error {
	rows = slices.Clone(rows)
	FillPctCopy(rows)
	gs := groups(rows)
	var labels []string
	for _, g := range gs {
		labels = append(labels, g.op+"\n"+g.shape)
	}
	if len(gs) == 0 {
		return fmt.Errorf("bench: no rows to plot")
	}

	var present []string
	for _, impl := range plotImpls {
		if slices.ContainsFunc(rows, func(r Row) bool { return r.Impl == impl }) {
			present = append(present, impl)
		}
	}
	if len(present) == 0 {
		return fmt.Errorf("bench: no fp8gen, eager or compiled rows to plot")
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
			if r, found := g.impl[impl]; ok(r, found) {
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
func firstGPU(rows []Row) string {
	for _, r := range rows {
		if r.GPU != "" {
			return r.GPU
		}
	}
	return ""
}
