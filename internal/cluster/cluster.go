// Package cluster runs a release line as a real Kubernetes cluster on one
// machine, for trying the fork and for end-to-end scenarios: etcd,
// kube-apiserver, kube-controller-manager and the line's kube-scheduler in
// the host, and nodes that are each a kubelet with a containerd of its own
// in a network namespace of its own, joined to the control plane by a
// bridge. Certificates, kubeconfigs and RBAC are made as kubeadm makes
// them; every file and log is under one folder (_output/<line>/cluster).
//
// Up starts a cluster and waits until every node is Ready; Down stops it
// and removes every process, mount, network namespace and cgroup it made,
// also when a component died or Up was interrupted: it finds what is left
// by the cluster's folder, cgroup and namespace names, not only by its
// state file. One cluster runs on a machine at a time.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Binaries are the programs a cluster runs. The scheduler and the kubelet
// can be of another build than the rest (plain upstream, for a scenario
// that compares them with the fork).
type Binaries struct {
	Etcd              string `json:"etcd"`
	APIServer         string `json:"kube-apiserver"`
	ControllerManager string `json:"kube-controller-manager"`
	Scheduler         string `json:"kube-scheduler"`
	Kubelet           string `json:"kubelet"`
	Kubectl           string `json:"kubectl"`
	// Agnhost is upstream's test image program: the cluster's pause image
	// (agnhost pause) and the workload image.
	Agnhost string `json:"agnhost"`
}

func (b Binaries) each() [][2]string {
	return [][2]string{
		{"etcd", b.Etcd}, {"kube-apiserver", b.APIServer}, {"kube-controller-manager", b.ControllerManager},
		{"kube-scheduler", b.Scheduler}, {"kubelet", b.Kubelet}, {"kubectl", b.Kubectl}, {"agnhost", b.Agnhost},
	}
}

// Config is the cluster to start.
type Config struct {
	// Line is the release line (vA.B), Version the fork version of its
	// binaries; both are recorded and printed.
	Line    string
	Version string
	// Dir is the cluster's folder; Up empties it (but for logs of an
	// earlier cluster, kept in logs.previous/).
	Dir string
	// Nodes is the number of nodes (default 2).
	Nodes    int
	Binaries Binaries
	// Images are the image archives to import into every node, and the
	// pause image's name (one of them).
	Images     []string
	PauseImage string
	// WorkloadImage is the image pods run (agnhost).
	WorkloadImage string
	// Log receives progress lines.
	Log io.Writer
}

// Component is one process of the cluster, as the state file records it.
type Component struct {
	Name   string `json:"name"`
	Node   string `json:"node,omitempty"`
	Binary string `json:"binary"`
	PID    int    `json:"pid"`
	Tick   uint64 `json:"start_ticks"`
	Log    string `json:"log"`
	// Args and Netns are how it was started, for a restart.
	Args  []string `json:"args"`
	Netns string   `json:"netns,omitempty"`
}

// State is what a running cluster records in <dir>/state.json and, for
// cluster-down from anywhere, in the machine-wide marker.
type State struct {
	Line       string      `json:"line"`
	Version    string      `json:"version"`
	Dir        string      `json:"dir"`
	Nodes      []string    `json:"nodes"`
	Binaries   Binaries    `json:"binaries"`
	Components []Component `json:"components"`
	Kubeconfig string      `json:"kubeconfig"`
	// Image is the workload image (agnhost) every node has.
	Image string `json:"image"`
}

// A unix socket's path has at most maxSocketPath bytes.
const maxSocketPath = 107

// MarkerFile records the cluster running on this machine.
const MarkerFile = "/run/kube-carry/cluster.json"

// Running returns the state of the cluster this machine runs (or was left
// with), or nil.
func Running() (*State, error) {
	b, err := os.ReadFile(MarkerFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", MarkerFile, err)
	}
	if sb, err := os.ReadFile(filepath.Join(st.Dir, "state.json")); err == nil {
		// The folder's state has the components started since.
		var full State
		if json.Unmarshal(sb, &full) == nil {
			return &full, nil
		}
	}
	return &st, nil
}

