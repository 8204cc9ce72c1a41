package cluster

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// The host side of the cluster: one bridge with the control plane's
// address, one network namespace per node joined to it by a veth pair, one
// cgroup subtree for the nodes' pods. All of them carry the names below,
// so that cluster-down finds them also when the state file is lost.
const (
	bridgeName = "kc0"
	cgroupRoot = "/sys/fs/cgroup"
	// containerLogLinks is where every kubelet links its containers' logs
	// (a fixed path in the kubelet).
	containerLogLinks = "/var/log/containers"
)

// Variables, so that a test that stops processes it started stops none of
// a running cluster's.
var (
	// cgroupParent is the cgroup (in every hierarchy) under which each
	// node's kubelet puts its pods: /kube-carry/<node>.
	cgroupParent = "kube-carry"
	netnsDir     = "/run/netns"
)

// netnsName is the network namespace (and host-side veth) of a node.
func netnsName(node string) string { return "kc-" + node }

func netnsPath(node string) string { return filepath.Join(netnsDir, netnsName(node)) }

// ip runs iproute2's ip.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// setupBridge creates the bridge that joins the nodes to the control plane,
// with the control plane's address.
func setupBridge() error {
	if err := ip("link", "add", bridgeName, "type", "bridge"); err != nil {
		return err
	}
	if err := ip("addr", "add", controlPlaneIP+"/24", "dev", bridgeName); err != nil {
		return err
	}
	return ip("link", "set", bridgeName, "up")
}

// setupNodeNetwork creates the node's network namespace: lo, and eth0 with
// the node's address, its peer on the bridge.
func setupNodeNetwork(node, addr string) error {
	ns := netnsName(node)
	steps := [][]string{
		{"netns", "add", ns},
		{"link", "add", ns, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"link", "set", ns, "master", bridgeName, "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "addr", "add", addr + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
	}
	// Pods reach the control plane through the node: the bridge CNI plugin
	// masquerades them, and the node forwards.
	out, err := exec.Command("nsenter", "--net="+netnsPath(node), "--", "sysctl", "-qw", "net.ipv4.ip_forward=1").CombinedOutput()
	if err != nil {
		return fmt.Errorf("node %s: net.ipv4.ip_forward: %v: %s", node, err, out)
	}
	return nil
}

// cgroupHierarchies are the mounted cgroup hierarchies: every v1 controller
// (and named hierarchy) under /sys/fs/cgroup, and the v2 one.
func cgroupHierarchies() ([]string, error) {
	ents, err := os.ReadDir(cgroupRoot)
	if err != nil {
		return nil, err
	}
	var dirs []string
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.procs")); err == nil {
		return []string{cgroupRoot}, nil // cgroup v2 only
	}
	for _, e := range ents {
		d := filepath.Join(cgroupRoot, e.Name())
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil {
			dirs = append(dirs, d)
		}
	}
	return dirs, nil
}

// setupCgroups creates /kube-carry/<node> in every hierarchy: the kubelet
// wants its cgroupRoot to exist. A new cpuset cgroup has no CPUs and no
// memory nodes until given its parent's.
func setupCgroups(nodes []string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		for _, n := range nodes {
			for _, d := range []string{filepath.Join(h, cgroupParent), filepath.Join(h, cgroupParent, n)} {
				if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
					return fmt.Errorf("cgroup %s: %w", d, err)
				}
				if filepath.Base(h) != "cpuset" {
					continue
				}
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					v, err := os.ReadFile(filepath.Join(filepath.Dir(d), f))
					if err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(d, f), v, 0o644); err != nil {
						return fmt.Errorf("cgroup %s: %s: %w", d, f, err)
					}
				}
			}
		}
	}
	return nil
}

// removeCgroups removes /kube-carry and everything below it from every
// hierarchy, deepest first. It fails when a cgroup still has processes.
func removeCgroups() (int, error) {
	hs, err := cgroupHierarchies()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, h := range hs {
		top := filepath.Join(h, cgroupParent)
		var dirs []string
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := os.Remove(d); err != nil {
				errs = append(errs, fmt.Errorf("cgroup %s: %w", d, err))
				continue
			}
			n++
		}
	}
	return n, errors.Join(errs...)
}

