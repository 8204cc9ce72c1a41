// Command out-of-tree-scheduler is kube-scheduler with one out-of-tree
// plugin, PreFilterCount, built against a kube-carry line's patched tree:
// the scheduler framework, its in-tree plugins (the fork's VolumeBinding
// with the local-dynamic capacity check among them) and the plugin below.
// See README.md for how to build it.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version" // for version metric registration
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"example.com/out-of-tree-scheduler/prefiltercount"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(prefiltercount.Name, prefiltercount.New),
	)
	os.Exit(cli.Run(command))
}
