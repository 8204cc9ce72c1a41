package csilocal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

const (
	// LabelDriverName and LabelManagedBy are the labels
	// external-provisioner puts on the CSIStorageCapacity objects it
	// publishes; the publisher uses them the same way.
	LabelDriverName = "csi.storage.k8s.io/drivername"
	LabelManagedBy  = "csi.storage.k8s.io/managed-by"
	// ManagedBy is the publisher's value of LabelManagedBy.
	ManagedBy = "csi-local"
)

// CapacityPublisher publishes what is free on each node for each
// StorageClass of the driver as CSIStorageCapacity objects, as
// external-provisioner does with --enable-capacity for a driver with
// node-local topology: one object per class and node, whose nodeTopology
// selects the node by kubernetes.io/hostname, refreshed every interval.
// Its capacity is the free capacity of the class's pool (of all pools for
// a class without one) at the refresh, with the class's oversellRatio:
// ratio × capacity − used, never below 0. Between two refreshes the
// objects do not know about volumes provisioned since, which is what
// upstream's storage capacity tracking gets from a real driver too. A
// class of the driver that is added or deleted is published at once, as
// external-provisioner does, without waiting for the next refresh.
type CapacityPublisher struct {
	client    kubernetes.Interface
	names     Names
	namespace string
	interval  time.Duration
	cluster   Cluster
	nodes     corelisters.NodeLister
	classes   storagelisters.StorageClassLister
	synced    []cache.InformerSynced
	// refresh asks Run for a refresh before the interval is up.
	refresh chan struct{}
}

// CapacityOptions configure a CapacityPublisher.
type CapacityOptions struct {
	Client kubernetes.Interface
	// Names are the driver's; the zero Names are DefaultNames.
	Names Names
	// Namespace holds the objects.
	Namespace string
	// Interval between two refreshes.
	Interval time.Duration
	// Cluster gives the pools and volumes of a node (a KubeCluster).
	Cluster Cluster
	Nodes   corelisters.NodeLister
	// Classes are read from this informer's lister; a class of the
	// driver that it adds or deletes is published at once.
	Classes storageinformers.StorageClassInformer
	// Synced report whether the informers behind Cluster, Nodes and
	// Classes have synced: Run publishes nothing before.
	Synced []cache.InformerSynced
}

// NewCapacityPublisher returns a publisher; it checks the options.
func NewCapacityPublisher(opts CapacityOptions) (*CapacityPublisher, error) {
	switch {
	case opts.Client == nil || opts.Cluster == nil || opts.Nodes == nil || opts.Classes == nil:
		return nil, errors.New("capacity publisher: a client, the cluster, the node lister and the StorageClass informer are needed")
	case opts.Namespace == "":
		return nil, errors.New("capacity publisher: no namespace for the CSIStorageCapacity objects")
	case opts.Interval <= 0:
		return nil, fmt.Errorf("capacity publisher: the refresh interval must be positive, not %s", opts.Interval)
	}
	p := &CapacityPublisher{
		client: opts.Client, names: opts.Names.orDefault(), namespace: opts.Namespace, interval: opts.Interval,
		cluster: opts.Cluster, nodes: opts.Nodes, classes: opts.Classes.Lister(), synced: opts.Synced,
		refresh: make(chan struct{}, 1),
	}
	classChanged := func(obj interface{}) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if class, ok := obj.(*storagev1.StorageClass); ok && class.Provisioner == p.names.Provisioner {
			p.refreshSoon()
		}
	}
	if _, err := opts.Classes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: classChanged, DeleteFunc: classChanged}); err != nil {
		return nil, fmt.Errorf("capacity publisher: watching StorageClasses: %w", err)
	}
	return p, nil
}

// refreshSoon asks Run for a refresh now; requests made before it runs are
// one refresh.
func (p *CapacityPublisher) refreshSoon() {
	select {
	case p.refresh <- struct{}{}:
	default:
	}
}

// Run refreshes the objects when a class of the driver is added or
// deleted and an interval after the last refresh, until ctx is done, once
// the informers have synced: before, every object would look stale and be
// deleted.
func (p *CapacityPublisher) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("driver", p.names.Driver, "namespace", p.namespace)
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return
	}
	for {
		if err := p.Sync(ctx); err != nil {
			logger.Error(err, "Publishing storage capacity failed; retrying at the next refresh", "interval", p.interval)
		}
		// The interval counts from the last refresh, whatever started it.
		timer := time.NewTimer(p.interval)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-p.refresh:
		}
		timer.Stop()
	}
}

