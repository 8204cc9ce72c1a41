package csilocal

import (
	"context"
	"fmt"
	"maps"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/accessmodes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v11/controller"
)

// Provisioner provisions the claims of StorageClasses of provisioner
// kubernetes.io/csi.local for sig-storage-lib-external-provisioner's
// ProvisionController, through the Controller's CreateVolume and
// DeleteVolume.
type Provisioner struct {
	Controller *Controller
	// Names are the driver's names; the zero Names are DefaultNames.
	Names Names
}

var _ controller.Provisioner = &Provisioner{}

// Provision creates the volume of a claim of a WaitForFirstConsumer class
// on its selected node. When the volume does not fit ("Not enough free
// space") or the node lacks the pool, it asks for rescheduling: the
// ProvisionController then removes the claim's selected node, and the
// scheduler picks a node again.
func (p *Provisioner) Provision(ctx context.Context, opts controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	class, claim := opts.StorageClass, opts.PVC
	names := p.Names.orDefault()
	if class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return nil, controller.ProvisioningFinished, fmt.Errorf("%s provisions only StorageClasses with volumeBindingMode %s: a local volume is carved on the pod's node",
			names.Provisioner, storagev1.VolumeBindingWaitForFirstConsumer)
	}
	if opts.SelectedNode == nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("claim has no selected node")
	}
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return nil, controller.ProvisioningFinished, fmt.Errorf("block volumes are not supported")
	}
	mode, err := accessmodes.ToCSIAccessMode(claim.Spec.AccessModes, false)
	if err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	node := opts.SelectedNode.Labels[v1.LabelHostname]
	if node == "" {
		node = opts.SelectedNode.Name
	}
	request := claim.Spec.Resources.Requests[v1.ResourceStorage]
	topology := []*csi.Topology{{Segments: map[string]string{TopologyKey: node}}}
	resp, err := p.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name:          opts.PVName,
		CapacityRange: &csi.CapacityRange{RequiredBytes: request.Value()},
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
		}},
		Parameters:                maps.Clone(class.Parameters),
		AccessibilityRequirements: &csi.TopologyRequirement{Requisite: topology, Preferred: topology},
	})
	if status.Code(err) == codes.ResourceExhausted {
		return nil, controller.ProvisioningReschedule, err
	}
	if err != nil {
		return nil, controller.ProvisioningFinished, err
	}

	vol := resp.GetVolume()
	reclaim := v1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   claim.Spec.AccessModes,
			VolumeMode:                    claim.Spec.VolumeMode,
			MountOptions:                  class.MountOptions,
			Capacity: v1.ResourceList{
				v1.ResourceStorage: *resource.NewQuantity(vol.GetCapacityBytes(), resource.BinarySI),
			},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver:           names.Driver,
				VolumeHandle:     vol.GetVolumeId(),
				VolumeAttributes: vol.GetVolumeContext(),
			}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
					Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
		},
	}, controller.ProvisioningFinished, nil
}

// Delete deletes the volume of a PV of the driver.
func (p *Provisioner) Delete(ctx context.Context, pv *v1.PersistentVolume) error {
	driver := p.Names.orDefault().Driver
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driver {
		return &controller.IgnoredError{Reason: fmt.Sprintf("PersistentVolume %q is not a volume of %s", pv.Name, driver)}
	}
	_, err := p.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle})
	return err
}