// Alive lists the recorded components that still run.
func (st *State) Alive() []Component {
	var out []Component
	for _, c := range st.Components {
		if alive(c.PID, c.Tick) {
			out = append(out, c)
		}
	}
	return out
}

func (st *State) save() error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(st.Dir, "state.json"), b, 0o644); err != nil {
		return err
	}
	return writeFile(MarkerFile, b, 0o644)
}

// Preflight checks what Up needs of the machine and of cfg, naming every
// missing piece.
func Preflight(cfg Config) error {
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("make cluster needs root (network namespaces, mounts, cgroups, containerd)"))
	}
	for _, b := range cfg.Binaries.each() {
		if b[1] == "" {
			errs = append(errs, fmt.Errorf("no %s binary given", b[0]))
			continue
		}
		if st, err := os.Stat(b[1]); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("%s: %s is not an executable file", b[0], b[1]))
		}
	}
	for _, tool := range []string{"containerd", "ctr", "runc", "ip", "nsenter", "iptables", "sysctl"} {
		if _, err := lookPath(tool); err != nil {
			errs = append(errs, fmt.Errorf("%s is not installed (make tools installs it)", tool))
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			errs = append(errs, fmt.Errorf("CNI plugin %s is not in %s (make tools installs containernetworking-plugins)", plugin, cniBinDir))
		}
	}
	// A node's containerd socket is in the cluster's folder, and a unix
	// socket's path has at most 107 bytes.
	if dir, err := filepath.Abs(cfg.Dir); err == nil {
		sock := nodePaths{dir: filepath.Join(dir, nodeName(cfg.Nodes))}.containerdSocket() + ".ttrpc"
		if len(sock) > maxSocketPath {
			errs = append(errs, fmt.Errorf("%s is too deep for the nodes' unix sockets (%s: %d bytes of %d): use a clone at a shorter path", dir, sock, len(sock), maxSocketPath))
		}
	}
	hs, err := cgroupHierarchies()
	if err != nil || len(hs) == 0 {
		errs = append(errs, fmt.Errorf("no cgroup hierarchy under %s", cgroupRoot))
	}
	return errors.Join(errs...)
}

// lookPath finds a tool on PATH or in the sbin folders a user's PATH may
// lack.
func lookPath(tool string) (string, error) {
	if p, err := exec.LookPath(tool); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(d, tool)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", tool)
}

// AlreadyError is Up's answer when a cluster runs (or was left) on the
// machine: nothing was changed.
type AlreadyError struct{ State *State }

func (e *AlreadyError) Error() string {
	alive := e.State.Alive()
	if len(alive) > 0 {
		return fmt.Sprintf("a cluster of line %s is running (%s, %d components up): nothing changed; make cluster-down stops it", e.State.Line, e.State.Dir, len(alive))
	}
	return fmt.Sprintf("a cluster of line %s was not brought down (%s): nothing changed; make cluster-down removes what is left of it", e.State.Line, e.State.Dir)
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "cluster: "+format+"\n", args...)
	}
}

// Up starts the cluster of cfg and waits until every node is Ready. On
// failure it stops and removes what it started (the logs stay) and says
// which component failed and where its log is.
func Up(ctx context.Context, cfg Config) (*State, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 2
	}
	if cfg.Nodes < 1 || cfg.Nodes > 200 {
		return nil, fmt.Errorf("nodes: %d: want 1 to 200", cfg.Nodes)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	if st, err := Running(); err != nil {
		return nil, err
	} else if st != nil {
		return nil, &AlreadyError{State: st}
	}
	if left := leftovers(dir); len(left) > 0 {
		return nil, fmt.Errorf("this machine has what a cluster left: %s: nothing changed; make cluster-down removes it", strings.Join(left, ", "))
	}
	if err := Preflight(cfg); err != nil {
		return nil, err
	}
	st := &State{Line: cfg.Line, Version: cfg.Version, Dir: dir, Binaries: cfg.Binaries, Kubeconfig: filepath.Join(dir, "admin.conf"), Image: cfg.WorkloadImage}
	for i := 1; i <= cfg.Nodes; i++ {
		st.Nodes = append(st.Nodes, nodeName(i))
	}
	if err := resetDir(dir); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(KubeletRootBase); err != nil {
		return nil, err
	}
	// The marker first: from here on, cluster-down finds this cluster.
	if err := st.save(); err != nil {
		return nil, err
	}
	u := &upper{cfg: cfg, st: st}
	if err := u.run(ctx); err != nil {
		cfg.logf("failed: %v", err)
		cfg.logf("stopping what was started (logs stay in %s)", filepath.Join(dir, "logs"))
		if _, derr := Down(dir, cfg.Log); derr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", derr))
		}
		return nil, err
	}
	return st, nil
}