// capacityKey is one published object: a class on a node.
type capacityKey struct {
	class, topology string
}

// Sync makes the objects of the driver what is free now: it creates and
// updates the object of each class of the driver and each node with the
// driver's pools, and deletes the driver's objects of classes and nodes
// that are gone.
func (p *CapacityPublisher) Sync(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	want, err := p.desired()
	if err != nil {
		return err
	}
	selector := labels.SelectorFromSet(labels.Set{LabelDriverName: p.names.Driver, LabelManagedBy: ManagedBy}).String()
	existing, err := p.client.StorageV1().CSIStorageCapacities(p.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing CSIStorageCapacity objects: %w", err)
	}
	var errs []error
	have := map[string]bool{}
	for i := range existing.Items {
		obj := &existing.Items[i]
		have[obj.Name] = true
		wanted, ok := want[obj.Name]
		if !ok {
			if err := p.client.StorageV1().CSIStorageCapacities(p.namespace).Delete(ctx, obj.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting CSIStorageCapacity %s: %w", obj.Name, err))
				continue
			}
			logger.V(2).Info("Deleted storage capacity", "capacity", obj.Name, "storageClass", obj.StorageClassName)
			continue
		}
		if obj.Capacity != nil && obj.Capacity.Cmp(*wanted.Capacity) == 0 {
			continue
		}
		obj.Capacity = wanted.Capacity
		if _, err := p.client.StorageV1().CSIStorageCapacities(p.namespace).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("updating CSIStorageCapacity %s: %w", obj.Name, err))
			continue
		}
		logger.V(2).Info("Updated storage capacity", "capacity", obj.Name, "storageClass", obj.StorageClassName, "bytes", obj.Capacity.Value())
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if have[name] {
			continue
		}
		obj := want[name]
		if _, err := p.client.StorageV1().CSIStorageCapacities(p.namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("creating CSIStorageCapacity %s: %w", name, err))
			continue
		}
		logger.V(2).Info("Created storage capacity", "capacity", name, "storageClass", obj.StorageClassName, "bytes", obj.Capacity.Value())
	}
	return errors.Join(errs...)
}

// desired returns the objects there should be, by name.
func (p *CapacityPublisher) desired() (map[string]*storagev1.CSIStorageCapacity, error) {
	classes, err := p.classes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	nodes, err := p.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	want := map[string]*storagev1.CSIStorageCapacity{}
	for _, node := range nodes {
		topology := node.Labels[v1.LabelHostname]
		if topology == "" || node.Annotations[p.names.PoolsAnnotation()] == "" {
			continue
		}
		pools, volumes, err := p.cluster.NodeVolumes(topology)
		if err != nil {
			// Without usable pools the node gets no objects: nothing
			// is free there.
			continue
		}
		perPool, total := Used(pools, volumes)
		for _, class := range classes {
			if class.Provisioner != p.names.Provisioner {
				continue
			}
			ratio, err := ParseOversellRatio(class.Parameters[ParamOversellRatio])
			if err != nil {
				continue
			}
			capacity, used := pools.Total(), total
			if pool := class.Parameters[ParamPool]; pool != "" {
				c, ok := pools[pool]
				if !ok {
					continue
				}
				capacity, used = c, perPool[pool]
			}
			free := int64(math.Floor(ratio*float64(capacity))) - used
			if free < 0 {
				free = 0
			}
			key := capacityKey{class: class.Name, topology: topology}
			name := p.objectName(key)
			want[name] = &storagev1.CSIStorageCapacity{
				ObjectMeta: metav1.ObjectMeta{
					Name:      name,
					Namespace: p.namespace,
					Labels:    map[string]string{LabelDriverName: p.names.Driver, LabelManagedBy: ManagedBy},
				},
				NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{v1.LabelHostname: topology}},
				StorageClassName: class.Name,
				Capacity:         resource.NewQuantity(free, resource.BinarySI),
			}
		}
	}
	return want, nil
}

// objectName is the name of the object of a class on a node: the same on
// every refresh and for every replica.
func (p *CapacityPublisher) objectName(key capacityKey) string {
	sum := sha256.Sum256([]byte(p.names.Driver + "\x00" + key.class + "\x00" + key.topology))
	return "csisc-" + hex.EncodeToString(sum[:10])
}
