package bench

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// bench/peers.py's torch-free logic — jobs, inputs' specs, ideal bytes,
// rows, the table — and its peers' maths on a value-level stand-in for
// torch run here; its timing runs on the GPU machine.
func TestPeersScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("FP8GEN_REQUIRE_PYTHON") == "1" {
			t.Fatal("python3 not found, and FP8GEN_REQUIRE_PYTHON=1")
		}
		t.Skip("no python3")
	}
	cmd := exec.Command(py, "-B", "-m", "unittest", "test_peers")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("python3 -m unittest test_peers: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out[max(0, len(out)-200):])))
}
