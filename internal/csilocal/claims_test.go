package csilocal

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// TestClaimAnnotator: the claims of the driver's classes, and only those,
// are handed to the driver's provisioner, which upstream's PersistentVolume
// controller does not do for a kubernetes.io/ provisioner.
func TestClaimAnnotator(t *testing.T) {
	classes := []runtime.Object{
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: ProvisionerName},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Provisioner: "example.com/other"},
	}
	for _, tc := range []struct {
		name  string
		claim *v1.PersistentVolumeClaim
		want  string
	}{
		{"a claim of the driver's class", claimOf("local", "", nil), ProvisionerName},
		{"a claim of another provisioner's class", claimOf("other", "", nil), ""},
		{"a claim of a class that does not exist", claimOf("gone", "", nil), ""},
		{"a bound claim", claimOf("local", "pv-1", nil), ""},
		{"a claim handed to another provisioner", claimOf("local", "", map[string]string{AnnStorageProvisioner: "example.com/other"}), "example.com/other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := fake.NewClientset(append(classes, tc.claim)...)
			factory := informers.NewSharedInformerFactory(client, 0)
			a, err := NewClaimAnnotator(client, factory)
			require.NoError(t, err)
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())
			key := tc.claim.Namespace + "/" + tc.claim.Name
			require.NoError(t, a.sync(ctx, key))
			got, err := client.CoreV1().PersistentVolumeClaims(tc.claim.Namespace).Get(ctx, tc.claim.Name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.Annotations[AnnStorageProvisioner])
		})
	}
}

func claimOf(class, volume string, ann map[string]string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", Annotations: ann},
		Spec:       v1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), VolumeName: volume},
	}
}
