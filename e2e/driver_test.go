package e2e

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/stretchr/testify/require"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// startDriver deploys the CSI driver as an operator would: the CSIDriver
// object (no attach: a node-local volume is published where it is), the
// controller with the admin's credentials, a node plugin per node with the
// node's, and waits until every node's kubelet has registered the plugin
// and every node advertises its pools.
func (e *env) startDriver() {
	t := e.t
	_, err := e.cs.StorageV1().CSIDrivers().Create(e.ctx, &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: e.names.Driver},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       ptr.To(false),
			PodInfoOnMount:       ptr.To(false),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
			StorageCapacity:      ptr.To(e.capacitySource == sourceCSIStorageCapacity),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	args := []string{"--mode=controller", "--driver-name=" + e.names.Driver, "--kubeconfig=" + e.st.Kubeconfig,
		"--provision-latency=" + e.latency.String(), "--endpoint=" + filepath.Join(e.st.Dir, "csi-local", "controller.sock"), "--v=2"}
	if e.capacitySource == sourceCSIStorageCapacity {
		args = append(args, "--enable-capacity", "--capacity-poll-interval="+capacityPollInterval.String())
	}
	_, err = e.st.Run("csi-local-controller", "", driverBin, args...)
	require.NoError(t, err)
	for _, n := range e.st.Nodes {
		dir := filepath.Join(e.st.NodeDir(n), "csi-local")
		_, err := e.st.Run("csi-local", n, driverBin, "--mode=node", "--driver-name="+e.names.Driver, "--node-name="+n, "--pools="+e.pools,
			"--kubeconfig="+e.st.NodeKubeconfig(n), "--endpoint="+filepath.Join(dir, "csi.sock"),
			"--data-dir="+filepath.Join(dir, "volumes"),
			"--kubelet-registration-dir="+filepath.Join(e.st.KubeletRoot(n), "plugins_registry"), "--v=2")
		require.NoError(t, err)
	}
	for _, n := range e.st.Nodes {
		e.waitFor(time.Minute, "node "+n+" registers the CSI driver and advertises its pools", func() (bool, string) {
			cn, err := e.cs.StorageV1().CSINodes().Get(e.ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			registered := false
			for _, d := range cn.Spec.Drivers {
				registered = registered || d.Name == e.names.Driver
			}
			node, err := e.cs.CoreV1().Nodes().Get(e.ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			ann := node.Annotations[e.names.PoolsAnnotation()]
			return registered && ann != "", "registered " + boolStr(registered) + ", annotation " + ann
		})
	}
}

func boolStr(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// waitFor polls cond until it holds, timeout passes or the scenario's
// context ends (its timeout, an interrupt); the last state it reports is
// in the failure.
func (e *env) waitFor(timeout time.Duration, what string, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		if err := e.ctx.Err(); err != nil {
			e.t.Fatalf("%s: %v: %s", what, err, strings.TrimSpace(last))
		}
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(250 * time.Millisecond)
	}
	e.t.Fatalf("%s: not after %s: %s", what, timeout, strings.TrimSpace(last))
}
