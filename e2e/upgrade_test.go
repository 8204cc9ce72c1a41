package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kube-carry/kube-carry/internal/cluster"
	"github.com/kube-carry/kube-carry/internal/csilocal"
	"github.com/kube-carry/kube-carry/internal/line"
)

// The walk's workloads, on two nodes with a 4 GiB pool each (8 GiB):
// db, 6 pods with a 1 GiB volume each, holding data; big, 2 pods with a
// 3 GiB volume each, pending for capacity throughout (2 GiB are free, at
// most 2 on one node); and at each hop a burst of 3 pods with 1 GiB each,
// created while the scheduler is one minor behind the apiserver, of which
// exactly 2 fit.
const (
	walkPoolGiB          = 4
	walkPools            = "pool-a=4Gi"
	dbReplicas           = 6
	bigReplicas          = 2
	burstReplicas        = 3
	burstFits            = 2
	dataFile             = "/data/before-upgrade"
	rejectionsMetric     = "local_dynamic_capacity_rejections_total"
	walkProvisionLatency = time.Second
	walkSettleQuiet      = 10 * time.Second
	walkTimeout          = 40 * time.Minute
	walkNodes            = 2
)

// lineBinaries are the binaries of one line that the walk puts in place.
type lineBinaries struct {
	line                                         line.Line
	version                                      string
	apiserver, controllerManager, sched, kubelet string
}

func binariesOf(t *testing.T, l line.Line) lineBinaries {
	t.Helper()
	v, _, err := l.Version()
	require.NoError(t, err)
	b := lineBinaries{line: l, version: v,
		apiserver:         filepath.Join(l.BinDir(), "kube-apiserver"),
		controllerManager: filepath.Join(l.BinDir(), "kube-controller-manager"),
		sched:             filepath.Join(l.BinDir(), "kube-scheduler"),
		kubelet:           filepath.Join(l.BinDir(), "kubelet"),
	}
	for _, p := range []string{b.apiserver, b.controllerManager, b.sched, b.kubelet} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("line %s: %s is missing: run make cluster-binaries LINE=%s (make e2e-upgrade builds every supported line's)", l.Name, p, l.Name)
		}
	}
	return b
}

// walk is the upgrade walk's cluster and what it measured.
type walk struct {
	*env
	rows []walkRow
	// versions run now, for the table.
	api, sched string
	kubelets   map[string]string
	// disrupted counts the pods evicted by drains in the current step.
	disrupted int
	burst     int
}

type walkRow struct {
	step, api, sched, kubelets string
	took                       time.Duration
	disrupted                  int
	dbData                     string
	bigPending                 string
	burst                      string
	overCommits                int
	perNode                    string
	rejections                 string
	events                     string
	ok                         bool
}

