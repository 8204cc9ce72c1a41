package perf

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// items is a data items file as scheduler_perf writes it (shortened).
const items = `{"version": "v1", "dataItems": [
 {"data": {"Average": 60.5, "AverageThreshold": 100, "Perc50": 53}, "unit": "pods/s",
  "labels": {"Metric": "SchedulingThroughput", "Name": "BenchmarkPerfScheduling/SchedulingCSIPVs/5000Nodes_5000Pods/namespace-2", "plugin": "not applicable", "extension_point": "not applicable"}},
 {"data": {"Average": 0.0063, "Perc50": 0.0052}, "unit": "ms",
  "labels": {"Metric": "scheduler_plugin_execution_duration_seconds", "Name": "BenchmarkPerfScheduling/SchedulingCSIPVs/5000Nodes_5000Pods/namespace-2", "plugin": "VolumeBinding", "extension_point": "Filter"}},
 {"data": {"Max": 921.7}, "unit": "MB",
  "labels": {"Metric": "heap_memory_usage", "Name": "BenchmarkPerfScheduling/SchedulingCSIPVs/5000Nodes_5000Pods/namespace-2"}}
]}`

func TestBenchLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		key    string
		maxRSS int64
		want   []string
	}{{
		name: "as scheduler_perf names its metrics, without thresholds",
		want: []string{"BenchmarkPerfScheduling/SchedulingCSIPVs/5000Nodes_5000Pods\t1\t" +
			"60.5\tSchedulingThroughput/Average\t53\tSchedulingThroughput/Perc50\t" +
			"921.7\theap_memory_usage/Max\t" +
			"0.0063\tscheduler_plugin_execution_duration_ms_VolumeBinding_Filter/Average\t" +
			"0.0052\tscheduler_plugin_execution_duration_ms_VolumeBinding_Filter/Perc50"},
	}, {
		name:   "with a key level and the peak RSS",
		key:    "tree=fork",
		maxRSS: 2 << 30,
		want: []string{"BenchmarkPerfScheduling/SchedulingCSIPVs/5000Nodes_5000Pods/tree=fork\t1\t" +
			"60.5\tSchedulingThroughput/Average\t53\tSchedulingThroughput/Perc50\t" +
			"921.7\theap_memory_usage/Max\t" +
			"0.0063\tscheduler_plugin_execution_duration_ms_VolumeBinding_Filter/Average\t" +
			"0.0052\tscheduler_plugin_execution_duration_ms_VolumeBinding_Filter/Perc50\t" +
			"2147483648\tmax-rss-B"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "BenchmarkPerfScheduling_benchmark_volumes_x.json")
			if err := os.WriteFile(f, []byte(items), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := benchLines(f, tc.key, tc.maxRSS)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("benchLines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBenchLinesBadInput(t *testing.T) {
	for name, content := range map[string]string{
		"not JSON":       "BenchmarkPerfScheduling 1 2 ns/op",
		"no data items":  `{"version": "v1", "dataItems": []}`,
		"no Name label":  `{"version": "v1", "dataItems": [{"data": {"Average": 1}, "unit": "pods/s", "labels": {"Metric": "SchedulingThroughput"}}]}`,
		"no Metric name": `{"version": "v1", "dataItems": [{"data": {"Average": 1}, "unit": "pods/s", "labels": {"Name": "BenchmarkPerfScheduling/a/b/c"}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "BenchmarkPerfScheduling_x.json")
			if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if lines, err := benchLines(f, "", 0); err == nil {
				t.Errorf("benchLines of %s = %q, want an error", name, lines)
			}
		})
	}
}

// The test binary is the benchmark process of TestExecute: with
// PERF_TEST_HELPER set it acts as scheduler_perf would.
func TestMain(m *testing.M) {
	if mode := os.Getenv("PERF_TEST_HELPER"); mode != "" {
		os.Exit(helper(mode, os.Getenv("PERF_TEST_ITEMS")))
	}
	os.Exit(m.Run())
}

// ballast keeps the helper's allocation alive.
var ballast []byte

// missed is scheduler_perf's output for a threshold missed.
const missed = "    executor.go:682: ERROR:\n" +
	`        	op 2: BenchmarkPerfScheduling/SchedulingCSIPVs/5000Nodes_5000Pods/namespace-2: expected "SchedulingThroughput" "Average" to be higher: got 60.329485, want 100.000000`

func helper(mode, dir string) int {
	write := func() {
		f := filepath.Join(dir, fmt.Sprintf("BenchmarkPerfScheduling_benchmark_volumes_%d.json", time.Now().UnixNano()))
		if err := os.WriteFile(f, []byte(items), 0o644); err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
	}
	switch mode {
	case "pass":
		// Touch 256 MiB, so that the peak RSS has something to show.
		ballast = make([]byte, 256<<20)
		for i := range ballast {
			ballast[i] = 1
		}
		write()
		return 0
	case "threshold":
		write()
		fmt.Println(missed)
		fmt.Println("--- FAIL: BenchmarkPerfScheduling")
		return 1
	case "threshold-and-more":
		write()
		fmt.Println(missed)
		fmt.Println("    executor.go:1005: ERROR:")
		fmt.Println("        	op 3: pods did not schedule")
		return 1
	case "fail":
		write()
		fmt.Println("    scheduler_perf.go:851: Error running workload 5000Nodes_5000Pods: boom")
		return 1
	case "no-items":
		return 0
	}
	return 2
}

func TestExecute(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode       string
		wantErr    string
		wantMisses int
		wantRSS    int64
	}{
		{mode: "pass", wantRSS: 256 << 20},
		{mode: "threshold", wantMisses: 1},
		{mode: "threshold-and-more", wantErr: "not only by missing a threshold (2 errors, 1 thresholds missed)"},
		{mode: "fail", wantErr: "not only by missing a threshold (0 errors, 0 thresholds missed)"},
		{mode: "no-items", wantErr: "wrote no data items"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("PERF_TEST_HELPER", tc.mode)
			t.Setenv("PERF_TEST_ITEMS", dir)
			var log strings.Builder
			res, err := Execute(Run{Dir: dir, Args: []string{self}, ItemsDir: dir, Log: &log, Key: "tree=fork"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Execute: error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Execute: %v (output: %s)", err, log.String())
			}
			if len(res.Misses) != tc.wantMisses {
				t.Errorf("Execute: misses %q, want %d", res.Misses, tc.wantMisses)
			}
			if res.MaxRSS < tc.wantRSS || res.MaxRSS <= 0 {
				t.Errorf("Execute: peak RSS %d bytes, want at least %d", res.MaxRSS, tc.wantRSS)
			}
			if len(res.Lines) != 1 || !strings.HasPrefix(res.Lines[0], "BenchmarkPerfScheduling/SchedulingCSIPVs/5000Nodes_5000Pods/tree=fork\t1\t") ||
				!strings.HasSuffix(res.Lines[0], fmt.Sprintf("\t%d\tmax-rss-B", res.MaxRSS)) {
				t.Errorf("Execute: lines %q, want one line of the workload with the key and the peak RSS", res.Lines)
			}
		})
	}
}

func TestExecuteOnlyReadsNewItems(t *testing.T) {
	dir := t.TempDir()
	// A data items file of an earlier run is not this run's.
	if err := os.WriteFile(filepath.Join(dir, "BenchmarkPerfScheduling_benchmark_volumes_old.json"), []byte(items), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PERF_TEST_HELPER", "no-items")
	t.Setenv("PERF_TEST_ITEMS", dir)
	if _, err := Execute(Run{Dir: dir, Args: []string{self}, ItemsDir: dir}); err == nil || !strings.Contains(err.Error(), "wrote no data items") {
		t.Errorf("Execute with only an earlier run's data items: error %v, want \"wrote no data items\"", err)
	}
}
