package capacity

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}

func TestWaitsForever(t *testing.T) {
	t.Log("waiting for a pod that is never bound")
	time.Sleep(time.Hour)
}
