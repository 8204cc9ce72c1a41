// Package e2e runs the field's scenarios on a real cluster of a release
// line (internal/cluster, `make cluster`), once with the fork's
// kube-scheduler and kubelet and once with plain upstream's of the same
// release, with the project's node-local CSI driver (cmd/csi-local) as
// the local-dynamic driver, and prints one table, fork vs upstream
// (`make e2e`). The fork's numbers are asserted; upstream's must show the
// bug the fork fixes, or the scenario proves nothing.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-carry/kube-carry/internal/build"
	"github.com/kube-carry/kube-carry/internal/cluster"
	"github.com/kube-carry/kube-carry/internal/csilocal"
	"github.com/kube-carry/kube-carry/internal/line"
)

// root is the repository root (go test runs in e2e/).
var root = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Dir(wd)
}()

var ln = func() line.Line {
	l, err := line.Get(root, os.Getenv("LINE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return l
}()

// driverBin is cmd/csi-local, built once for the run.
var driverBin string

// interrupted is done once the run gets an INT (Ctrl-C) or a TERM. Every
// cluster's context derives from it: the scenario on the cluster stops,
// the test's cleanup stops the cluster and removes everything it left,
// and no other cluster is started. The cluster's components run in
// sessions of their own, so without this they would outlive the run. A
// second INT or TERM ends the run at once and leaves the cluster to make
// cluster-down.
var interrupted context.Context

func TestMain(m *testing.M) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	interrupted = ctx
	context.AfterFunc(ctx, func() {
		stop()
		fmt.Fprintln(os.Stderr, "e2e: interrupted: stopping the scenario and its cluster (a second interrupt ends the run at once and leaves the cluster to make cluster-down)")
	})
	// A TERM sent to the process group ends go test too, and with it the
	// pipe this program writes its output to. With SIGPIPE handled, a
	// write to that pipe fails instead of ending the program before its
	// cluster is stopped.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	dir, err := os.MkdirTemp("", "kube-carry-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	driverBin = filepath.Join(dir, "csi-local")
	cmd := exec.Command("go", "build", "-o", driverBin, "./cmd/csi-local")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), build.Env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building cmd/csi-local: %v\n%s", err, out)
		os.Exit(2)
	}
	// stop is not called after the run: it would end interrupted too,
	// and say the run was interrupted.
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// flavour is which kube-scheduler and kubelet a run uses.
type flavour string

const (
	fork     flavour = "fork"
	upstream flavour = "upstream"
)

// env is one scenario's cluster.
type env struct {
	t       *testing.T
	ctx     context.Context
	st      *cluster.State
	cs      *kubernetes.Clientset
	kubectl string
	// pools of the node plugins, name=size,...
	pools string
	// latency of the provisioner.
	latency time.Duration
	// names the CSI driver runs under.
	names csilocal.Names
	// capacitySource is the value of kube-carry.io/capacity-source of the
	// StorageClass of a driver other than kubernetes.io.csi.local; for
	// csistoragecapacity the driver publishes CSIStorageCapacity objects.
	capacitySource string
}

// metric is one row of a scenario's result.
type metric struct {
	name  string
	value string
}

// result is what a scenario measured on one flavour.
type result struct {
	metrics []metric
	// notes explain the run (what the pods' states were).
	notes []string
}

func (r *result) add(name string, format string, args ...any) {
	r.metrics = append(r.metrics, metric{name, fmt.Sprintf(format, args...)})
}

func (r result) get(name string) string {
	for _, m := range r.metrics {
		if m.name == name {
			return m.value
		}
	}
	return ""
}

// scenario is one field report replayed on a cluster.
type scenario struct {
	name  string
	nodes int
	pools string
	// driver is the CSI driver name the test driver runs under; empty:
	// the local-dynamic driver kubernetes.io.csi.local. Any other name is
	// also its StorageClass's provisioner, and the class opts into the
	// fork's check with kube-carry.io/capacity-source.
	driver string
	// capacitySource is the class's capacity source, node-annotation when
	// empty. With csistoragecapacity the CSIDriver has storageCapacity
	// and the controller publishes CSIStorageCapacity objects, so that
	// upstream checks them too.
	capacitySource string
	// latency of provisioning a volume.
	latency time.Duration
	run     func(e *env) result
	// check asserts the fork's result and that upstream's shows the bug.
	check func(t *testing.T, forkRes, upstreamRes result)
}

