package csilocal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// patchPools sets the node's annotation to value.
func patchPools(ctx context.Context, client kubernetes.Interface, node, annotation, value string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{annotation: value}},
	})
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// WaitForNode returns the Node object, retrying until it exists (the
// kubelet may not have registered it yet) or ctx is done.
func WaitForNode(ctx context.Context, client kubernetes.Interface, name string) (*v1.Node, error) {
	var node *v1.Node
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Cap: 10 * time.Second, Steps: 1 << 30},
		func(ctx context.Context) (bool, error) {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				klog.FromContext(ctx).V(2).Info("Waiting for the Node", "node", name, "err", err)
				return false, nil
			}
			node = n
			return true, nil
		})
	if err != nil {
		return nil, fmt.Errorf("node %q: %w", name, err)
	}
	return node, nil
}

// KeepPoolsAnnotation writes value into the node's annotation, the pools
// annotation of a driver (Names.PoolsAnnotation), and
// writes it again whenever the Node shows another value (someone changed
// it, or the Node was deleted and registered again), until ctx is done.
// It returns once the first write succeeded; the returned channel is
// closed when it stops.
func KeepPoolsAnnotation(ctx context.Context, client kubernetes.Interface, node, annotation, value string) (<-chan struct{}, error) {
	logger := klog.FromContext(ctx).WithValues("node", node, "annotation", annotation, "value", value)
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Cap: 10 * time.Second, Steps: 1 << 30},
		func(ctx context.Context) (bool, error) {
			if err := patchPools(ctx, client, node, annotation, value); err != nil {
				logger.V(2).Info("Cannot write the pools yet", "err", err)
				return false, nil
			}
			return true, nil
		})
	if err != nil {
		return nil, fmt.Errorf("writing the pools annotation of node %q: %w", node, err)
	}
	logger.Info("Wrote the pools annotation")

	factory := informers.NewSharedInformerFactoryWithOptions(client, time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", node).String()
		}))
	restore := func(obj any) {
		n, ok := obj.(*v1.Node)
		if !ok || n.Name != node || n.Annotations[annotation] == value {
			return
		}
		if err := patchPools(ctx, client, node, annotation, value); err != nil {
			logger.Error(err, "Cannot restore the pools annotation; retrying at the next resync")
			return
		}
		logger.Info("Restored the pools annotation", "was", n.Annotations[annotation])
	}
	if _, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    restore,
		UpdateFunc: func(_, obj any) { restore(obj) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		<-ctx.Done()
		factory.Shutdown()
		close(done)
	}()
	return done, nil
}
