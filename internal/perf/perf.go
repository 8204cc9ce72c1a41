// Package perf runs one scheduler_perf benchmark process for make perf and
// make perf-upstream and turns what it measured into benchstat's format.
//
// scheduler_perf reports a run twice: as the benchmark's result line, and
// as data items, a JSON file in -data-items-dir. The result line is only
// printed when the benchmark passes, and upstream's workloads at 5000
// nodes fail on a small machine by design: each has a throughput threshold
// (SchedulingCSIPVs/5000Nodes_5000Pods wants 100 pods/s) set on upstream's
// CI machines. So a run is read from its data items, a threshold missed is
// reported rather than fatal, and any other failure stops the measurement.
//
// Each run also gets the peak resident set size of the benchmark process
// (the in-process kube-apiserver and scheduler; etcd is a process of its
// own), which scheduler_perf does not measure: it samples the Go heap.
package perf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Run describes one benchmark process.
type Run struct {
	// Dir is the directory the process runs in (scheduler_perf finds its
	// workloads' templates relative to it).
	Dir string
	// Args is the command line: the test binary and its flags.
	Args []string
	// ItemsDir is the test binary's -data-items-dir.
	ItemsDir string
	// Log receives the process's output.
	Log io.Writer
	// Key, when not empty, is added to every benchmark name as one more
	// level (tree=fork), so benchstat -col /tree compares the trees.
	Key string
}

// Result is what one run measured.
type Result struct {
	// Lines are the benchmark lines, one per workload the process ran.
	Lines []string
	// Misses are the thresholds the process reported missed.
	Misses []string
	// MaxRSS is the process's peak resident set size in bytes.
	MaxRSS int64
}

// thresholdMiss is scheduler_perf's error for a measured value on the wrong
// side of a workload's threshold (applyThreshold).
var thresholdMiss = regexp.MustCompile(`expected "[^"]+" "[^"]+" to be (higher|lower): got [0-9.e+-]+, want [0-9.e+-]+`)

// errorMark is how a test's Errorf starts in scheduler_perf's output.
var errorMark = regexp.MustCompile(`(?m)\bERROR:\s*$`)

// Execute runs r's process and reads its data items. A process that fails
// only because it missed thresholds is a measurement; one that fails
// otherwise, or writes no data items, is an error.
func Execute(r Run) (Result, error) {
	if len(r.Args) == 0 {
		return Result{}, errors.New("no command")
	}
	before, err := itemFiles(r.ItemsDir)
	if err != nil {
		return Result{}, err
	}
	var out strings.Builder
	cmd := exec.Command(r.Args[0], r.Args[1:]...)
	cmd.Dir = r.Dir
	w := io.Writer(&out)
	if r.Log != nil {
		w = io.MultiWriter(&out, r.Log)
	}
	cmd.Stdout, cmd.Stderr = w, w
	runErr := cmd.Run()
	var res Result
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			// Linux reports ru_maxrss in KiB.
			res.MaxRSS = ru.Maxrss * 1024
		}
	}
	if runErr != nil {
		var exit *exec.ExitError
		if !errors.As(runErr, &exit) {
			return res, fmt.Errorf("%s: %w", r.Args[0], runErr)
		}
		res.Misses = thresholdMiss.FindAllString(out.String(), -1)
		errs := len(errorMark.FindAllString(out.String(), -1))
		if len(res.Misses) == 0 || errs != len(res.Misses) {
			return res, fmt.Errorf("%s failed (%v), and not only by missing a threshold (%d errors, %d thresholds missed)", filepath.Base(r.Args[0]), runErr, errs, len(res.Misses))
		}
	}
	after, err := itemFiles(r.ItemsDir)
	if err != nil {
		return res, err
	}
	var files []string
	for f := range after {
		if !before[f] {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return res, fmt.Errorf("%s wrote no data items to %s", filepath.Base(r.Args[0]), r.ItemsDir)
	}
	for _, f := range files {
		lines, err := benchLines(f, r.Key, res.MaxRSS)
		if err != nil {
			return res, err
		}
		res.Lines = append(res.Lines, lines...)
	}
	return res, nil
}

// itemFiles lists the data items files in dir.
func itemFiles(dir string) (map[string]bool, error) {
	names, err := filepath.Glob(filepath.Join(dir, "BenchmarkPerfScheduling_*.json"))
	if err != nil {
		return nil, err
	}
	files := map[string]bool{}
	for _, n := range names {
		files[n] = true
	}
	return files, nil
}

// dataItems is scheduler_perf's data items file (its DataItems type).
type dataItems struct {
	Version   string `json:"version"`
	DataItems []struct {
		Data   map[string]float64 `json:"data"`
		Unit   string             `json:"unit"`
		Labels map[string]string  `json:"labels"`
	} `json:"dataItems"`
}

// benchLines turns a data items file into benchmark lines: one per
// workload, named as scheduler_perf names its benchmarks, with each item's
// values as metrics named as scheduler_perf reports them (a duration's
// "_seconds" becomes its unit; a plugin's or extension point's item also
// names them), and the process's peak RSS as max-rss-B.
func benchLines(file, key string, maxRSS int64) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var items dataItems
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	metrics := map[string]map[string]float64{}
	var names []string
	for _, item := range items.DataItems {
		name := item.Labels["Name"]
		metric := item.Labels["Metric"]
		if name == "" || metric == "" {
			return nil, fmt.Errorf("%s: a data item without Name or Metric label", file)
		}
		// Name is the workload's benchmark name and the namespace of
		// the measured pods.
		if i := strings.LastIndex(name, "/"); i > 0 {
			name = name[:i]
		}
		if key != "" {
			name += "/" + key
		}
		if metrics[name] == nil {
			metrics[name] = map[string]float64{}
			names = append(names, name)
		}
		metric = strings.ReplaceAll(metric, "_seconds", "_"+item.Unit)
		for _, l := range []string{"plugin", "extension_point"} {
			if v := item.Labels[l]; v != "" && v != "not applicable" {
				metric += "_" + v
			}
		}
		for k, v := range item.Data {
			if strings.HasSuffix(k, "Threshold") || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			metrics[name][metric+"/"+k] = v
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no data items", file)
	}
	var lines []string
	for _, name := range names {
		units := make([]string, 0, len(metrics[name]))
		for u := range metrics[name] {
			units = append(units, u)
		}
		sort.Strings(units)
		fields := []string{name, "1"}
		for _, u := range units {
			fields = append(fields, strconv.FormatFloat(metrics[name][u], 'g', 6, 64), u)
		}
		if maxRSS > 0 {
			fields = append(fields, strconv.FormatInt(maxRSS, 10), "max-rss-B")
		}
		lines = append(lines, strings.Join(fields, "\t"))
	}
	return lines, nil
}