// TestUpgradeWalk walks docs/upgrade.md on a real cluster: it starts on the
// oldest supported line with workloads that hold local-dynamic volumes
// with data and pods pending for capacity, then upgrades one minor at a
// time to the newest line (kube-apiserver, kube-controller-manager, then
// with the scheduler one minor behind a burst of new claims, the scheduler,
// then each node's kubelet after draining the node), and finally rolls the
// scheduler and the kubelets back one line. After each step every pod that
// ran runs again with its data, the pending pods place exactly as capacity
// allows, nothing is over-committed, and the scheduler's rejections metric
// and events still say why. Replacements that Kubernetes' version skew
// policy forbids are refused before anything changes.
func TestUpgradeWalk(t *testing.T) {
	all, err := line.List(root)
	require.NoError(t, err)
	supported, err := line.Supported(all)
	require.NoError(t, err)
	if len(supported) < 2 {
		t.Fatalf("the walk needs two supported lines, patches/ has %v", line.Names(supported))
	}
	var lines []lineBinaries
	for _, l := range supported {
		lines = append(lines, binariesOf(t, l))
	}
	oldest := lines[0]
	t.Logf("upgrade walk: %s", strings.Join(line.Names(supported), " → "))

	ctxStart := time.Now()
	cfg, _, err := cluster.ForLine(oldest.line, cluster.Options{Nodes: walkNodes, Log: testWriter{t}})
	require.NoError(t, err)
	e := start(t, cfg, csilocal.DefaultNames, "", walkPools, walkProvisionLatency, walkTimeout)
	w := &walk{env: e, api: oldest.version, sched: oldest.version, kubelets: map[string]string{}}
	for _, n := range e.st.Nodes {
		w.kubelets[n] = oldest.version
	}
	e.localClass("local", "pool-a")
	w.statefulSet("db", dbReplicas, "1Gi")
	w.waitPods("db", dbReplicas, 0, 3*time.Minute)
	for i := range dbReplicas {
		pod := fmt.Sprintf("db-%d", i)
		out, err := e.exec(pod, "mounttest", "--new_file_0644="+dataFile)
		require.NoError(t, err, "writing into %s: %s", pod, out)
	}
	w.statefulSet("big", bigReplicas, "3Gi")
	w.waitPods("big", 0, bigReplicas, 2*time.Minute)
	w.record("start on "+oldest.line.Name, time.Since(ctxStart), nil)

	// Item 3: what the skew policy forbids is refused with both versions
	// named, before anything changes.
	w.refusals(lines)

	for i := 1; i < len(lines); i++ {
		prev, next := lines[i-1], lines[i]
		start := time.Now()
		w.disrupted = 0
		w.replace("kube-apiserver", "", next.apiserver)
		w.api = next.version
		w.replace("kube-controller-manager", "", next.controllerManager)
		// The scheduler is one minor behind the apiserver now: claims
		// created in this window are placed by the previous line's check.
		burst := w.newBurst()
		w.schedulerAndKubelets(next)
		w.record(fmt.Sprintf("%s → %s", prev.line.Name, next.line.Name), time.Since(start), &burst)
		w.deleteBurst(burst.name)
	}

	// Item 4: roll the scheduler and the kubelets back one line; the
	// apiserver stays.
	back, from := lines[len(lines)-2], lines[len(lines)-1]
	start := time.Now()
	w.disrupted = 0
	burst := w.newBurst()
	w.schedulerAndKubelets(back)
	w.record(fmt.Sprintf("roll back scheduler and kubelets %s → %s", from.line.Name, back.line.Name), time.Since(start), &burst)

	report := w.table(supported)
	fmt.Print(report)
	dir := filepath.Join(root, line.OutputDir, "e2e")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "upgrade.md"), []byte(report), 0o644)
	}
	for _, r := range w.rows {
		assert.True(t, r.ok, "step %q: %+v", r.step, r)
	}
}

// refusals tries what Kubernetes forbids on the cluster as it is now (all
// on the oldest line): a scheduler and a kubelet of the next line (newer
// than the apiserver), and, with three lines, an apiserver two minors on.
func (w *walk) refusals(lines []lineBinaries) {
	t := w.t
	before := fmt.Sprint(w.st.Components)
	try := func(name, node, binary, want string) {
		err := w.st.Replace(w.ctx, name, node, binary)
		var se *cluster.SkewError
		if !errors.As(err, &se) {
			t.Errorf("replacing %s by %s: got %v, want a refusal of the version skew policy", name, binary, err)
			return
		}
		assert.Contains(t, err.Error(), want)
		t.Logf("refused, as Kubernetes forbids: %v", err)
	}
	oldest, next := lines[0], lines[1]
	try("kube-scheduler", "", next.sched, fmt.Sprintf("kube-scheduler %s is newer than kube-apiserver %s", next.version, oldest.version))
	try("kubelet", w.st.Nodes[0], next.kubelet, fmt.Sprintf("kubelet %s is newer than kube-apiserver %s", next.version, oldest.version))
	if len(lines) > 2 {
		try("kube-apiserver", "", lines[2].apiserver, fmt.Sprintf("kube-apiserver %s → %s skips 1 minor(s)", oldest.version, lines[2].version))
	}
	assert.Equal(t, before, fmt.Sprint(w.st.Components), "a refused replacement changed the cluster's components")
	assert.Len(t, w.st.Alive(), len(w.st.Components), "a refused replacement stopped a component")
}

func (w *walk) replace(name, node, binary string) {
	w.t.Helper()
	start := time.Now()
	require.NoError(w.t, w.st.Replace(w.ctx, name, node, binary))
	w.t.Logf("replaced %s with %s in %s", cluster.Component{Name: name, Node: node}.Label(), binary, time.Since(start).Round(100*time.Millisecond))
}

// schedulerAndKubelets puts the scheduler of to in place, then each
// node's kubelet (upgradeNode), as a hop and a rollback both do.
func (w *walk) schedulerAndKubelets(to lineBinaries) {
	w.replace("kube-scheduler", "", to.sched)
	w.sched = to.version
	for _, n := range w.st.Nodes {
		w.upgradeNode(n, to.kubelet, to.version)
	}
}

