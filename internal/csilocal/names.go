package csilocal

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The names of the local-dynamic contract (docs/local-dynamic.md, "Names").
const (
	// DriverName is the CSI driver name, in PVs and CSI inline volumes.
	DriverName = "kubernetes.io.csi.local"
	// ProvisionerName is the StorageClass provisioner.
	ProvisionerName = "kubernetes.io/csi.local"
	// PoolsAnnotation is the node annotation with the node's pools.
	PoolsAnnotation = poolsAnnotationPrefix + DriverName
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

	// poolsAnnotationPrefix followed by the driver name is the node
	// annotation with the node's pools.
	poolsAnnotationPrefix = "csi.volume.kubernetes.io/"
)

// Names are the names the driver runs under. By default it is the
// local-dynamic driver of the contract (DefaultNames); it can also run as
// any other node-local CSI driver (NamesOf), whose StorageClasses opt into
// the fork's capacity check with the annotation
// kube-carry.io/capacity-source (docs/local-dynamic.md, "Any CSI
// driver").
type Names struct {
	// Driver is the CSI driver name, in PVs, the kubelet's registration and
	// GetPluginInfo.
	Driver string
	// Provisioner is the StorageClass provisioner.
	Provisioner string
}

// DefaultNames are the names of the local-dynamic contract.
var DefaultNames = Names{Driver: DriverName, Provisioner: ProvisionerName}

// NamesOf returns the names of the driver: DefaultNames for DriverName,
// and for any other CSI driver name the same name as provisioner, as a CSI
// driver with external-provisioner has.
func NamesOf(driver string) (Names, error) {
	if driver == DriverName {
		return DefaultNames, nil
	}
	// The API server's rule for the name of a CSIDriver.
	if len(driver) > 63 || len(validation.IsDNS1123Subdomain(strings.ToLower(driver))) > 0 {
		return Names{}, fmt.Errorf("%q is not a CSI driver name: at most 63 characters of a DNS subdomain", driver)
	}
	return Names{Driver: driver, Provisioner: driver}, nil
}

// orDefault returns DefaultNames for the zero Names.
func (n Names) orDefault() Names {
	if n == (Names{}) {
		return DefaultNames
	}
	return n
}

// PoolsAnnotation is the node annotation with the node's pools for the driver.
func (n Names) PoolsAnnotation() string {
	return poolsAnnotationPrefix + n.orDefault().Driver
}

// legacyProvisioner reports whether the provisioner's name starts with
// kubernetes.io/, which upstream's PersistentVolume controller takes for
// an in-tree plugin: the driver then hands claims to itself
// (ClaimAnnotator) and deletes released volumes itself (VolumeReleaser).
func (n Names) legacyProvisioner() bool {
	return strings.HasPrefix(n.orDefault().Provisioner, "kubernetes.io/")
}
