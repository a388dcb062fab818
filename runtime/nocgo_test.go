//go:build !cgo

package runtime

import (
	"errors"
	"testing"
)

// Without cgo, Open finds no GPU and says why: callers that fall back to
// the interpreter on ErrNoDevice still do, and those that name the reason
// find ErrNoCgo.
func TestOpenWithoutCgo(t *testing.T) {
	d, err := Open(0)
	if d != nil || !errors.Is(err, ErrNoDevice) || !errors.Is(err, ErrNoCgo) {
		t.Fatalf("Open(0) without cgo: %v, %v; want ErrNoDevice and ErrNoCgo", d, err)
	}
	if want := "runtime: no GPU device: this fp8gen was built without cgo; GPUs need the cgo build"; err.Error() != want {
		t.Errorf("Open(0): %q, want %q", err, want)
	}
}