// upgradeNode drains the node, replaces its kubelet, waits until the node
// is Ready with the new kubelet version, and uncordons it; the drained
// pods come back on it (their volumes are there) before the next node.
func (w *walk) upgradeNode(node, kubelet, version string) {
	t := w.t
	w.cordon(node, true)
	w.drain(node)
	w.replace("kubelet", node, kubelet)
	w.kubelets[node] = version
	replaced := time.Now()
	w.waitFor(3*time.Minute, node+" Ready with kubelet "+version, func() (bool, string) {
		n, err := w.cs.CoreV1().Nodes().Get(w.ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		lease, err := w.cs.CoordinationV1().Leases("kube-node-lease").Get(w.ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		renewed := lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(replaced)
		state, ok := nodeReady(n)
		return ok && renewed && n.Status.NodeInfo.KubeletVersion == version,
			fmt.Sprintf("kubelet %s, lease renewed %v, %s", n.Status.NodeInfo.KubeletVersion, renewed, state)
	})
	w.cordon(node, false)
	w.waitPods("db", dbReplicas, 0, 3*time.Minute)
	t.Logf("%s: kubelet %s", node, version)
}

func nodeReady(n *corev1.Node) (string, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return "Ready=" + string(c.Status), c.Status == corev1.ConditionTrue
		}
	}
	return "no Ready condition", false
}

func (w *walk) cordon(node string, on bool) {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	_, err := w.cs.CoreV1().Nodes().Patch(w.ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(w.t, err)
}

// drain evicts the node's pods (the Eviction API, as kubectl drain does)
// and waits until they are gone.
func (w *walk) drain(node string) {
	t := w.t
	pods, err := w.cs.CoreV1().Pods(ns).List(w.ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	require.NoError(t, err)
	uids := map[types.UID]string{}
	for _, p := range pods.Items {
		err := w.cs.CoreV1().Pods(ns).EvictV1(w.ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns}})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("evicting %s: %v", p.Name, err)
		}
		uids[p.UID] = p.Name
	}
	w.disrupted += len(uids)
	w.waitFor(2*time.Minute, fmt.Sprintf("the %d pods of %s gone", len(uids), node), func() (bool, string) {
		pods, err := w.cs.CoreV1().Pods(ns).List(w.ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, p := range pods.Items {
			if _, ok := uids[p.UID]; ok {
				left = append(left, p.Name)
			}
		}
		return len(left) == 0, "left: " + strings.Join(left, ", ")
	})
	t.Logf("drained %s: %d pods evicted", node, len(uids))
}

// statefulSet creates a StatefulSet of agnhost pause pods, each with a
// local-dynamic claim of size mounted at /data, all created at once.
func (w *walk) statefulSet(name string, replicas int32, size string) {
	labels := map[string]string{"app": name}
	pod := w.pod(name, "data")
	// The claim template gives each pod its volume "data".
	pod.Spec.Volumes = nil
	ss := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pod.Spec,
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{*claim("data", "local", size)},
		},
	}
	ss.Spec.VolumeClaimTemplates[0].Namespace = ""
	_, err := w.cs.AppsV1().StatefulSets(ns).Create(w.ctx, ss, metav1.CreateOptions{})
	require.NoError(w.t, err)
}

// count is the state of a StatefulSet's pods.
type podCount struct {
	running, capacity, other int
	other1                   string
}

func (w *walk) count(set string) podCount {
	var c podCount
	for name, state := range w.podStates().byPod {
		if !strings.HasPrefix(name, set+"-") {
			continue
		}
		switch {
		case state == "Running":
			c.running++
		case strings.Contains(state, capacityReason):
			c.capacity++
		default:
			c.other++
			c.other1 = name + ": " + state
		}
	}
	return c
}

