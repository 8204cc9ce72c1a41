package perf

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestPairs(t *testing.T) {
	units := regexp.MustCompile(DefaultPairUnits)
	const name = "BenchmarkPerfScheduling/SchedulingCSIPVs/5000Nodes_5000Pods"
	line := func(tree string, throughput float64) string {
		return name + "/tree=" + tree + "\t1\t" + strconv.FormatFloat(throughput, 'g', -1, 64) +
			"\tSchedulingThroughput/Average\t7\tother/Unit\n"
	}
	for _, tc := range []struct {
		name    string
		results string
		key     string
		base    string
		want    []Pair
		wantErr string
	}{{
		// Two rounds, 0.9 and 1.1: the geometric mean is sqrt(0.99),
		// and with one degree of freedom t(0.975) is 12.7062 and the
		// two-sided p of t is 1 - 2 atan(|t|)/pi.
		name:    "the ratios of the rounds, their interval and the paired test",
		results: "goos: linux\n" + line("fork", 90) + line("plain", 100) + line("plain", 100) + line("fork", 110),
		key:     "tree", base: "plain",
		want: []Pair{{Benchmark: name, Unit: "SchedulingThroughput/Average", Value: "fork", N: 2,
			Ratio: math.Sqrt(0.99),
			Low:   math.Exp(-0.005025 - 12.7062*0.200671/2), High: math.Exp(-0.005025 + 12.7062*0.200671/2),
			P: 1 - 2*math.Atan(0.005025/(0.200671/2))/math.Pi}},
	}, {
		// The machine ran twice as fast in the second round: unpaired,
		// the runs spread by 2x; paired, every round has the same ratio.
		name:    "drift between rounds cancels within a round",
		results: line("fork", 50) + line("plain", 52) + line("plain", 104) + line("fork", 100),
		key:     "tree", base: "plain",
		want: []Pair{{Benchmark: name, Unit: "SchedulingThroughput/Average", Value: "fork", N: 2,
			Ratio: 50.0 / 52, Low: 50.0 / 52, High: 50.0 / 52, P: math.NaN()}},
	}, {
		name: "a value with fewer runs than the base",
		results: strings.ReplaceAll(line("plain", 50)+line("zz", 25)+line("aa", 100), "/tree=", "/variant=") +
			strings.ReplaceAll(line("plain", 50), "/tree=", "/variant="),
		key: "variant", base: "plain",
		wantErr: "1 runs with variant=aa and 2 with variant=plain: runs pair by round",
	}, {
		name: "every other value of the key against the base, in name order",
		results: strings.ReplaceAll(line("plain", 50)+line("zz", 25)+line("aa", 100), "/tree=", "/variant=") +
			strings.ReplaceAll(line("aa", 100)+line("zz", 25)+line("plain", 50), "/tree=", "/variant="),
		key: "variant", base: "plain",
		want: []Pair{
			{Benchmark: name, Unit: "SchedulingThroughput/Average", Value: "aa", N: 2, Ratio: 2, Low: 2, High: 2, P: math.NaN()},
			{Benchmark: name, Unit: "SchedulingThroughput/Average", Value: "zz", N: 2, Ratio: 0.5, Low: 0.5, High: 0.5, P: math.NaN()},
		},
	}, {
		name:    "a value that is not positive has no ratio",
		results: line("fork", 0) + line("plain", 100),
		key:     "tree", base: "plain",
		want: []Pair{{Benchmark: name, Unit: "SchedulingThroughput/Average", Value: "fork", N: 1,
			Ratio: math.NaN(), Low: math.NaN(), High: math.NaN(), P: math.NaN()}},
	}, {
		name:    "no base",
		results: line("fork", 90),
		key:     "tree", base: "plain",
		wantErr: name + " has no runs with tree=plain to compare with",
	}, {
		name:    "no such key",
		results: line("fork", 90) + line("plain", 90),
		key:     "variant", base: "plain",
		wantErr: "no benchmark has a level variant=",
	}, {
		name:    "not benchstat's format",
		results: name + "/tree=fork\t1\tninety\tpods/s\n",
		key:     "tree", base: "plain",
		wantErr: "results.txt:1:",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Pairs(strings.NewReader(tc.results), "results.txt", tc.key, tc.base, units)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d pairs %+v, want %d", len(got), got, len(tc.want))
			}
			for i, want := range tc.want {
				g := got[i]
				if g.Benchmark != want.Benchmark || g.Unit != want.Unit || g.Value != want.Value || g.N != want.N {
					t.Errorf("pair %d: got %+v, want %+v", i, g, want)
				}
				for _, f := range []struct {
					name      string
					got, want float64
				}{{"ratio", g.Ratio, want.Ratio}, {"low", g.Low, want.Low}, {"high", g.High, want.High}, {"p", g.P, want.P}} {
					if math.IsNaN(f.want) != math.IsNaN(f.got) || !math.IsNaN(f.want) && math.Abs(f.got-f.want) > 1e-3*math.Abs(f.want) {
						t.Errorf("pair %d: %s %v, want %v", i, f.name, f.got, f.want)
					}
				}
			}
		})
	}
}

func TestFormatPairs(t *testing.T) {
	var b bytes.Buffer
	err := FormatPairs(&b, "tree", "plain", []Pair{
		{Benchmark: "B", Unit: "pods/s", Value: "fork", N: 8, Ratio: 0.9951, Low: 0.9162, High: 1.0809, P: 0.9},
		{Benchmark: "B", Unit: "max-rss-B", Value: "fork", N: 1, Ratio: 1.005, Low: 1.005, High: 1.005, P: math.NaN()},
		{Benchmark: "B", Unit: "x", Value: "fork", N: 1, Ratio: math.NaN(), Low: math.NaN(), High: math.NaN(), P: math.NaN()},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `benchmark  unit       tree  rounds  tree/plain  95% interval  p (paired)
B          pods/s     fork  8       0.995       0.916–1.081   0.900
B          max-rss-B  fork  1       1.005       -             -
B          x          fork  1       -           -             -
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
