package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCluster brings the line up as a cluster the way a user does (`make
// cluster`'s script), checks that both nodes are Ready, runs a pod on each
// node that writes a file into a volume and reads it back, reads it with
// `kubectl logs` and again with `kubectl exec`, checks that a second
// cluster-up refuses and changes nothing, kills one node's containerd (a
// component that died), and brings the cluster down: no process, mount,
// network namespace, cgroup, bridge or iptables rule of it is left.
func TestCluster(t *testing.T) {
	load(t)
	dir, err := filepath.Abs(ln.ClusterDir())
	require.NoError(t, err)
	kubectl := filepath.Join(ln.BinDir(), "kubectl")
	require.FileExists(t, kubectl, "make cluster-binaries builds kubectl")
	before := hostNow(t)

	// make cluster killed half-way (SIGKILL: nothing of carry's runs
	// after it): cluster-up refuses to start over what is left, and
	// cluster-down removes it.
	t.Run("down after an interrupted cluster-up leaves nothing", func(t *testing.T) {
		cmd := exec.Command(rootPath("scripts/cluster-up.sh"))
		cmd.Dir = root
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var buf strings.Builder
		cmd.Stdout, cmd.Stderr = &buf, &buf
		require.NoError(t, cmd.Start())
		started := false
		deadline := time.Now().Add(5 * time.Minute)
		for time.Now().Before(deadline) && !started {
			time.Sleep(100 * time.Millisecond)
			started = strings.Contains(buf.String(), "started containerd on node1")
		}
		require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
		_ = cmd.Wait()
		require.True(t, started, "cluster-up did not get to node1's containerd:\n%s", buf.String())

		out, err := run(root, "scripts/cluster-up.sh")
		require.Error(t, err, "%s", out)
		assert.Contains(t, out, "nothing changed")
		out, err = run(root, "scripts/cluster-down.sh")
		require.NoError(t, err, "cluster-down:\n%s", out)
		assert.Contains(t, out, "stopping containerd on node1")
		before.assertSame(t, hostNow(t), dir)
	})

	out, err := run(root, "scripts/cluster-up.sh")
	t.Cleanup(func() {
		if out, err := run(root, "scripts/cluster-down.sh"); err != nil {
			t.Errorf("cluster-down: %v\n%s", err, out)
		}
	})
	require.NoError(t, err, "cluster-up:\n%s", out)
	t.Logf("cluster-up:\n%s", out)
	kubeconfig := filepath.Join(dir, "admin.conf")
	k := func(args ...string) (string, error) {
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	st := clusterState(t, dir)
	require.Len(t, st.Nodes, 2)

	t.Run("nodes Ready", func(t *testing.T) {
		out, err := k("get", "nodes", "-o", "json")
		require.NoError(t, err, out)
		var list struct {
			Items []struct {
				Metadata struct{ Name string }
				Status   struct {
					Conditions []struct{ Type, Status string }
					NodeInfo   struct{ KubeletVersion string }
				}
			}
		}
		require.NoError(t, json.Unmarshal([]byte(out), &list))
		ready := map[string]bool{}
		for _, n := range list.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == "Ready" && c.Status == "True" {
					ready[n.Metadata.Name] = true
				}
			}
			assert.Equal(t, strings.TrimSpace(carryOut(t, root, "version")), n.Status.NodeInfo.KubeletVersion, "node %s runs the line's kubelet", n.Metadata.Name)
		}
		assert.Equal(t, map[string]bool{"node1": true, "node2": true}, ready)
	})

	t.Run("a second cluster-up refuses and changes nothing", func(t *testing.T) {
		out, err := run(root, "scripts/cluster-up.sh")
		require.Error(t, err, "%s", out)
		assert.Contains(t, out, "a cluster of line "+ln.Name+" is running")
		assert.Contains(t, out, "nothing changed")
		after := clusterState(t, dir)
		assert.Equal(t, st.Components, after.Components, "the components were restarted")
	})

	image := strings.TrimSpace(carryOut(t, root, "version"))
	for _, node := range st.Nodes {
		t.Run("pod on "+node, func(t *testing.T) {
			pod := "rw-" + node
			manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{
"nodeName":%q,"restartPolicy":"Never",
"volumes":[{"name":"data","emptyDir":{}}],
"initContainers":[{"name":"write","image":"kube-carry.local/agnhost:%s","imagePullPolicy":"Never",
  "args":["mounttest","--new_file_0644=/data/hello","--file_content=/data/hello"],
  "volumeMounts":[{"name":"data","mountPath":"/data"}]}],
"containers":[{"name":"main","image":"kube-carry.local/agnhost:%s","imagePullPolicy":"Never",
  "args":["pause"],"volumeMounts":[{"name":"data","mountPath":"/data"}]}]}}`, pod, node, image, image)
			f := filepath.Join(t.TempDir(), "pod.json")
			require.NoError(t, os.WriteFile(f, []byte(manifest), 0o644))
			out, err := k("apply", "-f", f)
			require.NoError(t, err, out)
			out, err = k("wait", "--for=condition=Ready", "pod/"+pod, "--timeout=120s")
			if err != nil {
				desc, _ := k("describe", "pod", pod)
				require.NoError(t, err, "%s\n%s", out, desc)
			}
			out, err = k("get", "pod", pod, "-o", "jsonpath={.spec.nodeName} {.status.podIP}")
			require.NoError(t, err, out)
			assert.Regexp(t, `^`+node+` 10\.214\.\d+\.\d+$`, out, "the pod runs on its node with an address of the node's pod subnet")

			want := `content of file "/data/hello": mount-tester new file`
			out, err = k("logs", pod, "-c", "write")
			require.NoError(t, err, out)
			assert.Contains(t, out, want, "kubectl logs")
			out, err = k("exec", pod, "-c", "main", "--", "/usr/local/bin/agnhost", "mounttest", "--file_content=/data/hello")
			require.NoError(t, err, out)
			assert.Contains(t, out, want, "kubectl exec reads the file the init container wrote")
		})
	}

	t.Run("down after a component died leaves nothing", func(t *testing.T) {
		for _, c := range st.Components {
			if c.Name == "containerd" && c.Node == "node2" {
				require.NoError(t, syscall.Kill(c.PID, syscall.SIGKILL))
			}
		}
		out, err := run(root, "scripts/cluster-down.sh")
		require.NoError(t, err, "cluster-down:\n%s", out)
		t.Logf("cluster-down:\n%s", out)
		before.assertSame(t, hostNow(t), dir)
		for _, c := range st.Components {
			assert.False(t, running(c.PID), "%s on %q (pid %d) still runs", c.Name, c.Node, c.PID)
		}
	})
}

// hostState is what a cluster may leave on the machine.
type hostState struct {
	iptables    string
	netns       []string
	shimSockets []string
}

func hostNow(t *testing.T) hostState {
	t.Helper()
	socks, _ := filepath.Glob("/run/containerd/s/*")
	return hostState{iptables: iptablesRules(t), netns: netnsList(t), shimSockets: socks}
}

// assertSame checks that nothing of the cluster in dir is left: no
// process, mount, network namespace, bridge, cgroup, iptables rule, shim
// socket or machine-wide marker.
func (h hostState) assertSame(t *testing.T, now hostState, dir string) {
	t.Helper()
	assert.Empty(t, processesNaming(t, dir), "processes of the cluster left")
	assert.Empty(t, mountsBelow(t, dir), "mounts left")
	assert.Empty(t, mountsBelow(t, "/var/lib/kube-carry"), "mounts of the kubelets' root folders left")
	assert.Equal(t, h.netns, now.netns, "network namespaces left")
	assert.NoDirExists(t, "/sys/class/net/kc0", "the bridge is left")
	cg, _ := filepath.Glob("/sys/fs/cgroup/*/kube-carry")
	assert.Empty(t, cg, "cgroups left")
	assert.Equal(t, h.iptables, now.iptables, "iptables rules of the host changed")
	assert.Equal(t, h.shimSockets, now.shimSockets, "containerd shim sockets left")
	assert.NoFileExists(t, "/run/kube-carry/cluster.json")
}

// TestClusterUpstream: UPSTREAM_BINARIES=1 runs plain upstream's
// kube-scheduler and kubelet of the same release on the same cluster, so
// that a scenario can be run against both.
func TestClusterUpstream(t *testing.T) {
	l := load(t)
	dir, err := filepath.Abs(ln.ClusterDir())
	require.NoError(t, err)
	before := hostNow(t)
	cmd := exec.Command(rootPath("scripts/cluster-up.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "UPSTREAM_BINARIES=1", "NODES=1")
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() {
		if out, err := run(root, "scripts/cluster-down.sh"); err != nil {
			t.Errorf("cluster-down: %v\n%s", err, out)
		}
		before.assertSame(t, hostNow(t), dir)
	})
	require.NoError(t, err, "cluster-up:\n%s", out)
	assert.Contains(t, string(out), "plain upstream "+l.pin.Version+" kube-scheduler and kubelet")
	kubectl := exec.Command(filepath.Join(ln.BinDir(), "kubectl"), "--kubeconfig", filepath.Join(dir, "admin.conf"),
		"get", "node", "node1", "-o", "jsonpath={.status.nodeInfo.kubeletVersion}")
	v, err := kubectl.CombinedOutput()
	require.NoError(t, err, "%s", v)
	assert.Equal(t, l.pin.Version, string(v), "node1 runs upstream's kubelet")
	st := clusterState(t, dir)
	for _, c := range st.Components {
		if c.Name == "kube-scheduler" || c.Name == "kubelet" {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", c.PID))
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(ln.UpstreamBinDir(), c.Name), exe, "%s runs upstream's binary", c.Name)
		}
	}
}

// TestE2EInterrupted: make e2e stopped half-way, by Ctrl-C (an INT to its
// process group) or by a TERM to its process group (a CI's timeout), while
// a scenario's pods run on their local-dynamic volumes: the run stops its
// cluster and leaves nothing of it, with no make cluster-down, and keeps
// the last whole run's table.
func TestE2EInterrupted(t *testing.T) {
	load(t)
	dir, err := filepath.Abs(ln.ClusterDir())
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{
		{"ctrl-c", syscall.SIGINT},
		{"term to the process group", syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := hostNow(t)
			report := filepath.Join(ln.OutDir(), "e2e", "report.md")
			reportBefore, _ := os.ReadFile(report)
			logFile := filepath.Join(t.TempDir(), "e2e.log")
			f, err := os.Create(logFile)
			require.NoError(t, err)
			defer f.Close()
			output := outputFile(logFile).String
			cmd := exec.Command(rootPath("scripts/e2e.sh"))
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "E2E_SCENARIO=seed 000")
			cmd.Stdout, cmd.Stderr = f, f
			// A process group of its own, as a shell gives a job.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			require.NoError(t, cmd.Start())
			pgid := cmd.Process.Pid
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				if _, err := os.Stat("/run/kube-carry/cluster.json"); err == nil {
					if out, err := run(root, "scripts/cluster-down.sh"); err != nil {
						t.Errorf("cluster-down: %v\n%s", err, out)
					}
				}
			})

			// Interrupt it once the scenario's volumes are mounted.
			deadline := time.Now().Add(10 * time.Minute)
			var csiMounts []string
			for len(csiMounts) == 0 {
				select {
				case err := <-done:
					t.Fatalf("make e2e ended (%v) before a volume was mounted:\n%s", err, output())
				case <-time.After(time.Second):
				}
				require.True(t, time.Now().Before(deadline), "no volume mounted in 10 minutes:\n%s", output())
				for _, m := range mountsBelow(t, "/var/lib/kube-carry") {
					if strings.Contains(m, "/volumes/kubernetes.io~csi/") {
						csiMounts = append(csiMounts, m)
					}
				}
			}
			t.Logf("%d volumes mounted, e.g. %s: sending %v to the process group", len(csiMounts), csiMounts[0], tc.sig)
			require.NoError(t, syscall.Kill(-pgid, tc.sig))

			// After a TERM, go test and the script end at once; the test
			// binary goes on stopping the cluster.
			deadline = time.Now().Add(3 * time.Minute)
			for len(groupMembers(t, pgid)) > 0 {
				require.True(t, time.Now().Before(deadline), "make e2e still runs 3 minutes after the %v: %v\n%s", tc.sig, groupMembers(t, pgid), output())
				time.Sleep(500 * time.Millisecond)
			}
			err = <-done
			require.Error(t, err, "make e2e was interrupted:\n%s", output())
			if tc.sig == syscall.SIGINT {
				// go test outlives the INT and prints the run's output;
				// after a TERM it is gone.
				assert.Contains(t, output(), "e2e: interrupted", "the run says it was interrupted")
				assert.Contains(t, output(), "cluster-down: removed", "the run stopped its cluster")
			}
			before.assertSame(t, hostNow(t), dir)
			reportAfter, _ := os.ReadFile(report)
			assert.Equal(t, string(reportBefore), string(reportAfter), "the last whole run's table (%s) stays", report)
		})
	}
}

// groupMembers lists the processes of process group pgid that have not
// exited.
func groupMembers(t *testing.T, pgid int) []string {
	t.Helper()
	var ps []string
	for _, p := range procs(t) {
		if st, err := p.Stat(); err == nil && st.State != "Z" && st.PGRP == pgid {
			ps = append(ps, fmt.Sprintf("%d (%s)", p.PID, st.Comm))
		}
	}
	return ps
}

type clusterComponent struct {
	Name string
	Node string
	PID  int
	Tick uint64 `json:"start_ticks"`
}

type clusterStateFile struct {
	Nodes      []string
	Components []clusterComponent
}

func clusterState(t *testing.T, dir string) clusterStateFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	require.NoError(t, err)
	var st clusterStateFile
	require.NoError(t, json.Unmarshal(b, &st))
	return st
}

func iptablesRules(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("iptables-save").Output()
	require.NoError(t, err, "iptables-save (make tools installs iptables)")
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		// Comments carry times, counters change.
		if strings.HasPrefix(l, "#") || strings.HasPrefix(l, ":") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

func netnsList(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/run/netns")
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func processesNaming(t *testing.T, dir string) []string {
	t.Helper()
	var ps []string
	for _, p := range procs(t) {
		if p.PID == os.Getpid() || !running(p.PID) {
			continue
		}
		args, err := p.CmdLine()
		if err != nil {
			continue
		}
		cmd := strings.Join(args, " ")
		if strings.Contains(cmd, dir+"/") {
			ps = append(ps, fmt.Sprintf("%d: %s", p.PID, cmd))
		}
		cgroups, _ := p.Cgroups()
		for _, cg := range cgroups {
			if strings.HasPrefix(cg.Path, "/kube-carry/") {
				ps = append(ps, fmt.Sprintf("%d (cgroup /kube-carry): %s", p.PID, cmd))
				break
			}
		}
	}
	return ps
}

// procs lists the machine's processes.
func procs(t *testing.T) procfs.Procs {
	t.Helper()
	ps, err := procfs.AllProcs()
	require.NoError(t, err)
	return ps
}

// running reports whether pid is a process that has not exited: a zombie
// (exited, waiting for its parent, here the machine's init, to reap it)
// runs nothing and holds nothing but its pid.
func running(pid int) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	st, err := p.Stat()
	return err == nil && st.State != "Z"
}

func mountsBelow(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	require.NoError(t, err)
	defer f.Close()
	var mps []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (strings.HasPrefix(fields[4], dir+"/") || fields[4] == dir) {
			mps = append(mps, fields[4])
		}
	}
	return mps
}