// proc is a running process of the host.
type proc struct {
	pid  int
	cmd  string
	why  string
	tick uint64
}

// startTicks is the start time of pid in clock ticks since boot (stat field
// 22): with the pid it names a process, also after pids wrap.
func startTicks(pid int) (uint64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	if st.State == "Z" {
		return 0, fmt.Errorf("pid %d is a zombie", pid)
	}
	return st.Starttime, nil
}

// alive reports whether the process pid started at tick still runs.
func alive(pid int, tick uint64) bool {
	t, err := startTicks(pid)
	return err == nil && t == tick
}

// ourProcesses lists the processes of the cluster in dir: those whose
// command line names dir (components, containerd shims), those in the
// cluster's cgroups (containers), and those in a node's network namespace.
func ourProcesses(dir string) ([]proc, error) {
	netns := map[uint64]string{}
	if ents, err := os.ReadDir(netnsDir); err == nil {
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "kc-") {
				continue
			}
			var st unix.Stat_t
			if unix.Stat(filepath.Join(netnsDir, e.Name()), &st) == nil {
				netns[st.Ino] = e.Name()
			}
		}
	}
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var ps []proc
	for _, p := range procs {
		pid := p.PID
		if pid == self {
			continue
		}
		args, err := p.CmdLine()
		if err != nil {
			continue // gone
		}
		cmd := strings.Join(args, " ")
		why := ""
		switch {
		case strings.Contains(cmd, dir+"/"):
			why = "names " + dir
		case inOurCgroup(p):
			why = "in cgroup /" + cgroupParent
		default:
			var st unix.Stat_t
			if unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil {
				if ns, ok := netns[st.Ino]; ok {
					why = "in network namespace " + ns
				}
			}
		}
		if why == "" {
			continue
		}
		tick, err := startTicks(pid)
		if err != nil {
			continue // gone, or a zombie its parent will reap
		}
		ps = append(ps, proc{pid: pid, cmd: cmd, why: why, tick: tick})
	}
	return ps, nil
}

func inOurCgroup(p procfs.Proc) bool {
	cgroups, err := p.Cgroups()
	if err != nil {
		return false
	}
	for _, cg := range cgroups {
		if cg.Path == "/"+cgroupParent || strings.HasPrefix(cg.Path, "/"+cgroupParent+"/") {
			return true
		}
	}
	return false
}

// stopProcess sends SIGTERM, waits up to grace, then SIGKILL, and waits
// for the process to be gone.
func stopProcess(pid int, tick uint64, grace time.Duration) error {
	if !alive(pid, tick) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid, tick) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for range 100 {
		if !alive(pid, tick) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("pid %d does not stop", pid)
}

// mountsUnder lists the mount points at or below dir, and the nodes'
// network namespace mounts, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mps []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") || strings.HasPrefix(mp, netnsDir+"/kc-") {
			mps = append(mps, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(mps, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(mps), nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountAll unmounts every mount at or below dir (and the nodes' network
// namespaces), repeating while a pass still finds some (a mount can be
// stacked on another).
func unmountAll(dir string) (int, error) {
	n := 0
	for range 10 {
		mps, err := mountsUnder(dir)
		if err != nil {
			return n, err
		}
		if len(mps) == 0 {
			return n, nil
		}
		for _, mp := range mps {
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return n, fmt.Errorf("unmount %s: %w", mp, err)
			}
			n++
		}
	}
	mps, _ := mountsUnder(dir)
	return n, fmt.Errorf("still mounted: %s", strings.Join(mps, ", "))
}

// removeNetwork deletes the nodes' network namespaces (their veth pairs go
// with them) and the bridge. It returns what it removed.
func removeNetwork() ([]string, error) {
	var removed []string
	var errs []error
	ents, _ := os.ReadDir(netnsDir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "kc-") {
			continue
		}
		if err := ip("netns", "delete", e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "netns "+e.Name())
	}
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err == nil {
		if err := ip("link", "delete", bridgeName); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, "bridge "+bridgeName)
		}
	}
	return removed, errors.Join(errs...)
}

