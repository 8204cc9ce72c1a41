package e2e

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-carry/kube-carry/internal/csilocal"
)

const (
	ns = "default"
	// selectedNode is the claim annotation the scheduler sets for a
	// WaitForFirstConsumer claim: the node the provisioner must use.
	selectedNode = "volume.kubernetes.io/selected-node"
	// capacityReason is the fork's (and upstream's CSIStorageCapacity)
	// rejection reason for a node whose pools are full.
	capacityReason = "did not have enough free storage"
	// capacitySourceAnnotation opts a StorageClass of any CSI driver into
	// the fork's capacity check.
	capacitySourceAnnotation = "kube-carry.io/capacity-source"
	// sourceCSIStorageCapacity is the capacity source of the class's
	// CSIStorageCapacity objects, less the claims reserved since.
	sourceCSIStorageCapacity = "csistoragecapacity"
	// capacityPollInterval is how often the test driver refreshes its
	// CSIStorageCapacity objects: external-provisioner's default.
	capacityPollInterval = time.Minute
)

func scenarios() []scenario {
	return []scenario{
		{
			name: "seed 000: 11 pods with 1 GiB claims at once on a 9 GiB node", nodes: 1, pools: "pool-a=9Gi", latency: 2 * time.Second,
			run:   func(e *env) result { return e.overcommit(false) },
			check: checkBurst,
		},
		{
			name: "any CSI driver (csi-local.kube-carry.io, class opted in): 11 pods with 1 GiB claims at once on a 9 GiB node", nodes: 1, pools: "pool-a=9Gi", latency: 2 * time.Second,
			driver: "csi-local.kube-carry.io",
			run:    func(e *env) result { return e.overcommit(false) },
			check:  checkBurst,
		},
		{
			name: "CSIStorageCapacity (csi-local.kube-carry.io publishing, class opted in; upstream with storage capacity tracking): 11 pods with 1 GiB claims at once on a 9 GiB node", nodes: 1, pools: "pool-a=9Gi", latency: 2 * time.Second,
			driver: "csi-local.kube-carry.io", capacitySource: sourceCSIStorageCapacity,
			run:   func(e *env) result { return e.overcommit(false) },
			check: checkBurst,
		},
		{
			name: "seed 002: two PVs of one volumeHandle, one readOnly", nodes: 1, pools: "pool-a=9Gi", latency: 0,
			run: func(e *env) result { return e.sameHandle() },
			check: func(t *testing.T, f, u result) {
				assert.Equal(t, "yes", f.get("FailedMount naming both volumes within 5 s"), "fork")
				assert.Equal(t, "no", f.get("readOnly volume writable"), "fork")
				assert.True(t, u.get("readOnly volume writable") == "yes" || u.get("pod state after 60 s") != "Running",
					"upstream must mount the readOnly volume read-write or never start the pod, or the scenario shows nothing: %v", u.metrics)
			},
		},
		{
			name: "restarts: scheduler killed while provisioning, then a kubelet restarted", nodes: 1, pools: "pool-a=9Gi", latency: 5 * time.Second,
			run: func(e *env) result { return e.overcommit(true) },
			check: func(t *testing.T, f, u result) {
				assert.Equal(t, "9", f.get("running"), "fork: running pods")
				assert.Equal(t, "0", f.get("provisioning failures"), "fork: provisioning failures")
				assert.Equal(t, "0", f.get("over-committed claims"), "fork")
				assert.Equal(t, "9/9", f.get("volumes with their data after the kubelet restart"), "fork")
				assert.NotEqual(t, "0", u.get("over-committed claims"), "upstream must over-commit, or the scenario shows nothing")
			},
		},
	}
}

// checkBurst asserts the result of the seed 000 burst (overcommit): the
// fork runs 9 pods and keeps 2 pending for capacity without a provisioning
// failure, and upstream over-commits.
func checkBurst(t *testing.T, f, u result) {
	assert.Equal(t, "9", f.get("running"), "fork: running pods")
	assert.Equal(t, "2", f.get("pending, capacity reason"), "fork: pods pending with the capacity reason")
	assert.Equal(t, "0", f.get("provisioning failures"), "fork: provisioning failures")
	assert.Equal(t, "0", f.get("over-committed claims"), "fork: claims put on a node that could not hold them")
	assert.NotEqual(t, "0", u.get("over-committed claims"), "upstream must over-commit, or the scenario shows nothing")
}

