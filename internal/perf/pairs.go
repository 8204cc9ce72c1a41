package perf

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchfmt"
)

// Pair compares the runs of one value of a key (tree=fork) with those of
// the key's base value (tree=plain) in one benchmark and unit.
//
// make perf and make perf-upstream run every value of the key once per
// round, taking turns, so the i-th run of each value is in the i-th round.
// The ratio of two runs of the same round leaves out what changed between
// rounds (the machine's speed drifts by 20% in an hour on a shared VM),
// which benchstat's unpaired test counts as spread: pairing by round finds
// smaller differences with the same runs.
type Pair struct {
	// Benchmark is the benchmark's name without the key's level.
	Benchmark string
	Unit      string
	// Value is the key's value compared with the base.
	Value string
	// N is the number of rounds.
	N int
	// Ratio is the geometric mean of value/base over the rounds, and Low
	// and High its 95% confidence interval (Student's t on the
	// logarithms); with one round they are the ratio.
	Ratio, Low, High float64
	// P is the two-sided p-value of the paired t-test on the logarithms
	// (NaN below 2 rounds or when every round has the same ratio).
	P float64
}

// DefaultPairUnits are the units Pairs compares unless told otherwise:
// throughput, VolumeBinding's PreFilter and Filter, and memory.
const DefaultPairUnits = `^(SchedulingThroughput/(Average|Perc50)|scheduler_plugin_execution_duration_ms_VolumeBinding_(PreFilter|Filter)/(Average|Perc50)|heap_memory_usage/Max|max-rss-B)$`

// Pairs reads benchmark results in benchstat's format, in the order they
// were run, and pairs the runs of each value of the key with the base
// value's runs of the same benchmark by their order. Only units that units
// matches are compared. Every benchmark with the key must have the base
// value and the same number of runs for each value.
func Pairs(r io.Reader, fileName, key, base string, units *regexp.Regexp) ([]Pair, error) {
	type group struct {
		benchmark, unit string
	}
	// runs[group][value] are the group's values in the order of the file.
	runs := map[group]map[string][]float64{}
	var groups []group
	reader := benchfmt.NewReader(r, fileName)
	for reader.Scan() {
		switch rec := reader.Result().(type) {
		case *benchfmt.SyntaxError:
			return nil, rec
		case *benchfmt.Result:
			benchmark, value, ok := splitKey("Benchmark"+string(rec.Name.Full()), key)
			if !ok {
				continue
			}
			for _, v := range rec.Values {
				if !units.MatchString(v.Unit) {
					continue
				}
				g := group{benchmark: benchmark, unit: v.Unit}
				if runs[g] == nil {
					runs[g] = map[string][]float64{}
					groups = append(groups, g)
				}
				runs[g][value] = append(runs[g][value], v.Value)
			}
		}
	}
	if err := reader.Err(); err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("%s: no benchmark has a level %s= and a unit that matches %s", fileName, key, units)
	}
	var pairs []Pair
	for _, g := range groups {
		baseRuns, ok := runs[g][base]
		if !ok {
			return nil, fmt.Errorf("%s: %s has no runs with %s=%s to compare with", fileName, g.benchmark, key, base)
		}
		values := make([]string, 0, len(runs[g]))
		for value := range runs[g] {
			if value != base {
				values = append(values, value)
			}
		}
		sort.Strings(values)
		for _, value := range values {
			if len(runs[g][value]) != len(baseRuns) {
				return nil, fmt.Errorf("%s: %s %s: %d runs with %s=%s and %d with %s=%s: runs pair by round", fileName, g.benchmark, g.unit, len(runs[g][value]), key, value, len(baseRuns), key, base)
			}
			pairs = append(pairs, pair(g.benchmark, g.unit, value, runs[g][value], baseRuns))
		}
	}
	return pairs, nil
}

// splitKey returns the name without its level key=value, and the value.
func splitKey(name, key string) (string, string, bool) {
	levels := strings.Split(name, "/")
	for i, level := range levels {
		if value, ok := strings.CutPrefix(level, key+"="); ok {
			return strings.Join(append(levels[:i:i], levels[i+1:]...), "/"), value, true
		}
	}
	return "", "", false
}

// pair compares the runs of a value with the base's, round by round. A
// unit with a value that is not positive has no ratio: its pair is NaN.
func pair(benchmark, unit, value string, runs, baseRuns []float64) Pair {
	p := Pair{Benchmark: benchmark, Unit: unit, Value: value, N: len(runs), Ratio: math.NaN(), Low: math.NaN(), High: math.NaN(), P: math.NaN()}
	logs := make([]float64, len(runs))
	for i := range runs {
		if runs[i] <= 0 || baseRuns[i] <= 0 {
			return p
		}
		logs[i] = math.Log(runs[i] / baseRuns[i])
	}
	sample := stats.Sample{Xs: logs}
	mean := sample.Mean()
	p.Ratio, p.Low, p.High = math.Exp(mean), math.Exp(mean), math.Exp(mean)
	if len(logs) < 2 {
		return p
	}
	sd := sample.StdDev()
	if sd == 0 {
		return p
	}
	half := stats.InvCDF(stats.TDist{V: float64(len(logs) - 1)})(0.975) * sd / math.Sqrt(float64(len(logs)))
	p.Low, p.High = math.Exp(mean-half), math.Exp(mean+half)
	if t, err := stats.OneSampleTTest(sample, 0, stats.LocationDiffers); err == nil {
		p.P = t.P
	}
	return p
}

// FormatPairs prints the pairs as a table, one row per benchmark, unit and
// value.
func FormatPairs(w io.Writer, key, base string, pairs []Pair) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "benchmark\tunit\t%s\trounds\t%s/%s\t95%% interval\tp (paired)\n", key, key, base)
	for _, p := range pairs {
		interval, pValue := "-", "-"
		if p.N > 1 && !math.IsNaN(p.Ratio) {
			interval = fmt.Sprintf("%.3f–%.3f", p.Low, p.High)
		}
		if !math.IsNaN(p.P) {
			pValue = fmt.Sprintf("%.3f", p.P)
		}
		ratio := "-"
		if !math.IsNaN(p.Ratio) {
			ratio = fmt.Sprintf("%.3f", p.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", p.Benchmark, p.Unit, p.Value, p.N, ratio, interval, pValue)
	}
	return tw.Flush()
}
