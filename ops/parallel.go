package ops

import (
	goruntime "runtime"
	"sync"
)

// refChunks splits a reference's work (head rows, experts, columns) into
// a fixed number of chunks, run in parallel: the references of large
// shapes took tens of seconds to a minute on one core. The count does not
// depend on the machine, so neither do sums combined chunk by chunk.
const refChunks = 64

// refParallel runs body over [0, rows) in refChunks chunks, as many at
// once as Go runs threads.
func refParallel(rows int, body func(lo, hi, chunk int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, goruntime.GOMAXPROCS(0))
	for k := 0; k < refChunks; k++ {
		lo, hi := rows*k/refChunks, rows*(k+1)/refChunks
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			body(lo, hi, k)
		}()
	}
	wg.Wait()
}

// bigParallel is refParallel for n of at least 1<<20, else body(0, n, 0)
// on the calling goroutine: small tensors are not worth the goroutines.
func bigParallel(n int, body func(lo, hi, chunk int)) { rowsParallel(n, 1, body) }

// rowsParallel is bigParallel over the rows [0, m) of width k: in
// parallel where they hold at least 1<<20 elements.
func rowsParallel(m, k int, body func(lo, hi, chunk int)) {
	if m*k < 1<<20 {
		body(0, m, 0)
		return
	}
	refParallel(m, body)
}
