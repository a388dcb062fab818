package main

import (
	"context"
	"fmt"
	"io"
	goruntime "runtime"
	"strings"

	"github.com/fp8gen/fp8gen/internal/buildinfo"
	"github.com/fp8gen/fp8gen/runtime"
	"github.com/fp8gen/fp8gen/target"
)

// cmdVersion says what this fp8gen is and what it would compile with:
// the module version, commit and Go release it was built from, whether it
// reaches GPUs (cgo), and the nvcc and hipcc it finds, each with the line
// of its --version that names the version.
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "version", stderr)
	if _, err := parse(fs, args, false); err != nil {
		return err
	}
	_, err := io.WriteString(stdout, versionText())
	return err
}

func versionText() string {
	in := buildinfo.Read()
	module := in.Module
	if module == "" {
		module = "unknown"
	}
	goVersion := in.GoVersion
	if goVersion == "" {
		goVersion = goruntime.Version()
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "fp8gen %s, commit %s, built with %s for %s/%s\n", module, in.CommitText(), goVersion, goruntime.GOOS, goruntime.GOARCH)
	if runtime.Cgo {
		sb.WriteString("cgo: yes (runs on CUDA and HIP GPUs through their drivers)\n")
	} else {
		sb.WriteString("cgo: no (" + runtime.ErrNoCgo.Error() + ")\n")
	}
	var c runtime.Compiler
	for _, tc := range []struct {
		name   string
		vendor target.Vendor
	}{{"nvcc", target.NVIDIA}, {"hipcc", target.AMD}} {
		path, version, err := c.Tool(context.Background(), tc.vendor)
		switch {
		case path == "":
			fmt.Fprintf(&sb, "%-5s not found (%v)\n", tc.name, err)
		case err != nil:
			fmt.Fprintf(&sb, "%-5s %s: --version failed: %v\n", tc.name, path, oneLine(err))
		default:
			fmt.Fprintf(&sb, "%-5s %s: %s\n", tc.name, path, version)
		}
	}
	return sb.String()
}
