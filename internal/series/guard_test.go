package series_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/series"
)

func TestParseGuard(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    series.Guard
		wantErr string
	}{
		{
			name:  "a mutant and the test that kills it are parsed",
			value: `mutants/nodetree-cursors.patch ./pkg/scheduler/backend/cache -run '^TestSnapshotZones$'`,
			want: series.Guard{Mutant: "mutants/nodetree-cursors.patch", Test: series.GoTest{
				Package: "./pkg/scheduler/backend/cache",
				Flags:   []string{"-run", "^TestSnapshotZones$"},
				Raw:     `./pkg/scheduler/backend/cache -run '^TestSnapshotZones$'`,
				Line:    11,
			}, Line: 11},
		},
		{
			name:    "a mutant outside mutants/ is rejected",
			value:   `tests/mutants/x.patch ./pkg/a -run X`,
			wantErr: `"tests/mutants/x.patch ./pkg/a -run X": want`,
		},
		{
			name:    "a guard without a test is rejected",
			value:   `mutants/x.patch`,
			wantErr: "empty test command",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := series.ParsePatch("g.patch", guardPatch(tc.value))
			var got series.Guard
			if err == nil {
				require.Len(t, p.Guards, 1)
				got = p.Guards[0]
			}
			if tc.wantErr != "" {
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func guardPatch(guard string) []byte {
	return []byte(`From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: kube-carry <kube-carry@invalid>
Date: Sun, 22 Nov 2026 00:00:00 +0000
Subject: scheduler: guard tests

Guard tests for fixes upstream already has.

Upstream-Status: Inappropriate [fork guard tests]
Bug: seed 001 (snapshot drops nodes)
Test: ./pkg/scheduler/backend/cache -run '^TestSnapshotZones$'
Guards: ` + guard + `
Regression: none (test-only)

diff --git a/pkg/a_test.go b/pkg/a_test.go
index 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111 100644
--- a/pkg/a_test.go
+++ b/pkg/a_test.go
@@ -1 +1 @@
-a
+b
`)
}

func TestParseRegressionWithout(t *testing.T) {
	data := []byte(strings.Replace(string(guardPatch("mutants/x.patch ./pkg/a -run A")),
		"Regression: none (test-only)",
		"Regression: ./test/integration/localdynamic -run '^TestS1$' (without volumebinding-count-selected-node-reservations.patch)", 1))
	p, err := series.ParsePatch("g.patch", data)
	require.NoError(t, err)
	require.Len(t, p.Regressions, 1)
	got := p.Regressions[0]
	require.Equal(t, "./test/integration/localdynamic", got.Package)
	require.Equal(t, []string{"-run", "^TestS1$"}, got.Flags)
	require.Equal(t, "volumebinding-count-selected-node-reservations.patch", got.Without)
}