// localClass creates the local-dynamic StorageClass of the pool: of
// kubernetes.io/csi.local, or of the driver the test driver runs as, opted
// into the fork's check (docs/local-dynamic.md, "Any CSI driver").
func (e *env) localClass(name, pool string) {
	meta := metav1.ObjectMeta{Name: name}
	if e.names != csilocal.DefaultNames {
		source := e.capacitySource
		if source == "" {
			source = "node-annotation"
		}
		meta.Annotations = map[string]string{capacitySourceAnnotation: source}
	}
	_, err := e.cs.StorageV1().StorageClasses().Create(e.ctx, &storagev1.StorageClass{
		ObjectMeta:        meta,
		Provisioner:       e.names.Provisioner,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		Parameters:        map[string]string{csilocal.ParamPool: pool},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("StorageClass %s: %v", name, err)
	}
}

// pod is an agnhost pause pod with the claims mounted at /<claim>.
func (e *env) pod(name string, claims ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: e.st.Image, ImagePullPolicy: corev1.PullNever, Args: []string{"pause"},
			}},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
		},
	}
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: c, MountPath: "/" + c})
	}
	return p
}

func claim(name, class, size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

// states counts the pods by what a user sees.
type states struct {
	running, pending, pendingCapacity int
	byPod                             map[string]string
}

func (e *env) podStates() states {
	pods, err := e.cs.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("pods: %v", err)
	}
	s := states{byPod: map[string]string{}}
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		switch {
		case p.Status.Phase == corev1.PodRunning && ready:
			s.running++
			s.byPod[p.Name] = "Running"
		default:
			s.pending++
			state := string(p.Status.Phase)
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
					state = "Unschedulable: " + c.Message
					if strings.Contains(c.Message, capacityReason) {
						s.pendingCapacity++
					}
				}
			}
			if p.Spec.NodeName != "" && state == string(corev1.PodPending) {
				state = "ContainerCreating on " + p.Spec.NodeName
			}
			s.byPod[p.Name] = state
		}
	}
	return s
}

// events lists the events of reason in the namespace, with their counts.
func (e *env) events(reason string) []corev1.Event {
	evs, err := e.cs.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		e.t.Fatalf("events: %v", err)
	}
	return evs.Items
}

func count(ev corev1.Event) int {
	n := int(ev.Count)
	if ev.Series != nil && int(ev.Series.Count) > n {
		n = int(ev.Series.Count)
	}
	return max(n, 1)
}

// settle waits until the pods have not changed state for quiet (at most
// timeout) and returns their states.
func (e *env) settle(quiet, timeout time.Duration) (states, time.Duration) {
	start := time.Now()
	var last string
	lastChange := time.Now()
	for {
		s := e.podStates()
		sig := fmt.Sprint(s.running, s.pending, s.pendingCapacity)
		if sig != last {
			last, lastChange = sig, time.Now()
		}
		if time.Since(lastChange) >= quiet || time.Since(start) > timeout {
			return s, lastChange.Sub(start)
		}
		time.Sleep(time.Second)
	}
}

