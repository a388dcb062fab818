package golden

import (
	"bytes"
	"strings"
)

// The archives use the txtar format of golang.org/x/tools/txtar, which this
// module does not require; the few lines below read and write it.

// archive is a txtar archive: a comment, then named files.
type archive struct {
	comment string
	files   []file
}

type file struct {
	name, data string
}

// withNewline ends a non-empty text with a newline, as txtar requires.
func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// format writes a in txtar form.
func (a *archive) format() []byte {
	var b bytes.Buffer
	b.WriteString(withNewline(a.comment))
	for _, f := range a.files {
		b.WriteString("-- " + f.name + " --\n")
		b.WriteString(withNewline(f.data))
	}
	return b.Bytes()
}

// marker reports whether line is a file marker "-- name --" and the name.
func marker(line string) (string, bool) {
	name, ok := strings.CutPrefix(line, "-- ")
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, " --")
	name = strings.TrimSpace(name)
	return name, ok && name != ""
}

// parseArchive reads txtar data. Text before the first marker is the comment.
func parseArchive(data []byte) *archive {
	a := &archive{}
	var text strings.Builder
	flush := func() {
		if len(a.files) == 0 {
			a.comment = text.String()
		} else {
			a.files[len(a.files)-1].data = text.String()
		}
		text.Reset()
	}
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if name, ok := marker(strings.TrimSuffix(line, "\n")); ok {
			flush()
			a.files = append(a.files, file{name: name})
			continue
		}
		text.WriteString(line)
	}
	flush()
	return a
}

// lookup returns the data of the file called name.
func (a *archive) lookup(name string) (string, bool) {
	for _, f := range a.files {
		if f.name == name {
			return f.data, true
		}
	}
	return "", false
}
