// Command fp8gen-plot reports the rows that fp8gen bench writes: as a PNG
// bar chart, each case a group of bars at the percentage of the device
// copy's bandwidth that fp8gen and each PyTorch peer reach; or as the
// README's performance table.
//
//	fp8gen-plot [-o OUT.png] ROWS.json [MORE.json …]
//	fp8gen-plot --markdown ROWS.json …          the table on stdout
//	fp8gen-plot --readme README.md [--check] ROWS.json …
//
// --readme rewrites the table between the README's two marker lines
// (readmeBegin, readmeEnd); with --check it writes nothing and fails if
// the table there is not the one the rows give, which is how `make check`
// keeps the README's numbers those of the committed results.
//
// The rows of several files are drawn together (a later row of the same
// case and implementation counts). OUT defaults to the first file's name
// with .png for .json. fp8gen bench runs it where it finds it, beside
// fp8gen or on PATH; it is a program of its own because the plotting
// library parses its fonts when a program starts, which every fp8gen
// command would pay. Misuse is a line saying what is wrong, then the
// usage, and exit status 2; rows that cannot be read or drawn, a chart or
// README that cannot be written, or a stale README under --check exit
// status 1.
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
	"github.com/fp8gen/fp8gen/internal/atomicfile"
)

// The README's lines around the performance table.
const (
	readmeBegin = "<!-- performance table: written by `make readme` from bench/results; do not edit -->"
	readmeEnd   = "<!-- end of performance table -->"
)

const usageText = "usage: fp8gen-plot [-o OUT.png | --markdown | --readme README.md [--check]] ROWS.json [MORE.json …]"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fp8gen-plot", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "the PNG to write (default: the first file's name with .png)")
	markdown := fs.Bool("markdown", false, "print the performance table instead of drawing")
	readme := fs.String("readme", "", "rewrite the performance table in this README")
	check := fs.Bool("check", false, "with --readme: fail if the README's table is stale, write nothing")
	usage := func(err error) int {
		fmt.Fprintf(stderr, "fp8gen-plot: %v\n%s\n", err, usageText)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, usageText)
			return 0
		}
		return usage(err)
	}
	if fs.NArg() == 0 {
		return usage(errors.New("no rows file given"))
	}
	switch {
	case *check && *readme == "":
		return usage(errors.New("--check goes with --readme"))
	case *markdown && *readme != "":
		return usage(errors.New("--markdown and --readme: choose one"))
	case *out != "" && (*markdown || *readme != ""):
		return usage(errors.New("-o draws a chart; --markdown and --readme write none"))
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
	if *markdown {
		fmt.Fprint(stdout, bench.Summary(rows))
		return 0
	}
	if *readme != "" {
		return updateReadme(*readme, bench.Summary(rows), *check, fs.Args(), stderr)
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

// updateReadme puts table between the README's markers, or under check
// reports whether it is there already.
func updateReadme(path, table string, check bool, from []string, stderr io.Writer) int {
	doc, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "fp8gen-plot: %v\n", err)
		return 1
	}
	next, err := bench.ReplaceBetween(string(doc), readmeBegin, readmeEnd, table)
	if err != nil {
		fmt.Fprintf(stderr, "fp8gen-plot: %s: %v\n", path, err)
		return 1
	}
	if check {
		if next != string(doc) {
			fmt.Fprintf(stderr, "fp8gen-plot: %s: the performance table is not that of %s; run make readme\n", path, strings.Join(from, ", "))
			return 1
		}
		return 0
	}
	if next == string(doc) {
		return 0
	}
	if err := atomicfile.WriteFile(path, []byte(next)); err != nil {
		fmt.Fprintf(stderr, "fp8gen-plot: %v\n", err)
		return 1
	}
	return 0
}
