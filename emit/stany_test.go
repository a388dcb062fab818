package emit

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/fp8gen/fp8gen/fp8"
	"github.com/fp8gen/fp8gen/target"
)

// stAnyHarness stores a vector of n bytes 1, 2, …, n with fp8g_st_any at
// every offset of a buffer of 0xee bytes, 16-aligned, through each overload,
// and prints the buffer in hex, one line a store.
const stAnyHarness = `
int main(void) {
  static uint8_t buf[64] __attribute__((aligned(16)));
  const unsigned sizes[4] = {2, 4, 8, 16};
  for (int i = 0; i < 4; i++) {
    const unsigned n = sizes[i];
    for (unsigned off = 0; off < 32; off++) {
      memset(buf, 0xee, sizeof buf);
      uint8_t v[16];
      for (unsigned j = 0; j < 16; j++) v[j] = (uint8_t)(j + 1);
      uint8_t* p = buf + off;
      if (n == 16) { uint4 w; memcpy(&w, v, 16); fp8g_st_any(p, w); }
      if (n == 8) { uint2 w; memcpy(&w, v, 8); fp8g_st_any(p, w); }
      if (n == 4) { uint32_t w; memcpy(&w, v, 4); fp8g_st_any(p, w); }
      if (n == 2) { uint16_t w; memcpy(&w, v, 2); fp8g_st_any(p, w); }
      printf("%u %u ", n, off);
      for (unsigned j = 0; j < sizeof buf; j++) printf("%02x", buf[j]);
      printf("\n");
    }
  }
  return 0;
}
`

// TestStAny runs the unaligned store of the prelude as host C++: at every
// alignment the n bytes land where they belong, low bytes first, and no
// byte beside them changes.
func TestStAny(t *testing.T) {
	tg, err := target.Lookup("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	exe := compileHost(t, hostShim+preludeWith(tg, fp8.Formats(), false)+stAnyHarness, "-fno-strict-aliasing")
	out, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var n, off int
		var got string
		if _, err := fmt.Sscanf(sc.Text(), "%d %d %s", &n, &off, &got); err != nil {
			t.Fatalf("harness line %q: %v", sc.Text(), err)
		}
		want := []byte(strings.Repeat("\xee", 64))
		for j := range n {
			want[off+j] = byte(j + 1)
		}
		if got != fmt.Sprintf("%x", want) {
			t.Errorf("%d bytes at offset %d:\n got %s\nwant %x", n, off, got, want)
		}
		lines++
	}
	if lines != 4*32 {
		t.Errorf("the harness printed %d stores, want %d", lines, 4*32)
	}
}
