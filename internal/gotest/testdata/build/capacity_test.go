package capacity

import "testing"

func TestFree(t *testing.T) {
	if got := FreeOnNode("node-1"); got != 9 {
		t.Errorf("FreeOnNode = %d, want 9", got)
	}
}
