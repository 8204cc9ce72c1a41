package csilocal

import v1 "k8s.io/api/core/v1"

// The names of the local-dynamic contract (docs/local-dynamic.md, "Names").
const (
	// DriverName is the CSI driver name, in PVs and CSI inline volumes.
	DriverName = "kubernetes.io.csi.local"
	// ProvisionerName is the StorageClass provisioner.
	ProvisionerName = "kubernetes.io/csi.local"
	// PoolsAnnotation is the node annotation with the node's pools.
	PoolsAnnotation = "csi.volume.kubernetes.io/" + DriverName
	// TopologyKey is the topology key of the node plugin and of the
	// node affinity of provisioned PVs.
	TopologyKey = v1.LabelHostname

	// ParamPool is the StorageClass parameter naming the pool.
	ParamPool = "pool"
	// ParamOversellRatio is the StorageClass parameter with the ratio.
	ParamOversellRatio = "oversellRatio"

	// AttrPool is the volume attribute (PV spec.csi.volumeAttributes, CSI
	// volume context) with the pool the volume was carved from.
	AttrPool = "pool"
	// AttrNode is the volume attribute with the node the volume is on.
	AttrNode = "node"
)
