package openbao

import (
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The pages are OpenBao 2.4.0's own, read from a follower and a leader of a
// three-member Raft cluster on loopback.
func TestParseReplication(t *testing.T) {
	cases := []struct {
		name string
		page func(*testing.T) string
		want uint64
		err  string
	}{
		{name: "a follower the leader replicates to", page: testdata("metrics-follower.txt"), want: 1400},
		{name: "a leader handles no AppendEntries", page: testdata("metrics-leader.txt"), want: 0},
		{name: "an empty page: nothing since the process started", page: literal(""), want: 0},
		{name: "two series are added", page: literal("# TYPE vault_raft_rpc_appendEntries summary\n" +
			"vault_raft_rpc_appendEntries_count{a=\"1\"} 2\nvault_raft_rpc_appendEntries_sum{a=\"1\"} 1\n" +
			"vault_raft_rpc_appendEntries_count{a=\"2\"} 3\nvault_raft_rpc_appendEntries_sum{a=\"2\"} 1\n"), want: 5},
		{name: "another metrics prefix", page: literal("# TYPE openbao_raft_rpc_appendEntries summary\n" +
			"openbao_raft_rpc_appendEntries_count 7\nopenbao_raft_rpc_appendEntries_sum 1\n" +
			"# TYPE openbao_raft_rpc_appendEntries_storeLogs summary\n" +
			"openbao_raft_rpc_appendEntries_storeLogs_count 3\nopenbao_raft_rpc_appendEntries_storeLogs_sum 1\n"), want: 7},
		{name: "not a metrics page", page: literal("{\"errors\":[]}\n"), err: "not in the Prometheus text format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseReplication(strings.NewReader(tc.page(t)))
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.AppendEntries).To(Equal(tc.want))
		})
	}
}

func testdata(name string) func(*testing.T) string {
	return func(t *testing.T) string {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

func literal(s string) func(*testing.T) string { return func(*testing.T) string { return s } }

func TestReplicationReadsTheMembersOwnMetricsWithoutAToken(t *testing.T) {
	g := NewWithT(t)
	service, member := newFakeBao(t), newFakeBao(t)
	c, _, _ := newTestClient(t, service, nil)

	got, err := c.MemberReplication(t.Context(), member.srv.URL)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.AppendEntries).To(BeEquivalentTo(42))
	g.Expect(member.requestCount(pathMetrics)).To(Equal(1))
	g.Expect(service.requestCount(pathMetrics)).To(Equal(0), "the member's own metrics, not the Service's")
	g.Expect(member.tokens(pathMetrics)).To(Equal([]string{""}), "no token")

	member.set(func(b *fakeBao) { b.failStatus[pathMetrics] = 503 })
	_, err = c.MemberReplication(t.Context(), member.srv.URL)
	g.Expect(err).To(MatchError(ContainSubstring("failed to read the Raft metrics of " + member.srv.URL)))
}
