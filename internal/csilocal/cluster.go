package csilocal

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
)

const (
	pvNodeIndex   = "kube-carry.io/csi-local-pv-node"
	pvHandleIndex = "kube-carry.io/csi-local-pv-handle"
)

// KubeCluster reads nodes and volumes from informers: a node's pools from
// the driver's pools annotation, the volumes on it from the
// PersistentVolumes pinned to it.
type KubeCluster struct {
	names   Names
	nodes   corelisters.NodeLister
	pvs     cache.Indexer
	classes storagelisters.StorageClassLister
}

// NewKubeCluster indexes the PersistentVolume informer of factory by node
// and by CSI volume handle of the driver of names (the zero Names:
// DefaultNames). Call it before factory.Start.
func NewKubeCluster(factory informers.SharedInformerFactory, names Names) (*KubeCluster, error) {
	names = names.orDefault()
	pvInformer := factory.Core().V1().PersistentVolumes().Informer()
	err := pvInformer.AddIndexers(cache.Indexers{
		pvNodeIndex: func(obj any) ([]string, error) {
			pv, ok := obj.(*v1.PersistentVolume)
			if !ok {
				return nil, nil
			}
			return pvNodes(pv), nil
		},
		pvHandleIndex: func(obj any) ([]string, error) {
			pv, ok := obj.(*v1.PersistentVolume)
			if !ok || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != names.Driver {
				return nil, nil
			}
			return []string{pv.Spec.CSI.VolumeHandle}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return &KubeCluster{
		names:   names,
		nodes:   factory.Core().V1().Nodes().Lister(),
		pvs:     pvInformer.GetIndexer(),
		classes: factory.Storage().V1().StorageClasses().Lister(),
	}, nil
}

// pvNodes are the nodes a PV is pinned to: its kubernetes.io/hostname
// label and the values of its required node affinity on that key.
func pvNodes(pv *v1.PersistentVolume) []string {
	var nodes []string
	if n := pv.Labels[v1.LabelHostname]; n != "" {
		nodes = append(nodes, n)
	}
	if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
		for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				if e.Key == v1.LabelHostname && e.Operator == v1.NodeSelectorOpIn {
					nodes = append(nodes, e.Values...)
				}
			}
		}
	}
	return nodes
}

// node finds the node whose kubernetes.io/hostname label is topology; a
// node named topology without another hostname label is that node.
func (c *KubeCluster) node(topology string) (*v1.Node, error) {
	n, err := c.nodes.Get(topology)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err == nil {
		if h := n.Labels[v1.LabelHostname]; h == "" || h == topology {
			return n, nil
		}
	}
	byLabel, err := c.nodes.List(labels.SelectorFromSet(labels.Set{v1.LabelHostname: topology}))
	if err != nil {
		return nil, err
	}
	if len(byLabel) != 1 {
		return nil, fmt.Errorf("node %q not found (%d nodes with %s=%s)", topology, len(byLabel), v1.LabelHostname, topology)
	}
	return byLabel[0], nil
}

// NodeVolumes returns the pools in the node's annotation and the volumes
// of the PVs pinned to the node that are of the driver or of a
// local-dynamic class, in any phase (a released PV keeps its space until
// it is deleted).
func (c *KubeCluster) NodeVolumes(topology string) (Pools, []Volume, error) {
	node, err := c.node(topology)
	if err != nil {
		return nil, nil, err
	}
	ann, ok := node.Annotations[c.names.PoolsAnnotation()]
	if !ok {
		return nil, nil, fmt.Errorf("%w: node %q has no annotation %s", ErrNoPool, node.Name, c.names.PoolsAnnotation())
	}
	pools, err := ParsePools(ann)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: node %q: %v", ErrNoPool, node.Name, err)
	}
	seen := map[string]bool{}
	var volumes []Volume
	for _, key := range []string{node.Name, node.Labels[v1.LabelHostname]} {
		objs, err := c.pvs.ByIndex(pvNodeIndex, key)
		if err != nil {
			return nil, nil, err
		}
		for _, obj := range objs {
			pv := obj.(*v1.PersistentVolume)
			if seen[pv.Name] {
				continue
			}
			seen[pv.Name] = true
			if v, ok := c.volume(pv); ok {
				volumes = append(volumes, v)
			}
		}
	}
	sort.Slice(volumes, func(i, j int) bool { return volumes[i].ID < volumes[j].ID })
	return pools, volumes, nil
}

// volume is the volume a PV holds, if it is local-dynamic: of the driver
// (pool from its volume attributes) or of a local-dynamic class (pool
// from the class).
func (c *KubeCluster) volume(pv *v1.PersistentVolume) (Volume, bool) {
	size := pv.Spec.Capacity[v1.ResourceStorage]
	if pv.Spec.CSI != nil && pv.Spec.CSI.Driver == c.names.Driver {
		return Volume{ID: pv.Spec.CSI.VolumeHandle, Pool: pv.Spec.CSI.VolumeAttributes[AttrPool], Size: size.Value()}, true
	}
	if pv.Spec.StorageClassName == "" {
		return Volume{}, false
	}
	class, err := c.classes.Get(pv.Spec.StorageClassName)
	if err != nil || class.Provisioner != c.names.Provisioner {
		return Volume{}, false
	}
	return Volume{ID: "pv/" + pv.Name, Pool: class.Parameters[ParamPool], Size: size.Value()}, true
}

// VolumeExists reports whether a PV of the driver has the handle id.
func (c *KubeCluster) VolumeExists(id string) bool {
	objs, err := c.pvs.ByIndex(pvHandleIndex, id)
	return err == nil && len(objs) > 0
}
