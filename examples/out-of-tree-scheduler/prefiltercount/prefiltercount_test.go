package prefiltercount

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPreFilterCountsAndAllows(t *testing.T) {
	ctx := context.Background()
	p, err := New(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*PreFilterCount)
	if pl.Name() != Name {
		t.Errorf("Name() = %q, want %q", pl.Name(), Name)
	}
	for i := range 3 {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}}
		res, status := pl.PreFilter(ctx, nil, pod, nil)
		if res != nil || !status.IsSuccess() {
			t.Fatalf("PreFilter #%d = %v, %v; want nil, success", i+1, res, status)
		}
	}
	if got := pl.Calls(); got != 3 {
		t.Errorf("Calls() = %d, want 3", got)
	}
	if fragments, status := pl.SignPod(ctx, &v1.Pod{}); len(fragments) != 0 || !status.IsSuccess() {
		t.Errorf("SignPod = %v, %v; want no fragments, success", fragments, status)
	}
}
