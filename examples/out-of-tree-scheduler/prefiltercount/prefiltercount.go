// Package prefiltercount is a trivial out-of-tree scheduler plugin: a
// PreFilter that lets every pod through and counts the pods it saw. It
// stands for the plugins of a scheduler-plugins style build; enable it in
// a profile of the KubeSchedulerConfiguration:
//
//	profiles:
//	- schedulerName: default-scheduler
//	  plugins:
//	    preFilter:
//	      enabled:
//	      - name: PreFilterCount
package prefiltercount

import (
	"context"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Name is the plugin's name in the scheduler configuration.
const Name = "PreFilterCount"

// PreFilterCount counts the pods it pre-filters and rejects none.
type PreFilterCount struct {
	calls atomic.Int64
}

var (
	_ fwk.PreFilterPlugin = &PreFilterCount{}
	_ fwk.SignPlugin      = &PreFilterCount{}
)

// New is the plugin's factory, for app.WithPlugin.
func New(ctx context.Context, _ runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	klog.FromContext(ctx).Info("Out-of-tree plugin created", "plugin", Name)
	return &PreFilterCount{}, nil
}

// Name returns the plugin's name.
func (pl *PreFilterCount) Name() string { return Name }

// PreFilter counts the pod and lets it through to every node.
func (pl *PreFilterCount) PreFilter(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	n := pl.calls.Add(1)
	klog.FromContext(ctx).V(4).Info("Pre-filtered a pod", "plugin", Name, "pod", klog.KObj(pod), "count", n)
	return nil, nil
}

// PreFilterExtensions returns nil: the plugin has no AddPod/RemovePod.
func (pl *PreFilterCount) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// SignPod returns no signature fragment: the plugin's result is the same
// for every pod, so it does not turn off the scheduler's batching of
// pods with equal signatures (a plugin that does not sign does).
func (pl *PreFilterCount) SignPod(context.Context, *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}

// Calls is the number of pods pre-filtered so far.
func (pl *PreFilterCount) Calls() int64 { return pl.calls.Load() }