// overcommit is seed 000: eleven pods, each with a new 1 GiB claim, created
// at once against one node with 9 GiB. With restarts, the scheduler is
// killed while claims are being provisioned and started again; when the
// pods have settled, each running pod writes a file into its volume, the
// node's kubelet is restarted, and every volume must still be mounted with
// the file in it.
func (e *env) overcommit(restarts bool) result {
	const pods = 11
	e.localClass("local", "pool-a")
	var r result
	if e.capacitySource == sourceCSIStorageCapacity {
		// The burst starts once the driver has published the class's
		// object; it stays as written until the next refresh.
		published := ""
		e.waitFor(2*capacityPollInterval+30*time.Second, "the driver publishes the CSIStorageCapacity of the class", func() (bool, string) {
			list, err := e.cs.StorageV1().CSIStorageCapacities("").List(e.ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range list.Items {
				if c.StorageClassName == "local" && c.Capacity != nil {
					published = c.Capacity.String()
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d objects, none of class local", len(list.Items))
		})
		r.notes = append(r.notes, fmt.Sprintf("CSIStorageCapacity of the class before the burst: %s, refreshed every %s", published, capacityPollInterval))
	}
	for i := range pods {
		name := fmt.Sprintf("data-%02d", i)
		if _, err := e.cs.CoreV1().PersistentVolumeClaims(ns).Create(e.ctx, claim(name, "local", "1Gi"), metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		if _, err := e.cs.CoreV1().Pods(ns).Create(e.ctx, e.pod(fmt.Sprintf("app-%02d", i), name), metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	if restarts {
		// Kill the scheduler while claims are selected for the node but
		// not yet provisioned.
		e.waitFor(time.Minute, "claims in flight", func() (bool, string) {
			sel, pvs := e.inFlight()
			return sel >= 3 && pvs < sel, fmt.Sprintf("%d claims selected, %d PVs", sel, pvs)
		})
		sel, pvs := e.inFlight()
		if err := e.st.Stop("kube-scheduler", "", true); err != nil {
			e.t.Fatal(err)
		}
		r.notes = append(r.notes, fmt.Sprintf("scheduler killed (SIGKILL) with %d claims selected and %d provisioned; started again 2 s later", sel, pvs))
		time.Sleep(2 * time.Second)
		if err := e.st.Start("kube-scheduler", ""); err != nil {
			e.t.Fatal(err)
		}
	}
	s, settled := e.settle(20*time.Second, 3*time.Minute)
	r.add("running", "%d", s.running)
	r.add("pending, capacity reason", "%d", s.pendingCapacity)
	r.add("pending, other", "%d", s.pending-s.pendingCapacity)
	failures, failedClaims := 0, map[string]bool{}
	for _, ev := range e.events("ProvisioningFailed") {
		if strings.Contains(ev.Message, "Not enough free space") {
			failures += count(ev)
			failedClaims[ev.InvolvedObject.Name] = true
		}
	}
	r.add("provisioning failures", "%d", failures)
	// A claim is over-committed when the scheduler selected a node for it
	// that could not hold it: the provisioner refused it there.
	r.add("over-committed claims", "%d", len(failedClaims))
	r.add("time to settle", "%s", settled.Round(time.Second))
	for _, name := range sortedKeys(s.byPod) {
		if s.byPod[name] != "Running" {
			r.notes = append(r.notes, name+": "+s.byPod[name])
		}
	}
	if restarts {
		r.add("volumes with their data after the kubelet restart", "%s", e.kubeletRestart(s))
	}
	return r
}

// inFlight counts the claims with a selected node and the PVs there are.
func (e *env) inFlight() (selected, pvs int) {
	claims, err := e.cs.CoreV1().PersistentVolumeClaims(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, c := range claims.Items {
		if c.Annotations[selectedNode] != "" {
			selected++
		}
	}
	list, err := e.cs.CoreV1().PersistentVolumes().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return selected, len(list.Items)
}

// kubeletRestart writes a file into the volume of every running pod,
// restarts node1's kubelet, waits for the node to be Ready again, and
// counts the pods that still run with their volume and the file in it.
func (e *env) kubeletRestart(s states) string {
	var running []string
	for _, name := range sortedKeys(s.byPod) {
		if s.byPod[name] == "Running" {
			running = append(running, name)
		}
	}
	mount := func(p string) string { return "/data-" + strings.TrimPrefix(p, "app-") }
	for _, p := range running {
		if out, err := e.exec(p, "mounttest", "--new_file_0644="+mount(p)+"/before-restart"); err != nil {
			e.t.Fatalf("writing into %s: %v: %s", p, err, out)
		}
	}
	if err := e.st.Stop("kubelet", "node1", false); err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.Start("kubelet", "node1"); err != nil {
		e.t.Fatal(err)
	}
	restarted := time.Now()
	// The restarted kubelet renews the node's lease (every 10 s); the
	// node status is only rewritten when it changes.
	e.waitFor(2*time.Minute, "node1 Ready with its lease renewed after the kubelet restart", func() (bool, string) {
		lease, err := e.cs.CoordinationV1().Leases("kube-node-lease").Get(e.ctx, "node1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		n, err := e.cs.CoreV1().Nodes().Get(e.ctx, "node1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		renewed := lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(restarted)
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return renewed && c.Status == corev1.ConditionTrue, fmt.Sprintf("lease renewed after the restart: %v; %s", renewed, c.Message)
			}
		}
		return false, "no Ready condition"
	})
	// Give the restarted kubelet's volume manager a resync.
	time.Sleep(10 * time.Second)
	ok := 0
	for _, p := range running {
		out, err := e.exec(p, "mounttest", "--file_content="+mount(p)+"/before-restart")
		if err == nil && strings.Contains(out, "mount-tester new file") {
			ok++
		}
	}
	return fmt.Sprintf("%d/%d", ok, len(running))
}

// exec runs agnhost in the pod's container with kubectl, as a user does.
func (e *env) exec(pod string, args ...string) (string, error) {
	cmd := exec.CommandContext(e.ctx, e.kubectl, append([]string{"--kubeconfig", e.st.Kubeconfig, "exec", pod, "--", "/usr/local/bin/agnhost"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sameHandle is seed 002: a pod with two claims bound to two CSI PVs with
// the same driver and volumeHandle, one of them readOnly.
func (e *env) sameHandle() result {
	const handle = "seed-002-shared"
	for _, v := range []struct {
		pv, claim string
		readOnly  bool
	}{{"pv-a", "data-a", false}, {"pv-b", "data-b", true}} {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: v.pv},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              "",
				ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: v.claim},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: csilocal.DriverName, VolumeHandle: handle, ReadOnly: v.readOnly,
					VolumeAttributes: map[string]string{csilocal.AttrPool: "pool-a", csilocal.AttrNode: "node1"},
				}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"node1"}}},
				}}}},
			},
		}
		if _, err := e.cs.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		c := claim(v.claim, "", "1Gi")
		c.Spec.VolumeName = v.pv
		if _, err := e.cs.CoreV1().PersistentVolumeClaims(ns).Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	e.waitFor(time.Minute, "both claims bound", func() (bool, string) {
		bound := 0
		for _, c := range []string{"data-a", "data-b"} {
			pvc, err := e.cs.CoreV1().PersistentVolumeClaims(ns).Get(e.ctx, c, metav1.GetOptions{})
			if err == nil && pvc.Status.Phase == corev1.ClaimBound {
				bound++
			}
		}
		return bound == 2, fmt.Sprintf("%d bound", bound)
	})
	if _, err := e.cs.CoreV1().Pods(ns).Create(e.ctx, e.pod("app", "data-a", "data-b"), metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	// The clock starts when the kubelet has the pod.
	var scheduled time.Time
	e.waitFor(time.Minute, "pod scheduled", func() (bool, string) {
		p, err := e.cs.CoreV1().Pods(ns).Get(e.ctx, "app", metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" {
			return false, "not scheduled"
		}
		scheduled = time.Now()
		return true, ""
	})
	var r result
	failedAt := time.Duration(-1)
	var message string
	for time.Since(scheduled) < 60*time.Second {
		if failedAt < 0 {
			for _, ev := range e.events("FailedMount") {
				if ev.InvolvedObject.Name == "app" && strings.Contains(ev.Message, `"data-a"`) && strings.Contains(ev.Message, `"data-b"`) {
					failedAt, message = time.Since(scheduled), ev.Message
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	r.add("FailedMount naming both volumes within 5 s", "%s", yesNo(failedAt >= 0 && failedAt <= 5*time.Second))
	if failedAt >= 0 {
		r.add("FailedMount after", "%s", failedAt.Round(100*time.Millisecond))
		r.notes = append(r.notes, "FailedMount: "+truncate(message, 200))
	}
	s := e.podStates()
	r.add("pod state after 60 s", "%s", s.byPod["app"])
	writable := "no"
	if s.byPod["app"] == "Running" {
		out, err := e.exec("app", "mounttest", "--new_file_0644=/data-b/written")
		if err == nil && strings.Contains(out, "mount-tester new file") {
			writable = "yes"
		}
		r.notes = append(r.notes, "writing into the readOnly volume: "+truncate(strings.TrimSpace(out), 160))
	}
	r.add("readOnly volume writable", "%s", writable)
	return r
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
