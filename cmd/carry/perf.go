package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/kube-carry/kube-carry/internal/perf"
)

// cmdPerfRun runs one scheduler_perf benchmark process and appends its
// benchmark lines, from its data items, to the results file
// (internal/perf).
func cmdPerfRun(args []string) error {
	fs := flag.NewFlagSet("perf-run", flag.ContinueOnError)
	dir := fs.String("dir", ".", "the directory the benchmark runs in")
	items := fs.String("items", "", "the benchmark's -data-items-dir")
	logFile := fs.String("log", "", "the file the benchmark's output is appended to")
	results := fs.String("results", "", "the file the benchmark lines are appended to")
	key := fs.String("key", "", "one more level for every benchmark name (tree=fork)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *items == "" || *logFile == "" || *results == "" || fs.NArg() == 0 {
		return fmt.Errorf("usage: carry perf-run -items DIR -log FILE -results FILE [-dir DIR] [-key K=V] -- COMMAND [ARGS]")
	}
	logW, err := os.OpenFile(*logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logW.Close()
	res, err := perf.Execute(perf.Run{Dir: *dir, Args: fs.Args(), ItemsDir: *items, Log: logW, Key: *key})
	if err != nil {
		return fmt.Errorf("%w (log: %s)", err, *logFile)
	}
	for _, m := range res.Misses {
		fmt.Printf("perf: threshold missed: %s\n", m)
	}
	fmt.Printf("perf: peak RSS %.2f GiB\n", float64(res.MaxRSS)/(1<<30))
	out, err := os.OpenFile(*results, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, strings.Join(res.Lines, "\n")); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// cmdPerfPairs prints the ratios of each value of a key to its base in a
// results file of make perf or make perf-upstream, paired by round
// (internal/perf).
func cmdPerfPairs(args []string) error {
	fs := flag.NewFlagSet("perf-pairs", flag.ContinueOnError)
	key := fs.String("key", "tree", "the level of the benchmark names whose values are compared")
	base := fs.String("base", "plain", "the value of the key the others are compared with")
	unitsFlag := fs.String("units", perf.DefaultPairUnits, "a regular expression of the units to compare")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: carry perf-pairs [-key K] [-base V] [-units RE] RESULTS")
	}
	units, err := regexp.Compile(*unitsFlag)
	if err != nil {
		return fmt.Errorf("-units: %w", err)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	pairs, err := perf.Pairs(f, fs.Arg(0), *key, *base, units)
	if err != nil {
		return err
	}
	return perf.FormatPairs(os.Stdout, *key, *base, pairs)
}