// leftovers names what a cluster left on the machine without a marker.
func leftovers(dir string) []string {
	var left []string
	if ps, err := ourProcesses(dir); err == nil {
		for _, p := range ps {
			left = append(left, fmt.Sprintf("pid %d (%s)", p.pid, p.why))
		}
	}
	for _, d := range []string{dir, KubeletRootBase} {
		if mps, err := mountsUnder(d); err == nil {
			left = append(left, mps...)
		}
	}
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err == nil {
		left = append(left, "bridge "+bridgeName)
	}
	return left
}

// resetDir empties dir for a new cluster, keeping the logs of the last one
// in logs.previous.
func resetDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	prev := filepath.Join(dir, "logs.previous")
	if err := os.RemoveAll(prev); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "logs")); err == nil {
		if err := os.Rename(filepath.Join(dir, "logs"), prev); err != nil {
			return err
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == "logs.previous" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
}

// Report is what Down removed.
type Report struct {
	Processes int
	Mounts    int
	Cgroups   int
	Network   []string
	LogLinks  int
	// ShimSockets are the sockets of killed containerd shims.
	ShimSockets int
}

func (r Report) String() string {
	return fmt.Sprintf("%d processes, %d mounts, %d cgroups, %d container log links, %d shim sockets; %s", r.Processes, r.Mounts, r.Cgroups, r.LogLinks, r.ShimSockets, strings.Join(append([]string{"network:"}, r.Network...), " "))
}

// Down stops the cluster whose folder is dir (or, with dir empty, the one
// the machine's marker names) and removes everything it left: processes
// (kubelets first, then the runtimes and their containers, then the
// control plane), mounts under the folder, the nodes' network namespaces
// and the bridge, the cgroups, the kubelets' log links, the sockets of the
// shims it killed. The folder's files (logs, certificates) stay.
func Down(dir string, log io.Writer) (Report, error) {
	var rep Report
	st, err := Running()
	if err != nil {
		return rep, err
	}
	if dir == "" {
		if st == nil {
			return rep, errors.New("no cluster runs on this machine")
		}
		dir = st.Dir
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return rep, err
	}
	logf := func(format string, args ...any) {
		if log != nil {
			fmt.Fprintf(log, "cluster-down: "+format+"\n", args...)
		}
	}
	// The recorded components in order: kubelets, then containerds, then
	// the control plane from the scheduler down to etcd.
	if st != nil && st.Dir == dir {
		// Programs a scenario added (not in the list) go first.
		order := []string{"kubelet", "containerd", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"}
		comps := slices.Clone(st.Components)
		slices.SortStableFunc(comps, func(a, b Component) int { return slices.Index(order, a.Name) - slices.Index(order, b.Name) })
		for _, c := range comps {
			if !alive(c.PID, c.Tick) {
				continue
			}
			logf("stopping %s (pid %d)", c.Label(), c.PID)
			if err := stopProcess(c.PID, c.Tick, 15*time.Second); err != nil {
				return rep, fmt.Errorf("%s: %w", c.Label(), err)
			}
			rep.Processes++
		}
	}
	n, shimSockets, err := stopLeftovers(dir, logf)
	rep.Processes += n
	if err != nil {
		return rep, err
	}
	n, err = unmountAll(dir)
	rep.Mounts = n
	if err != nil {
		return rep, err
	}
	// The kubelets' root folders: their mounts, then the folders (a new
	// cluster starts with empty ones).
	n, err = unmountAll(KubeletRootBase)
	rep.Mounts += n
	if err != nil {
		return rep, err
	}
	if err := os.RemoveAll(KubeletRootBase); err != nil {
		return rep, err
	}
	rep.Network, err = removeNetwork()
	if err != nil {
		return rep, err
	}
	rep.Cgroups, err = removeCgroups()
	if err != nil {
		return rep, err
	}
	rep.LogLinks = removeLogLinks(dir)
	rep.ShimSockets = removeShimSockets(dir, shimSockets) + removeDeadShimSockets(dir)
	if err := os.Remove(MarkerFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return rep, err
	}
	logf("removed %s", rep)
	return rep, nil
}

// stopLeftovers kills what is left of the cluster in dir once its recorded
// components are stopped: containers and their shims, components started
// by an interrupted Up before it recorded them. It returns how many it
// killed and the containerd shim sockets they held: a killed shim leaves
// its socket, and the task folder that would name it may be gone already
// (containerd removes it when it fails to create a task, as when it is
// stopped in the middle of one).
func stopLeftovers(dir string, logf func(string, ...any)) (int, []string, error) {
	n := 0
	var sockets []string
	for range 5 {
		ps, err := ourProcesses(dir)
		if err != nil {
			return n, sockets, err
		}
		if len(ps) == 0 {
			break
		}
		for _, p := range ps {
			sockets = append(sockets, shimSocketsOf(p.pid)...)
		}
		for _, p := range ps {
			logf("stopping pid %d (%s): %s", p.pid, p.why, truncate(p.cmd, 120))
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			n++
		}
		for _, p := range ps {
			_ = stopProcess(p.pid, p.tick, time.Second)
		}
	}
	if ps, _ := ourProcesses(dir); len(ps) > 0 {
		return n, sockets, fmt.Errorf("%d processes do not stop, e.g. pid %d (%s)", len(ps), ps[0].pid, ps[0].why)
	}
	return n, sockets, nil
}

// Label names the component for messages: kubelet on node1.
func (c Component) Label() string {
	if c.Node != "" {
		return c.Name + " on " + c.Node
	}
	return c.Name
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Stop stops one component of the running cluster (a scenario that kills
// the scheduler, or restarts a node's kubelet), with SIGKILL when kill is
// set; Start starts it again with the same arguments.
func (st *State) Stop(name, node string, kill bool) error {
	for _, c := range st.Components {
		if c.Name != name || c.Node != node || !alive(c.PID, c.Tick) {
			continue
		}
		if kill {
			_ = syscall.Kill(c.PID, syscall.SIGKILL)
			return stopProcess(c.PID, c.Tick, 10*time.Second)
		}
		return stopProcess(c.PID, c.Tick, 15*time.Second)
	}
	return fmt.Errorf("%s is not running", Component{Name: name, Node: node}.Label())
}

// Logs returns where the component's log is.
func (st *State) Logs(name, node string) string {
	return filepath.Join(st.Dir, "logs", Component{Name: name, Node: node}.logName())
}

func (c Component) logName() string {
	if c.Node != "" {
		return c.Node + "-" + c.Name + ".log"
	}
	return c.Name + ".log"
}

// itoa is strconv.Itoa, for argument lists.
func itoa(i int) string { return strconv.Itoa(i) }

// NodeDir is the folder of a node's files (containerd, kubelet, CNI).
func (st *State) NodeDir(node string) string { return filepath.Join(st.Dir, node) }

// NodeKubeconfig is the node's kubelet kubeconfig (user system:node:<node>):
// what a node agent, such as a CSI node plugin, may use.
func (st *State) NodeKubeconfig(node string) string {
	return nodePaths{dir: st.NodeDir(node)}.kubeconfig()
}

// KubeletRoot is the node's kubelet root folder (--root-dir): the plugin
// registry is its plugins_registry.
func (st *State) KubeletRoot(node string) string {
	return nodePaths{dir: st.NodeDir(node)}.kubeletRoot()
}