// waitPods waits until set has running pods running and capacity pods
// pending for capacity, and no other pod, for walkSettleQuiet in a row.
func (w *walk) waitPods(set string, running, capacity int, timeout time.Duration) {
	w.t.Helper()
	var since time.Time
	w.waitFor(timeout, fmt.Sprintf("%s: %d running, %d pending for capacity", set, running, capacity), func() (bool, string) {
		c := w.count(set)
		if c.running != running || c.capacity != capacity || c.other != 0 {
			since = time.Time{}
			return false, fmt.Sprintf("%d running, %d pending for capacity, %d other (%s)", c.running, c.capacity, c.other, c.other1)
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= walkSettleQuiet, "settling"
	})
}

type burstRun struct {
	name               string
	running, capacity  int
	other              int
	createdWithSchedOf string
}

// newBurst creates the step's burst and waits until it has settled: with
// 2 GiB free, exactly 2 of its 3 pods must run and 1 wait for capacity.
func (w *walk) newBurst() burstRun {
	w.burst++
	name := fmt.Sprintf("burst%d", w.burst)
	b := burstRun{name: name, createdWithSchedOf: w.sched}
	w.statefulSet(name, burstReplicas, "1Gi")
	// Settled: every pod running or pending for capacity, unchanged for
	// walkSettleQuiet; the counts are measured, not waited for.
	var last string
	var since time.Time
	w.waitFor(3*time.Minute, name+" settled", func() (bool, string) {
		c := w.count(name)
		sig := fmt.Sprint(c)
		if sig != last {
			last, since = sig, time.Now()
		}
		b.running, b.capacity, b.other = c.running, c.capacity, c.other
		return c.running+c.capacity == burstReplicas && time.Since(since) >= walkSettleQuiet,
			fmt.Sprintf("%d running, %d pending for capacity, %d other (%s)", c.running, c.capacity, c.other, c.other1)
	})
	w.t.Logf("%s (scheduler %s, apiserver %s): %d running, %d pending for capacity", name, w.sched, w.api, b.running, b.capacity)
	return b
}

// deleteBurst removes the burst with its claims and waits until its
// volumes are deleted, so that the next step has the same 2 GiB free.
func (w *walk) deleteBurst(name string) {
	t := w.t
	require.NoError(t, w.cs.AppsV1().StatefulSets(ns).Delete(w.ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}))
	w.waitFor(2*time.Minute, name+"'s pods gone", func() (bool, string) {
		c := w.count(name)
		return c.running+c.capacity+c.other == 0, fmt.Sprint(c)
	})
	for i := range burstReplicas {
		err := w.cs.CoreV1().PersistentVolumeClaims(ns).Delete(w.ctx, fmt.Sprintf("data-%s-%d", name, i), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	w.waitFor(2*time.Minute, name+"'s volumes deleted", func() (bool, string) {
		pvs, err := w.cs.CoreV1().PersistentVolumes().List(w.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, pv := range pvs.Items {
			if pv.Spec.ClaimRef != nil && strings.HasPrefix(pv.Spec.ClaimRef.Name, "data-"+name+"-") {
				left = append(left, pv.Name)
			}
		}
		return len(left) == 0, "left: " + strings.Join(left, ", ")
	})
}

// record checks the cluster after a step and adds its row.
func (w *walk) record(step string, took time.Duration, b *burstRun) {
	t := w.t
	r := walkRow{step: step, api: w.api, sched: w.sched, took: took, disrupted: w.disrupted}
	var ks []string
	for _, n := range w.st.Nodes {
		ks = append(ks, n+" "+w.kubelets[n])
	}
	r.kubelets = strings.Join(ks, ", ")
	r.ok = true

	db := w.count("db")
	withData := 0
	for i := range dbReplicas {
		out, err := w.exec(fmt.Sprintf("db-%d", i), "mounttest", "--file_content="+dataFile)
		if err == nil && strings.Contains(out, "mount-tester new file") {
			withData++
		}
	}
	r.dbData = fmt.Sprintf("%d/%d running, %d/%d with their data", db.running, dbReplicas, withData, dbReplicas)
	r.ok = r.ok && db.running == dbReplicas && withData == dbReplicas

	big := w.count("big")
	r.bigPending = fmt.Sprintf("%d/%d", big.capacity, bigReplicas)
	r.ok = r.ok && big.capacity == bigReplicas

	if b != nil {
		now := w.count(b.name)
		r.burst = fmt.Sprintf("%d running + %d for capacity (scheduler %s); after the step %d + %d",
			b.running, b.capacity, b.createdWithSchedOf, now.running, now.capacity)
		r.ok = r.ok && b.running == burstFits && b.capacity == burstReplicas-burstFits &&
			now.running == burstFits && now.capacity == burstReplicas-burstFits
	} else {
		r.burst = "-"
	}

	for _, ev := range w.events("ProvisioningFailed") {
		if strings.Contains(ev.Message, "Not enough free space") {
			r.overCommits += count(ev)
		}
	}
	perNode, over := w.pvGiBPerNode()
	r.perNode = perNode
	r.overCommits += over
	r.ok = r.ok && r.overCommits == 0

	n, err := w.rejections()
	if err != nil {
		r.rejections = "error: " + err.Error()
		r.ok = false
	} else {
		r.rejections = strconv.Itoa(n)
		r.ok = r.ok && n > 0
	}
	// The big pods' FailedScheduling events name the capacity reason, from
	// the scheduler that runs now.
	since := time.Now().Add(-took)
	fresh := 0
	for _, ev := range w.events("FailedScheduling") {
		if strings.HasPrefix(ev.InvolvedObject.Name, "big-") && strings.Contains(ev.Message, capacityReason) && lastSeen(ev).After(since) {
			fresh++
		}
	}
	r.events = fmt.Sprintf("%d", fresh)
	r.ok = r.ok && fresh > 0
	t.Logf("%s: %+v", step, r)
	w.rows = append(w.rows, r)
}

func lastSeen(ev corev1.Event) time.Time {
	t := ev.LastTimestamp.Time
	if ev.EventTime.After(t) {
		t = ev.EventTime.Time
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	return t
}

// pvGiBPerNode sums the PVs' sizes per node and counts the nodes whose
// PVs exceed the pool.
func (w *walk) pvGiBPerNode() (string, int) {
	pvs, err := w.cs.CoreV1().PersistentVolumes().List(w.ctx, metav1.ListOptions{})
	require.NoError(w.t, err)
	used := map[string]int64{}
	for _, pv := range pvs.Items {
		if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			continue
		}
		for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
			for _, m := range term.MatchExpressions {
				if len(m.Values) == 1 {
					q := pv.Spec.Capacity[corev1.ResourceStorage]
					used[m.Values[0]] += q.Value()
				}
			}
		}
	}
	var parts []string
	over := 0
	for _, n := range w.st.Nodes {
		gib := used[n] >> 30
		parts = append(parts, fmt.Sprintf("%s %d/%d", n, gib, walkPoolGiB))
		if gib > walkPoolGiB {
			over++
		}
	}
	return strings.Join(parts, ", "), over
}

var metricLine = regexp.MustCompile(`(?m)^\S*` + rejectionsMetric + `(\{[^}]*\})? (\S+)$`)

// rejections is the running scheduler's local-dynamic rejections counter
// (summed over its labels), read from its /metrics as the admin.
func (w *walk) rejections() (int, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", w.st.Kubeconfig)
	if err != nil {
		return 0, err
	}
	tc, err := rest.TLSConfigFor(rc)
	if err != nil {
		return 0, err
	}
	// The scheduler's serving certificate is self-signed (--cert-dir).
	tc.InsecureSkipVerify = true //nolint:gosec // see above
	tc.RootCAs = nil
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc.Clone()}}
	resp, err := cl.Get("https://127.0.0.1:10259/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("/metrics: %s: %s", resp.Status, body)
	}
	total := 0.0
	found := false
	for _, m := range metricLine.FindAllStringSubmatch(string(body), -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return 0, err
		}
		total += v
		found = true
	}
	if !found {
		return 0, fmt.Errorf("the scheduler's /metrics has no %s", rejectionsMetric)
	}
	return int(total), nil
}

func (w *walk) table(lines []line.Line) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\ne2e-upgrade: %s on a real cluster (%d nodes, %s each; db %d×1 GiB with data, big %d×3 GiB pending for capacity, a burst of %d×1 GiB per step of which %d fit)\n\n",
		strings.Join(line.Names(lines), " → "), walkNodes, walkPools, dbReplicas, bigReplicas, burstReplicas, burstFits)
	fmt.Fprintln(&b, "| step | apiserver | scheduler | kubelets | time | pods disrupted | db | big pending for capacity | burst | over-commits | PV GiB per node | rejections metric | capacity events in the step | ok |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range w.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %s | %s | %s | %d | %s | %s | %s | %s |\n",
			r.step, r.api, r.sched, r.kubelets, r.took.Round(time.Second), r.disrupted, r.dbData, r.bigPending, r.burst,
			r.overCommits, r.perNode, r.rejections, r.events, yesNo(r.ok))
	}
	return b.String()
}
