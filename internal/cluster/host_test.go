package cluster

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeShimEnv makes this test binary a stand-in for a containerd shim: it
// listens on the socket the variable names, says so, and waits to be
// killed.
const fakeShimEnv = "KUBE_CARRY_FAKE_SHIM"

func TestMain(m *testing.M) {
	if sock := os.Getenv(fakeShimEnv); sock != "" {
		l, err := net.Listen("unix", sock)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer l.Close()
		fmt.Println("listening")
		time.Sleep(time.Hour)
		return
	}
	os.Exit(m.Run())
}

// TestStopLeftoversRemovesShimSockets: cluster-down removes the socket of a
// shim it kills also when no task folder of the node's containerd names
// the shim any more (containerd removes the folder when it fails to create
// a task, as when it is stopped in the middle of one), and only that
// socket. The stand-in shim runs in a network namespace of its own, as a
// shim runs in its node's.
func TestStopLeftoversRemovesShimSockets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the stand-in shim runs in a network namespace of its own: run the test as root")
	}
	dir := t.TempDir()
	sockDir := t.TempDir()
	// Only the processes this test starts are the cluster's: not those in
	// the network namespaces and cgroups of a cluster that runs.
	savedSockDir, savedNetns, savedCgroup := shimSocketDir, netnsDir, cgroupParent
	shimSocketDir, netnsDir, cgroupParent = sockDir, t.TempDir(), "kube-carry-test-"+filepath.Base(dir)
	t.Cleanup(func() { shimSocketDir, netnsDir, cgroupParent = savedSockDir, savedNetns, savedCgroup })

	// Another program's socket in the same folder stays.
	other := filepath.Join(sockDir, "other")
	l, err := net.Listen("unix", other)
	require.NoError(t, err)
	defer l.Close()

	sock := filepath.Join(sockDir, "0a1b2c")
	// The command line of a shim of node1's containerd names dir.
	shim := exec.Command(os.Args[0], "-namespace", "k8s.io", "-id", "0a1b2c", "-address", filepath.Join(dir, "node1", "containerd.sock"))
	shim.Env = append(os.Environ(), fakeShimEnv+"="+sock)
	shim.Stderr = os.Stderr
	shim.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	out, err := shim.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, shim.Start())
	t.Cleanup(func() {
		_ = shim.Process.Signal(syscall.SIGKILL)
		_ = shim.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "listening\n", line)

	n, sockets, err := stopLeftovers(dir, t.Logf)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "processes killed")
	assert.Equal(t, []string{sock}, sockets, "sockets the killed shim held")
	require.FileExists(t, sock, "a killed shim leaves its socket")
	assert.Equal(t, 1, removeShimSockets(dir, sockets), "sockets removed")
	assert.NoFileExists(t, sock)
	assert.FileExists(t, other)
}

// TestRemoveDeadShimSockets: cluster-down removes the sockets that no
// process listens on and that were made after the cluster was set up (a
// shim that ended before cluster-down ran, with no task folder that names
// it), and nothing else in the folder.
func TestRemoveDeadShimSockets(t *testing.T) {
	dir := t.TempDir()
	sockDir := t.TempDir()
	saved := shimSocketDir
	shimSocketDir = sockDir
	t.Cleanup(func() { shimSocketDir = saved })

	setUp := time.Now().Add(-time.Hour)
	conf := filepath.Join(dir, "node1", "containerd.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(conf), 0o755))
	require.NoError(t, os.WriteFile(conf, nil, 0o644))
	require.NoError(t, os.Chtimes(conf, setUp, setUp))

	dead := func(name string) string {
		p := filepath.Join(sockDir, name)
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
		require.NoError(t, err)
		l.SetUnlinkOnClose(false)
		require.NoError(t, l.Close())
		return p
	}
	killed := dead("killed")
	older := dead("older")
	require.NoError(t, os.Chtimes(older, setUp.Add(-time.Minute), setUp.Add(-time.Minute)))
	live := filepath.Join(sockDir, "live")
	l, err := net.Listen("unix", live)
	require.NoError(t, err)
	defer l.Close()
	file := filepath.Join(sockDir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))

	assert.Equal(t, 1, removeDeadShimSockets(dir), "sockets removed")
	assert.NoFileExists(t, killed, "a socket made since the cluster was set up that nobody listens on")
	assert.FileExists(t, older, "a socket older than the cluster")
	assert.FileExists(t, live, "a socket a process listens on")
	assert.FileExists(t, file, "a file that is not a socket")
	assert.Equal(t, 0, removeDeadShimSockets(t.TempDir()), "sockets removed for a folder that holds no cluster")
}
