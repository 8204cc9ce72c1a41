package csilocal

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// AnnStorageProvisioner is the claim annotation that hands a claim to an
// external provisioner; the provisioning library provisions only claims
// that carry its name there.
const AnnStorageProvisioner = "volume.kubernetes.io/storage-provisioner"

// ClaimAnnotator hands the claims of the driver's StorageClasses to the
// driver's provisioner. Upstream's PersistentVolume controller does this
// for external provisioners, but not for a provisioner whose name starts
// with kubernetes.io/, which it takes for an in-tree plugin: for
// kubernetes.io/csi.local it only reports "no volume plugin matched" in a
// ProvisioningFailed event, and the claim is never annotated. So the
// local-dynamic provisioner annotates its claims itself.
type ClaimAnnotator struct {
	client  kubernetes.Interface
	claims  corelisters.PersistentVolumeClaimLister
	classes storagelisters.StorageClassLister
	worker  *keyWorker
}

// NewClaimAnnotator watches the claims of factory. Call it before
// factory.Start.
func NewClaimAnnotator(client kubernetes.Interface, factory informers.SharedInformerFactory) (*ClaimAnnotator, error) {
	a := &ClaimAnnotator{
		client:  client,
		claims:  factory.Core().V1().PersistentVolumeClaims().Lister(),
		classes: factory.Storage().V1().StorageClasses().Lister(),
	}
	var err error
	a.worker, err = newKeyWorker("csi-local-claims", factory.Core().V1().PersistentVolumeClaims().Informer(), "Annotating claim", "claim", a.sync)
	return a, err
}

// Run annotates claims until ctx is done.
func (a *ClaimAnnotator) Run(ctx context.Context) { a.worker.Run(ctx) }

// ours reports whether claim is an unbound claim of one of the driver's
// classes that is not yet handed to a provisioner.
func (a *ClaimAnnotator) ours(claim *v1.PersistentVolumeClaim) (bool, error) {
	if claim.Spec.VolumeName != "" || claim.Annotations[AnnStorageProvisioner] != "" || claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName == "" {
		return false, nil
	}
	class, err := a.classes.Get(*claim.Spec.StorageClassName)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return class.Provisioner == ProvisionerName, nil
}

func (a *ClaimAnnotator) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	claim, err := a.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ok, err := a.ours(claim); err != nil || !ok {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnStorageProvisioner: ProvisionerName}}})
	if err != nil {
		return err
	}
	if _, err := a.client.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patching %s: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Handed claim to the provisioner", "claim", key)
	return nil
}
