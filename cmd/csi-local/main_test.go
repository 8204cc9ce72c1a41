package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunFlags: wrong flags fail before the driver starts.
func TestRunFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.conf")
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--mode=nodes"}, `unknown mode "nodes"`},
		{[]string{"--mode=controller", "--pools=a=1Gi"}, "--pools is for --mode=node"},
		{[]string{"--mode=node", "--node-name=n", "--pools=a"}, "--pools: pool \"a\": want name=size"},
		{[]string{"--mode=node", "--node-name=n", "--pools=a=-1Gi"}, "negative capacity"},
		{[]string{"--mode=controller", "extra"}, "unexpected arguments"},
		{[]string{"--mode=node", "--node-name=n", "--enable-capacity"}, "--enable-capacity is for --mode=controller"},
		{[]string{"--mode=controller", "--enable-capacity", "--capacity-poll-interval=0s"}, "positive --capacity-poll-interval"},
		{[]string{"--mode=controller", "--enable-capacity", "--capacity-namespace="}, "needs a --capacity-namespace"},
		{[]string{"--mode=controller", "--driver-name=kubernetes.io/csi.local"}, "--driver-name: \"kubernetes.io/csi.local\" is not a CSI driver name"},
		{[]string{"--no-such-flag"}, "flag provided but not defined"},
		{[]string{"--mode=controller", "--kubeconfig=" + missing}, "kubeconfig"},
	} {
		err := run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("run(%q) = %v; want error containing %q", tc.args, err, tc.wantErr)
		}
	}
}
