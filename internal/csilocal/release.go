package csilocal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
)

const (
	// annProvisionedBy names the provisioner of a dynamically provisioned
	// PV.
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// pvControllerFinalizer is the finalizer upstream's PersistentVolume
	// controller puts on the PVs of in-tree provisioners with the Delete
	// reclaim policy, and removes when it has deleted their volume.
	pvControllerFinalizer = "kubernetes.io/pv-controller"
)

// VolumeDeleter deletes the volume of a PV (the Provisioner).
type VolumeDeleter interface {
	Delete(ctx context.Context, pv *v1.PersistentVolume) error
}

// VolumeReleaser deletes the driver's PVs whose claims are gone. The
// provisioning library does that for a PV in phase Released, but
// upstream's PersistentVolume controller takes a provisioner whose name
// starts with kubernetes.io/ for an in-tree plugin (as for claims, see
// ClaimAnnotator): it puts its finalizer kubernetes.io/pv-controller on the
// PV and, once the claim is deleted, tries to delete the volume itself,
// finds no plugin and sets the PV's phase to Failed ("no volume plugin
// matched name: kubernetes.io/csi.local"). The library never deletes a
// Failed PV, and a PV it did delete keeps that finalizer for ever. So the
// driver deletes the volume of a Released or Failed PV of its own whose
// claim is gone, removes the finalizer and deletes the PV (if the library
// has not deleted it yet). A PV whose claim exists is left alone, also
// when someone deletes it.
type VolumeReleaser struct {
	client  kubernetes.Interface
	volumes corelisters.PersistentVolumeLister
	deleter VolumeDeleter
	worker  *keyWorker
}

// NewVolumeReleaser watches the PVs of factory. Call it before
// factory.Start.
func NewVolumeReleaser(client kubernetes.Interface, factory informers.SharedInformerFactory, deleter VolumeDeleter) (*VolumeReleaser, error) {
	r := &VolumeReleaser{
		client:  client,
		volumes: factory.Core().V1().PersistentVolumes().Lister(),
		deleter: deleter,
	}
	var err error
	r.worker, err = newKeyWorker("csi-local-volumes", factory.Core().V1().PersistentVolumes().Informer(), "Releasing volume", "pv", r.sync)
	return r, err
}

// Run releases volumes until ctx is done.
func (r *VolumeReleaser) Run(ctx context.Context) { r.worker.Run(ctx) }

// released reports whether pv is the driver's, to be deleted (reclaim
// policy Delete), and its claim is gone: Released, or Failed by upstream's
// PersistentVolume controller.
func released(pv *v1.PersistentVolume) bool {
	return pv.Annotations[annProvisionedBy] == ProvisionerName &&
		pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete &&
		(pv.Status.Phase == v1.VolumeReleased || pv.Status.Phase == v1.VolumeFailed)
}

func (r *VolumeReleaser) sync(ctx context.Context, name string) error {
	pv, err := r.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !released(pv) {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("pv", name)
	// A Failed PV's claim may still exist (another failure): its volume is
	// deleted only when the claim is gone, or is another claim of the same
	// name.
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim, err := r.client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil && claim.UID == ref.UID {
			return nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	// Deleting a volume that is gone (the library deleted it) succeeds.
	if err := r.deleter.Delete(ctx, pv); err != nil {
		return fmt.Errorf("deleting the volume of %s: %w", name, err)
	}
	logger.V(2).Info("Deleted the volume of a released PV", "phase", pv.Status.Phase)
	if slices.Contains(pv.Finalizers, pvControllerFinalizer) {
		var keep []string
		for _, f := range pv.Finalizers {
			if f != pvControllerFinalizer {
				keep = append(keep, f)
			}
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"finalizers": keep, "resourceVersion": pv.ResourceVersion}})
		if err != nil {
			return err
		}
		if _, err := r.client.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizer %s of %s: %w", pvControllerFinalizer, name, err)
		}
		logger.V(2).Info("Removed the PersistentVolume controller's finalizer", "finalizer", pvControllerFinalizer)
	}
	if pv.DeletionTimestamp == nil {
		err := r.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", name, err)
		}
	}
	return nil
}
