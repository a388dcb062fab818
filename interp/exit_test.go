package interp

import "testing"

// exit finds the deadlock a finishing worker leaves: the one program still
// live waits, and no one is left to signal.
func TestExitFindsDeadlock(t *testing.T) {
	m := &machine{live: 2, waiting: 1}
	m.sync.L = &m.atomic
	woken := make(chan bool)
	m.atomic.Lock()
	go func() {
		m.exit() // takes the lock once the waiter parks
		woken <- true
	}()
	m.sync.Wait() // the waiter parks; exit must wake it
	dead := m.dead
	m.atomic.Unlock()
	<-woken
	if !dead || m.live != 1 {
		t.Fatalf("after a worker's exit with the other waiting: dead %v, live %d; want a deadlock, 1 live", dead, m.live)
	}
}
