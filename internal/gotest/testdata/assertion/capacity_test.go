package capacity

import (
	"log"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	log.SetFlags(0)
	log.SetOutput(os.Stderr)
	os.Exit(m.Run())
}

func TestNodeWithoutPools(t *testing.T) {
	for i := 0; i < 3; i++ {
		log.Printf("I1122 09:36:15.341137   4242 cache.go:%d] node added", 100+i)
	}
	t.Log("a node without pools takes no claim")
}

func TestFree(t *testing.T) {
	for _, tc := range []struct {
		name           string
		capacity, used int
		want           int
	}{
		{"an empty node takes all its capacity", 9, 0, 9},
		{"a full node takes nothing", 9, 9, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A component that logs a lot before the assertion.
			for i := 0; i < 40; i++ {
				log.Printf("I1122 09:36:15.341164   4242 scheduling_queue.go:%d] pod moved", 200+i)
			}
			if got := Free(tc.capacity, tc.used); got != tc.want {
				t.Errorf("Free(%d, %d) = %d, want %d\nreserved claims: %d", tc.capacity, tc.used, got, tc.want, tc.used)
			}
		})
	}
}

func TestOversell(t *testing.T) {
	log.Printf("I1122 09:36:15.341200   4242 capacity.go:30] oversell ratio 1")
}