// up starts the line's cluster with the flavour's binaries and the CSI
// driver: the controller (provisioner) on the control plane, the node
// plugin on every node, registered with the node's kubelet.
func up(t *testing.T, sc scenario, f flavour) *env {
	t.Helper()
	cfg, _, err := cluster.ForLine(ln, cluster.Options{Nodes: sc.nodes, Upstream: f == upstream, Log: testWriter{t}})
	require.NoError(t, err)
	names := csilocal.DefaultNames
	if sc.driver != "" {
		names, err = csilocal.NamesOf(sc.driver)
		require.NoError(t, err)
	}
	return start(t, cfg, names, sc.capacitySource, sc.pools, sc.latency, 10*time.Minute)
}

// start starts the cluster of cfg and the CSI driver under names with the
// node plugins' pools and the provisioner's latency; the cluster is
// stopped when the test ends, and timeout or an interrupt of the run
// bounds everything the test does on it.
func start(t *testing.T, cfg cluster.Config, names csilocal.Names, capacitySource, pools string, latency, timeout time.Duration) *env {
	t.Helper()
	if interrupted.Err() != nil {
		t.Fatal("e2e: interrupted: no cluster is started")
	}
	ctx, cancel := context.WithTimeout(interrupted, timeout)
	t.Cleanup(cancel)
	st, err := cluster.Up(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		if _, err := cluster.Down(st.Dir, testWriter{t}); err != nil {
			t.Errorf("cluster down: %v", err)
		}
	})
	rc, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	e := &env{t: t, ctx: ctx, st: st, cs: cs, kubectl: cfg.Binaries.Kubectl, pools: pools, latency: latency, names: names, capacitySource: capacitySource}
	e.startDriver()
	return e
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestScenarios runs every scenario on both flavours and prints the table.
func TestScenarios(t *testing.T) {
	results := map[string]map[flavour]result{}
	var order []string
	for _, sc := range scenarios() {
		if run := os.Getenv("E2E_SCENARIO"); run != "" && !strings.Contains(sc.name, run) {
			continue
		}
		order = append(order, sc.name)
		results[sc.name] = map[flavour]result{}
		t.Run(sc.name, func(t *testing.T) {
			for _, f := range []flavour{fork, upstream} {
				t.Run(string(f), func(t *testing.T) {
					e := up(t, sc, f)
					results[sc.name][f] = sc.run(e)
				})
			}
			fr, okF := results[sc.name][fork]
			ur, okU := results[sc.name][upstream]
			if okF && okU {
				sc.check(t, fr, ur)
			}
		})
	}
	report := table(order, results)
	fmt.Print(report)
	if interrupted.Err() != nil {
		// The last whole run's table stays.
		return
	}
	dir := filepath.Join(ln.OutDir(), "e2e")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "report.md"), []byte(report), 0o644)
	}
}

// table is the fork-vs-upstream table, one row per metric.
func table(order []string, results map[string]map[flavour]result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\ne2e: line %s, fork vs plain upstream of the same release\n\n", ln.Name)
	fmt.Fprintln(&b, "| scenario | metric | fork | upstream |")
	fmt.Fprintln(&b, "|---|---|---|---|")
	for _, name := range order {
		fr, ur := results[name][fork], results[name][upstream]
		var names []string
		for _, m := range append(slices.Clone(fr.metrics), ur.metrics...) {
			if !slices.Contains(names, m.name) {
				names = append(names, m.name)
			}
		}
		for _, m := range names {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, m, orDash(fr.get(m)), orDash(ur.get(m)))
		}
	}
	var notes strings.Builder
	tw := tabwriter.NewWriter(&notes, 0, 4, 2, ' ', 0)
	for _, name := range order {
		for _, f := range []flavour{fork, upstream} {
			for _, n := range results[name][f].notes {
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", name, f, n)
			}
		}
	}
	tw.Flush()
	if notes.Len() > 0 {
		b.WriteString("\nnotes:\n" + notes.String())
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
