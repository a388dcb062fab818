// Command fp8gen-plot draws the rows that fp8gen bench writes as a PNG bar
// chart, each op and shape a group of bars at the percentage of the device
// copy's bandwidth that fp8gen and each PyTorch peer reach.
//
//	fp8gen-plot [-o OUT.png] ROWS.json [MORE.json …]
//
// The rows of several files are drawn together (a later row of the same
// op, shape and implementation counts). OUT defaults to the first file's
// name with .png for .json. fp8gen bench runs it where it finds it, beside
// fp8gen or on PATH; it is a program of its own because the plotting
// library parses its fonts when a program starts, which every fp8gen
// command paid (a fifth of a tune's cache hit). Misuse is a line saying
// what is wrong, then the usage, and exit status 2; rows that cannot be
// read or drawn, or a chart that cannot be written, exit status 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fp8gen/fp8gen/bench"
	"github.com/fp8gen/fp8gen/bench/chart"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("fp8gen-plot", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "the PNG to write (default: the first file's name with .png)")
	usage := func(err error) int {
		fmt.Fprintf(stderr, "fp8gen-plot: %v\nusage: fp8gen-plot [-o OUT.png] ROWS.json [MORE.json …]\n", err)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "usage: fp8gen-plot [-o OUT.png] ROWS.json [MORE.json …]")
			return 0
		}
		return usage(err)
	}
	if fs.NArg() == 0 {
		return usage(errors.New("no rows file given"))
	}
	var rows []bench.Row
	for _, f := range fs.Args() {
		if strings.HasPrefix(f, "-") {
			return usage(fmt.Errorf("%s: flags go before the rows files", f))
		}
		if !strings.HasSuffix(f, ".json") {
			return usage(fmt.Errorf("%s: want the .json rows that fp8gen bench writes", f))
		}
		r, err := bench.ReadJSON(f)
		if err != nil {
			fmt.Fprintf(stderr, "fp8gen-plot: %v\n", err)
			return 1
		}
		rows = append(rows, r...)
	}
	path := *out
	if path == "" {
		path = strings.TrimSuffix(fs.Arg(0), ".json") + ".png"
	}
	if err := chart.Write(rows, path); err != nil {
		fmt.Fprintf(stderr, "fp8gen-plot: drawing %s from %s: %v\n", path, strings.Join(fs.Args(), ", "), err)
		return 1
	}
	return 0
}
