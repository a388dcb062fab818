package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Progress shows how far a benchmark run has got as a single line that it
// rewrites in place with '\r'. It writes only to a terminal: given any
// other writer (a file, a pipe, a bytes.Buffer) it writes nothing, so logs
// and captured output stay clean. Its methods may be called from several
// goroutines.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	total int
	done  int
	label string
	start time.Time
	width int // length of the line last written, to blank what is left of it
}

// NewProgress returns a Progress for total steps, each line starting with
// label.
func NewProgress(w io.Writer, total int, label string) *Progress {
	return &Progress{w: w, tty: isTerminal(w), total: total, label: label, start: time.Now()}
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// maxLine keeps the line within an 80-column terminal: a longer line would
// wrap, and '\r' would then not return to its start.
const maxLine = 79

// Step counts one step as started and shows msg, such as
// "rowwise_cast 8192x8192 fp8gen".
func (p *Progress) Step(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.show(fmt.Sprintf("%s [%d/%d] %s", p.label, p.done, p.total, msg))
}

// Log writes a whole line, such as one result as it is measured (so that
// a run cut short keeps what it measured), above the progress line on a
// terminal and plainly on any other writer.
func (p *Progress) Log(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.width > 0 {
		fmt.Fprintf(p.w, "\r%*s\r", p.width, "")
		p.width = 0
	}
	fmt.Fprintln(p.w, line)
}

// Done replaces the line with a summary and ends it with a newline.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.show(fmt.Sprintf("%s: %d steps in %.1fs", p.label, p.done, time.Since(p.start).Seconds()))
	if p.tty {
		fmt.Fprint(p.w, "\n")
		p.width = 0
	}
}

// show overwrites the current line with line.
func (p *Progress) show(line string) {
	if !p.tty {
		return
	}
	if r := []rune(line); len(r) > maxLine {
		line = string(r[:maxLine-1]) + "…"
	}
	n := len([]rune(line))
	pad := max(0, p.width-n)
	fmt.Fprintf(p.w, "\r%s%*s", line, pad, "")
	p.width = n
}
