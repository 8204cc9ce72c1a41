package harness

import (
	"strings"
	"sync"

	"github.com/kube-carry/kube-carry/internal/gotest"
)

// Once runs each distinct test command in a directory once. The harness
// runs the Test:, Regression: (with the fix) and guard commands of every
// patch on the patched tree, which nothing changes while it runs: the same
// command there has the same result, so it need not run again. (Eleven
// patches of each line name the volumebinding plugin's TestLocalDynamic
// tests; each of those runs took 13 s in a line proof.)
type Once struct {
	mu   sync.Mutex
	runs map[string]*Run
}

// Run is what one command gave: its result, its full log and the check
// that ran it.
type Run struct {
	Result *gotest.Result
	Log    string
	// By names the check that ran the command, as the caller gave it.
	By string
}

// Do returns the Run of args in dir. run is called for the first Do of a
// command; later ones return that Run with again set. An error is not
// kept: the next Do of the command runs it.
func (o *Once) Do(dir string, args []string, by string, run func() (*gotest.Result, string, error)) (r *Run, again bool, err error) {
	key := dir + "\x00" + strings.Join(args, "\x00")
	o.mu.Lock()
	defer o.mu.Unlock()
	if r, ok := o.runs[key]; ok {
		return r, true, nil
	}
	res, log, err := run()
	if err != nil {
		return nil, false, err
	}
	if o.runs == nil {
		o.runs = map[string]*Run{}
	}
	r = &Run{Result: res, Log: log, By: by}
	o.runs[key] = r
	return r, false, nil
}
