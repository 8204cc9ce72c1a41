package harness_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kube-carry/kube-carry/internal/harness"
	"github.com/kube-carry/kube-carry/internal/series"
)

// TestBatches: the commands of a package that differ only in -run share
// one run whose pattern is any of theirs, and each keeps its own tests;
// the others run alone, as written.
func TestBatches(t *testing.T) {
	gt := func(pkg string, flags ...string) series.GoTest {
		return series.GoTest{Package: pkg, Flags: flags}
	}
	tests := []series.GoTest{
		0: gt("./a", "-run", "^TestX$"),
		1: gt("./a", "-run=^TestY"),
		2: gt("./b", "-run", "^TestX$"),
		3: gt("./a", "-run", "^TestX$", "-count=2"),
		4: gt("./a", "-run", "^TestZ$/sub"),
		5: gt("./a"),
		6: gt("./a", "-run", "^TestX$"),
		7: gt("./a", "-run", "("),
	}
	b := harness.Batches(tests)
	assert.Same(t, b[0], b[1], "./a's plain -run commands share a run")
	assert.Same(t, b[0], b[6])
	assert.Equal(t, []string{"-run", "(?:^TestX$)|(?:^TestY)"}, b[0].Test.Flags, "one pattern per distinct pattern")
	assert.Equal(t, "./a", b[0].Test.Package)
	for i, want := range map[int]string{2: "./b", 3: "./a", 4: "./a", 5: "./a", 7: "./a"} {
		assert.NotSame(t, b[0], b[i], "command %d", i)
		assert.Equal(t, tests[i], b[i].Test, "command %d runs as written", i)
		assert.True(t, b[i].Match(i)("TestAnything"), "a command alone keeps every test of its run")
		assert.Equal(t, want, b[i].Test.Package)
	}

	for _, tc := range []struct {
		cmd  int
		test string
		want bool
	}{
		{0, "TestX", true},
		{0, "TestXY", false},
		{0, "TestYes", false},
		{1, "TestYes", true},
		{1, "TestX", false},
		{6, "TestX", true},
	} {
		assert.Equal(t, tc.want, b[tc.cmd].Match(tc.cmd)(tc.test), "command %d, test %s", tc.cmd, tc.test)
	}
}
