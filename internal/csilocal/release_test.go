package csilocal

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

type recordingDeleter struct{ deleted []string }

func (d *recordingDeleter) Delete(_ context.Context, pv *v1.PersistentVolume) error {
	d.deleted = append(d.deleted, pv.Name)
	return nil
}

// TestVolumeReleaser: the driver's PVs whose claims are gone are deleted
// with their volumes, also when upstream's PersistentVolume controller
// marked them Failed (it takes kubernetes.io/csi.local for an in-tree
// plugin), and the controller's finalizer does not keep them for ever;
// every other PV is left alone.
func TestVolumeReleaser(t *testing.T) {
	const claimUID = types.UID("claim-uid")
	liveClaim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: claimUID}}
	now := metav1.Now()
	for _, tc := range []struct {
		name          string
		pv            *v1.PersistentVolume
		claim         *v1.PersistentVolumeClaim
		wantDeleted   bool // the volume deleted and the PV gone
		wantFinalizer bool // the PV keeps kubernetes.io/pv-controller
	}{
		{name: "Failed by upstream's PV controller, claim gone", pv: pvOf(ProvisionerName, v1.VolumeFailed, nil), wantDeleted: true},
		{name: "Released, claim gone", pv: pvOf(ProvisionerName, v1.VolumeReleased, nil), wantDeleted: true},
		{name: "Released, a new claim of the same name", pv: pvOf(ProvisionerName, v1.VolumeReleased, nil),
			claim: &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "another"}}, wantDeleted: true},
		{name: "being deleted by the library, claim gone", pv: pvOf(ProvisionerName, v1.VolumeReleased, &now), wantDeleted: true},
		{name: "Bound", pv: pvOf(ProvisionerName, v1.VolumeBound, nil), claim: liveClaim, wantFinalizer: true},
		{name: "Failed for another reason, its claim exists", pv: pvOf(ProvisionerName, v1.VolumeFailed, nil), claim: liveClaim, wantFinalizer: true},
		{name: "being deleted by someone while its claim exists", pv: pvOf(ProvisionerName, v1.VolumeBound, &now), claim: liveClaim, wantFinalizer: true},
		{name: "another provisioner's", pv: pvOf("example.com/other", v1.VolumeFailed, nil), wantFinalizer: true},
		{name: "reclaim policy Retain", pv: func() *v1.PersistentVolume {
			pv := pvOf(ProvisionerName, v1.VolumeReleased, nil)
			pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
			return pv
		}(), wantFinalizer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			objs := []runtime.Object{tc.pv}
			if tc.claim != nil {
				objs = append(objs, tc.claim)
			}
			client := fake.NewClientset(objs...)
			factory := informers.NewSharedInformerFactory(client, 0)
			d := &recordingDeleter{}
			r, err := NewVolumeReleaser(client, factory, d)
			require.NoError(t, err)
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())
			require.NoError(t, r.sync(ctx, tc.pv.Name))

			got, err := client.CoreV1().PersistentVolumes().Get(ctx, tc.pv.Name, metav1.GetOptions{})
			if tc.pv.DeletionTimestamp != nil && tc.wantDeleted {
				// The fake keeps a deleted object with finalizers; the
				// releaser must have removed the controller's.
				require.NoError(t, err)
				assert.NotContains(t, got.Finalizers, pvControllerFinalizer)
				assert.Equal(t, []string{tc.pv.Name}, d.deleted, "volumes deleted")
				return
			}
			if tc.wantDeleted {
				assert.True(t, apierrors.IsNotFound(err), "the PV is deleted: %v", err)
				assert.Equal(t, []string{tc.pv.Name}, d.deleted, "volumes deleted")
				return
			}
			require.NoError(t, err)
			assert.Empty(t, d.deleted, "volumes deleted")
			assert.Equal(t, tc.wantFinalizer, slices.Contains(got.Finalizers, pvControllerFinalizer), "finalizers %v", got.Finalizers)
		})
	}
}

func pvOf(provisioner string, phase v1.PersistentVolumePhase, deleting *metav1.Time) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name: "pvc-1", UID: "pv-uid", Annotations: map[string]string{annProvisionedBy: provisioner},
			Finalizers:        []string{pvControllerFinalizer, "kubernetes.io/pv-protection"},
			DeletionTimestamp: deleting,
		},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &v1.ObjectReference{Namespace: "default", Name: "data", UID: "claim-uid"},
			PersistentVolumeSource:        v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: DriverName, VolumeHandle: "pvc-1"}},
		},
		Status: v1.PersistentVolumeStatus{Phase: phase},
	}
}
