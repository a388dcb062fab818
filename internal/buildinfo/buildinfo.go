// Package buildinfo reads what the Go toolchain stamped into the running
// binary: the module version and the commit it was built from, so that
// what a binary measured or wrote names the code that did it.
package buildinfo

import "runtime/debug"

// Info is the binary's provenance.
type Info struct {
	Module    string // module version ("(devel)" for a build in the work tree)
	Commit    string // the commit's first 12 hex digits; "" where the build has none (go run, a test)
	Modified  bool   // the work tree had changes the commit lacks
	GoVersion string // "go1.26.8"
}

// Read returns the running binary's Info.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{}
	}
	in := Info{Module: bi.Main.Version, GoVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
			if len(in.Commit) > 12 {
				in.Commit = in.Commit[:12]
			}
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// CommitText is the commit as results name it: "2087d26c1b2a", with
// "+dirty" where the work tree was modified, or "unknown".
func (in Info) CommitText() string {
	switch {
	case in.Commit == "":
		return "unknown"
	case in.Modified:
		return in.Commit + "+dirty"
	}
	return in.Commit
}
