package csilocal

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// keyWorker calls sync, one key at a time, for every object an informer
// adds or updates, and retries a key whose sync fails with the
// controllers' rate limiter: the loop of the driver's small controllers
// (ClaimAnnotator, VolumeReleaser).
type keyWorker struct {
	queue workqueue.TypedRateLimitingInterface[string]
	sync  func(ctx context.Context, key string) error
	// failed and kind name a failed sync in the log: "Annotating claim",
	// "claim".
	failed, kind string
}

// newKeyWorker queues the keys of informer's objects. Call it before the
// informer starts.
func newKeyWorker(name string, informer cache.SharedIndexInformer, failed, kind string, sync func(ctx context.Context, key string) error) (*keyWorker, error) {
	w := &keyWorker{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		sync: sync, failed: failed, kind: kind,
	}
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			w.queue.Add(key)
		}
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	return w, err
}

// Run works until ctx is done.
func (w *keyWorker) Run(ctx context.Context) {
	defer w.queue.ShutDown()
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for w.next(ctx) {
		}
	}, time.Second)
	<-ctx.Done()
}

func (w *keyWorker) next(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	if err := w.sync(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, w.failed, w.kind, key)
		w.queue.AddRateLimited(key)
		return true
	}
	w.queue.Forget(key)
	return true
}
