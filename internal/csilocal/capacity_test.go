package csilocal

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// publishedCapacities returns the capacity of each CSIStorageCapacity
// object in the namespace, by class and node.
func publishedCapacities(t *testing.T, client *fake.Clientset, namespace string) map[string]string {
	t.Helper()
	list, err := client.StorageV1().CSIStorageCapacities(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, obj := range list.Items {
		key := obj.StorageClassName + "@" + obj.NodeTopology.MatchLabels[v1.LabelHostname]
		if obj.Labels[LabelDriverName] != "lvm.example.com" {
			key = obj.Name + " (" + obj.Labels[LabelDriverName] + ")"
		}
		got[key] = obj.Capacity.String()
	}
	return got
}

func TestCapacityPublisher(t *testing.T) {
	names, err := NamesOf("lvm.example.com")
	if err != nil {
		t.Fatal(err)
	}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	lvmClass := func(name string, params map[string]string) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: names.Provisioner, VolumeBindingMode: &wffc, Parameters: params}
	}
	withPools := func(n *v1.Node, pools string) *v1.Node {
		n.Annotations[names.PoolsAnnotation()] = pools
		return n
	}
	lvmPV := func(name, host, pool string, size int64) *v1.PersistentVolume {
		p := pv(name, host, size, false, "", "", false)
		p.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: names.Driver, VolumeHandle: name, VolumeAttributes: map[string]string{AttrPool: pool}}
		return p
	}
	foreign := &storagev1.CSIStorageCapacity{
		ObjectMeta:       metav1.ObjectMeta{Name: "foreign", Namespace: "storage", Labels: map[string]string{LabelDriverName: "other.example.com", LabelManagedBy: "external-provisioner"}},
		NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{v1.LabelHostname: "host-1"}},
		StorageClassName: "lvm-a",
		Capacity:         resource.NewQuantity(GiB, resource.BinarySI),
	}
	objs := []runtime.Object{
		withPools(node("node-1", "host-1", ""), `{"a": "10Gi", "b": "5Gi"}`),
		withPools(node("node-2", "host-2", ""), `{"a": "2Gi"}`),
		node("node-3", "host-3", `{"a": "100Gi"}`), // pools of kubernetes.io.csi.local only
		withPools(node("node-4", "host-4", ""), `{"a": "-1"}`),
		lvmClass("lvm-a", map[string]string{ParamPool: "a"}),
		lvmClass("lvm-any", nil),
		lvmClass("lvm-b-oversold", map[string]string{ParamPool: "b", ParamOversellRatio: "2"}),
		class("ld", wffc, nil), // kubernetes.io/csi.local
		lvmPV("on-1", "host-1", "a", 3),
		lvmPV("over-2", "host-2", "a", 3),
		pv("default-driver-on-1", "host-1", 4, true, "a", "", false),
		foreign,
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	cluster, err := NewKubeCluster(factory, names)
	if err != nil {
		t.Fatal(err)
	}
	publisher, err := NewCapacityPublisher(CapacityOptions{
		Client: client, Names: names, Namespace: "storage", Interval: time.Minute, Cluster: cluster,
		Nodes: factory.Core().V1().Nodes().Lister(), Classes: factory.Storage().V1().StorageClasses(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	sync := func(step string, want map[string]string) {
		t.Helper()
		if err := publisher.Sync(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if diff := cmp.Diff(want, publishedCapacities(t, client, "storage")); diff != "" {
			t.Errorf("%s: capacities (-want +got):\n%s", step, diff)
		}
	}
	// node-1: pool a 10Gi - 3Gi of the driver (the 4Gi PV of
	// kubernetes.io.csi.local is another driver's); pool b 2 x 5Gi; all
	// 15Gi - 3Gi. node-2 is over-committed: 0. node-3 has no pools of the
	// driver, node-4 invalid ones: no objects.
	sync("first refresh", map[string]string{
		"lvm-a@host-1":                "7Gi",
		"lvm-any@host-1":              "12Gi",
		"lvm-b-oversold@host-1":       "10Gi",
		"lvm-a@host-2":                "0",
		"lvm-any@host-2":              "0",
		"foreign (other.example.com)": "1Gi",
	})
	sync("a refresh without changes", map[string]string{
		"lvm-a@host-1":                "7Gi",
		"lvm-any@host-1":              "12Gi",
		"lvm-b-oversold@host-1":       "10Gi",
		"lvm-a@host-2":                "0",
		"lvm-any@host-2":              "0",
		"foreign (other.example.com)": "1Gi",
	})

	// A new volume counts at the next refresh, not before.
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, lvmPV("new-on-1", "host-1", "a", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, vols, err := cluster.NodeVolumes("host-1")
		return err == nil && len(vols) == 2, nil
	}); err != nil {
		t.Fatal("the PV informer did not see the new PV")
	}
	if got := publishedCapacities(t, client, "storage")["lvm-a@host-1"]; got != "7Gi" {
		t.Errorf("before the refresh: lvm-a@host-1 = %s, want the old 7Gi", got)
	}
	if err := client.StorageV1().StorageClasses().Delete(ctx, "lvm-any", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := factory.Storage().V1().StorageClasses().Lister().Get("lvm-any")
		return err != nil, nil
	}); err != nil {
		t.Fatal("the StorageClass informer did not see the deletion")
	}
	sync("after a new PV and a deleted class", map[string]string{
		"lvm-a@host-1":                "5Gi",
		"lvm-b-oversold@host-1":       "10Gi",
		"lvm-a@host-2":                "0",
		"foreign (other.example.com)": "1Gi",
	})
}

func TestNewCapacityPublisherOptions(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	cluster, err := NewKubeCluster(factory, Names{})
	if err != nil {
		t.Fatal(err)
	}
	ok := CapacityOptions{Client: client, Namespace: "ns", Interval: time.Second, Cluster: cluster,
		Nodes: factory.Core().V1().Nodes().Lister(), Classes: factory.Storage().V1().StorageClasses()}
	if _, err := NewCapacityPublisher(ok); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	noNamespace, noInterval, noClient := ok, ok, ok
	noNamespace.Namespace = ""
	noInterval.Interval = 0
	noClient.Client = nil
	for name, opts := range map[string]CapacityOptions{"namespace": noNamespace, "interval": noInterval, "client": noClient} {
		if _, err := NewCapacityPublisher(opts); err == nil {
			t.Errorf("options without %s: no error", name)
		}
	}
}

// TestCapacityPublisherWaitsForSync checks that Run publishes nothing
// before the informers have synced: with empty listers every object of the
// driver would look stale and be deleted.
func TestCapacityPublisherWaitsForSync(t *testing.T) {
	names, err := NamesOf("lvm.example.com")
	if err != nil {
		t.Fatal(err)
	}
	published := &storagev1.CSIStorageCapacity{
		ObjectMeta:       metav1.ObjectMeta{Name: "published", Namespace: "storage", Labels: map[string]string{LabelDriverName: names.Driver, LabelManagedBy: ManagedBy}},
		NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{v1.LabelHostname: "host-1"}},
		StorageClassName: "lvm-a",
		Capacity:         resource.NewQuantity(GiB, resource.BinarySI),
	}
	client := fake.NewClientset(published)
	// The informers are never started: the listers are empty.
	factory := informers.NewSharedInformerFactory(client, 0)
	cluster, err := NewKubeCluster(factory, names)
	if err != nil {
		t.Fatal(err)
	}
	synced := false
	publisher, err := NewCapacityPublisher(CapacityOptions{
		Client: client, Names: names, Namespace: "storage", Interval: 10 * time.Millisecond, Cluster: cluster,
		Nodes: factory.Core().V1().Nodes().Lister(), Classes: factory.Storage().V1().StorageClasses(),
		Synced: []cache.InformerSynced{func() bool { return synced }},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	publisher.Run(ctx)
	if _, err := client.StorageV1().CSIStorageCapacities("storage").Get(context.Background(), "published", metav1.GetOptions{}); err != nil {
		t.Fatalf("before the informers synced, the publisher deleted an object: %v", err)
	}
	// Once synced, the empty listers mean no node and no class: the
	// object is stale. This shows that the run above would have deleted it.
	synced = true
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	publisher.Run(ctx)
	if _, err := client.StorageV1().CSIStorageCapacities("storage").Get(context.Background(), "published", metav1.GetOptions{}); err == nil {
		t.Fatal("after the informers synced, the stale object is still there")
	}
}

// TestCapacityPublisherPublishesNewClass: a class of the driver that is
// added is published at once and a deleted one's objects are deleted at
// once, not at the next refresh (an hour here), as external-provisioner
// does; another driver's class does not refresh.
func TestCapacityPublisherPublishesNewClass(t *testing.T) {
	names, err := NamesOf("lvm.example.com")
	if err != nil {
		t.Fatal(err)
	}
	n := node("node-1", "host-1", "")
	n.Annotations[names.PoolsAnnotation()] = `{"a": "9Gi"}`
	client := fake.NewClientset(n)
	factory := informers.NewSharedInformerFactory(client, 0)
	cluster, err := NewKubeCluster(factory, names)
	if err != nil {
		t.Fatal(err)
	}
	classes := factory.Storage().V1().StorageClasses()
	publisher, err := NewCapacityPublisher(CapacityOptions{
		Client: client, Names: names, Namespace: "storage", Interval: time.Hour, Cluster: cluster,
		Nodes: factory.Core().V1().Nodes().Lister(), Classes: classes,
		Synced: []cache.InformerSynced{classes.Informer().HasSynced, factory.Core().V1().Nodes().Informer().HasSynced},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown() })
	factory.Start(ctx.Done())
	go func() { defer close(done); publisher.Run(ctx) }()

	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	create := func(name, provisioner string) {
		t.Helper()
		class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &wffc}
		if _, err := client.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(step string, want map[string]string) {
		t.Helper()
		var got map[string]string
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			got = publishedCapacities(t, client, "storage")
			return cmp.Equal(want, got), nil
		})
		if err != nil {
			t.Fatalf("%s: capacities (-want +got):\n%s", step, cmp.Diff(want, got))
		}
	}
	// Another driver's class is not published; a class of the driver that
	// follows it is, with both in the lister by then.
	create("other", "other.example.com")
	create("lvm-a", names.Provisioner)
	waitFor("class added", map[string]string{"lvm-a@host-1": "9Gi"})
	if err := client.StorageV1().StorageClasses().Delete(ctx, "lvm-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("class deleted", map[string]string{})
}