// shimSocketDir is where containerd 1.6 puts its shims' sockets, named by
// the hash of the containerd socket, the namespace and the shim's id (its
// pod's sandbox): a shim that was killed leaves its socket there. A
// variable for the tests.
var shimSocketDir = "/run/containerd/s"

// shimSocketsOf lists the sockets in shimSocketDir that process pid has
// open: a live shim's own. It returns nil for a process that has ended.
func shimSocketsOf(pid int) []string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return nil
	}
	targets, err := p.FileDescriptorTargets()
	if err != nil {
		return nil
	}
	inodes := map[uint64]bool{}
	for _, t := range targets {
		var ino uint64
		if _, err := fmt.Sscanf(t, "socket:[%d]", &ino); err == nil {
			inodes[ino] = true
		}
	}
	if len(inodes) == 0 {
		return nil
	}
	// The sockets of the process's network namespace (a node's, where its
	// containerd runs and starts its shims): /proc/<pid>/net/unix.
	pfs, err := procfs.NewFS(fmt.Sprintf("/proc/%d", pid))
	if err != nil {
		return nil
	}
	socks, err := pfs.NetUNIX()
	if err != nil {
		return nil
	}
	var paths []string
	for _, s := range socks.Rows {
		if inodes[s.Inode] && filepath.Dir(s.Path) == shimSocketDir && !slices.Contains(paths, s.Path) {
			paths = append(paths, s.Path)
		}
	}
	return paths
}

// removeShimSockets removes the sockets of the nodes' killed shims: those
// the shims held when they were killed (held), and those their runtimes'
// task folders name (a shim that died before cluster-down ran).
func removeShimSockets(dir string, held []string) int {
	socks := slices.Clone(held)
	tasks, _ := filepath.Glob(filepath.Join(dir, "*", "containerd", "state", "io.containerd.runtime.v2.task", "*", "*"))
	for _, t := range tasks {
		id, ns := filepath.Base(t), filepath.Base(filepath.Dir(t))
		node := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(t)))))
		sock := nodePaths{dir: node}.containerdSocket()
		sum := sha256.Sum256([]byte(filepath.Join(sock, ns, id)))
		socks = append(socks, filepath.Join(shimSocketDir, hex.EncodeToString(sum[:])))
	}
	slices.Sort(socks)
	n := 0
	for _, s := range slices.Compact(socks) {
		if os.Remove(s) == nil {
			n++
		}
	}
	return n
}

// removeDeadShimSockets removes the sockets in shimSocketDir that no
// process listens on and that were made after the cluster in dir was set
// up (after its nodes' containerd configurations were written): those of
// its shims that ended before cluster-down could see them and that no
// task folder names, such as a shim killed in the middle of its start for
// a task that failed (containerd removes that task's folder). No
// containerd uses a socket that nobody listens on (it makes it again); a
// socket older than the cluster stays.
func removeDeadShimSockets(dir string) int {
	confs, _ := filepath.Glob(filepath.Join(dir, "*", "containerd.toml"))
	var since time.Time
	for _, c := range confs {
		if fi, err := os.Stat(c); err == nil && (since.IsZero() || fi.ModTime().Before(since)) {
			since = fi.ModTime()
		}
	}
	if since.IsZero() {
		return 0
	}
	ents, _ := os.ReadDir(shimSocketDir)
	n := 0
	for _, e := range ents {
		p := filepath.Join(shimSocketDir, e.Name())
		fi, err := e.Info()
		if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.ModTime().Before(since) {
			continue
		}
		c, err := net.Dial("unix", p)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) && os.Remove(p) == nil {
			n++
		}
	}
	return n
}

// removeLogLinks removes the kubelets' links in /var/log/containers that
// point into dir.
func removeLogLinks(dir string) int {
	ents, err := os.ReadDir(containerLogLinks)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		p := filepath.Join(containerLogLinks, e.Name())
		if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, dir+"/") {
			if os.Remove(p) == nil {
				n++
			}
		}
	}
	return n
}
