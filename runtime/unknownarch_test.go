package runtime

import "testing"

func TestCompileErrorUnknownArch(t *testing.T) {
	for _, c := range []struct {
		out  string
		want bool
	}{
		{"clang: error: invalid target ID 'gfx942'; format is a processor name", true},
		{"nvcc fatal   : Unsupported gpu architecture 'compute_90a'", false},
		{"nvcc fatal   : Unsupported CUDA gpu architecture 'sm_90'", true},
		{"k.hip:12:3: error: use of undeclared identifier 'x'", false},
	} {
		if got := (&CompileError{Output: c.out}).UnknownArch(); got != c.want {
			t.Errorf("UnknownArch(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}
