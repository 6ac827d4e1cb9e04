package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

const (
	testExecutorSubject   = "system:serviceaccount:ns:bao-executor"
	testControllerSubject = "system:serviceaccount:baokeeper-system:baokeeper"
	testAudience          = "openbao.baokeeper.dev/ns/bao"
)

func rebindArgs(members []string, extra ...string) []string {
	return append([]string{
		snapshot.ActionRebind,
		"--members", strings.Join(members, ","), "--ca-file", "/ca.crt", "--token-file", "/token",
		"--executor-subject", testExecutorSubject, "--controller-subject", testControllerSubject, "--audience", testAudience,
	}, extra...)
}

func TestParseRebindFlags(t *testing.T) {
	valid := rebindArgs(testMembers[:1])[1:]
	tests := []struct {
		reason  string
		args    []string
		wantErr string
	}{
		{reason: "all flags given", args: valid},
		{reason: "everything missing is named, sorted", args: nil,
			wantErr: "missing --audience, --ca-file, --controller-subject, --executor-subject, --members, --token-file"},
		{reason: "a subject that is no service account's", args: append(slices.Clone(valid), "--executor-subject", "bao-executor"),
			wantErr: `--executor-subject "bao-executor" is not a service account's subject: give system:serviceaccount:NAMESPACE:NAME`},
		{reason: "a subject without a name", args: append(slices.Clone(valid), "--controller-subject", "system:serviceaccount:ns:"),
			wantErr: "--controller-subject"},
		{reason: "a subject with a name of two parts", args: append(slices.Clone(valid), "--controller-subject", "system:serviceaccount:ns:a:b"),
			wantErr: "--controller-subject"},
		{reason: "a negative timeout", args: append(slices.Clone(valid), "--timeout", "-1s"), wantErr: "--timeout -1s must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			f, err := parseRebindFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)), tt.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(f.timeout).To(Equal(2 * time.Minute))
			g.Expect(f.terminationLog).To(Equal("/dev/termination-log"))
			g.Expect(f.executorSubject).To(Equal(testExecutorSubject))
			g.Expect(f.controllerSubject).To(Equal(testControllerSubject))
			g.Expect(f.audience).To(Equal(testAudience))
			g.Expect(f.config()).To(Equal(openbao.MemberConfig{CAFile: "/ca.crt", TokenFile: "/token", AuthMount: workload.AuthMount, Role: workload.ExecutorRole}),
				"it logs in as the executor, with the roles the snapshot holds")
		})
	}
}

func TestRunRebind(t *testing.T) {
	controllerWrite := func(addr string) roleWrite {
		return roleWrite{addr: addr, mount: workload.AuthMount, role: workload.ControllerRole,
			data: workload.ControllerRoleData(testControllerSubject, testAudience)}
	}
	executorWrite := func(addr string) roleWrite {
		return roleWrite{addr: addr, mount: workload.AuthMount, role: workload.ExecutorRole,
			data: workload.ExecutorRoleData(testExecutorSubject, testAudience)}
	}
	tests := []struct {
		reason     string
		args       []string
		bao        *fakeBao
		wantCode   int
		wantWrites []roleWrite
		wantStderr string
		// retried: the writes are retried an unknown number of times.
		retried bool
	}{
		{
			reason: "both roles are rewritten through the active node, the one it logs in with last",
			args:   rebindArgs(testMembers[:1]), bao: &fakeBao{},
			wantCode: exitOK, wantWrites: []roleWrite{controllerWrite(testMembers[0]), executorWrite(testMembers[0])},
		},
		{
			reason: "the active node is found among the members",
			args:   rebindArgs(testMembers), bao: &fakeBao{active: 1},
			wantCode: exitOK, wantWrites: []roleWrite{controllerWrite(testMembers[1]), executorWrite(testMembers[1])},
		},
		{
			reason: "a policy without update on the roles (a snapshot of an older release): fatal, saying what to do",
			args:   rebindArgs(testMembers[:1]), bao: &fakeBao{roleErrs: map[string]error{workload.ControllerRole: openbao.ErrPermissionDenied}},
			wantCode: exitFatal, wantWrites: []roleWrite{controllerWrite(testMembers[0])},
			wantStderr: "baokeeper executor rebind: fatal: the snapshot's executor policy does not allow the executor to rewrite its roles " +
				"(the source cluster was initialized by a baokeeper release before this one); restore into a cluster with the source's name instead, " +
				"or add update on auth/baokeeper-jwt/role/baokeeper-executor and auth/baokeeper-jwt/role/baokeeper-controller " +
				"to the source's executor policy before taking the snapshot: openbao: permission denied",
		},
		{
			reason: "the restored roles refuse the source's identity: fatal, and not the policy message",
			args:   rebindArgs(testMembers[:1]),
			bao: &fakeBao{roleErrs: map[string]error{workload.ControllerRole: fmt.Errorf("login: %w, %w, %w",
				openbao.ErrLoginFailed, openbao.ErrPermissionDenied, openbao.ErrBadRequest)}},
			wantCode: exitFatal, wantWrites: []roleWrite{controllerWrite(testMembers[0])},
			wantStderr: "baokeeper executor rebind: fatal: the baokeeper-executor role the snapshot holds did not accept the source cluster's executor identity",
		},
		{
			reason:   "a retryable failure that outlasts --timeout: retried, then exit 2",
			args:     rebindArgs(testMembers[:1], "--timeout", "300ms"),
			bao:      &fakeBao{roleErrs: map[string]error{workload.ExecutorRole: fmt.Errorf("sealed: %w", openbao.ErrNotActive)}},
			wantCode: exitRetryable, wantStderr: "baokeeper executor rebind: retryable failure: ", retried: true,
		},
		{
			reason: "a missing subject: fatal, nothing written",
			args:   rebindArgs(testMembers[:1], "--executor-subject", ""), bao: &fakeBao{},
			wantCode: exitFatal, wantStderr: "baokeeper executor rebind: fatal: invalid flags: missing --executor-subject",
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			code, stdout, stderr, msg, _ := runWithFakes(t, tt.args, tt.bao, &fakeStore{})
			g.Expect(code).To(Equal(tt.wantCode), "%s; stderr: %s", tt.reason, stderr)
			if tt.retried {
				g.Expect(len(tt.bao.roleWrites)).To(BeNumerically(">", 2), "%s: retried", tt.reason)
				g.Expect(tt.bao.roleWrites[:2]).To(Equal([]roleWrite{controllerWrite(testMembers[0]), executorWrite(testMembers[0])}))
			} else {
				g.Expect(tt.bao.roleWrites).To(Equal(tt.wantWrites), tt.reason)
			}
			if tt.wantCode != exitOK {
				g.Expect(stdout).To(BeEmpty())
				g.Expect(stderr).To(ContainSubstring(tt.wantStderr), tt.reason)
				g.Expect(msg).To(ContainSubstring(tt.wantStderr), "the controller reads the failure from the termination log")
				if strings.Contains(tt.reason, "refuse the source's identity") {
					g.Expect(msg).NotTo(ContainSubstring("executor policy does not allow"))
				}
				return
			}
			want := `{"rebound":true,"executorSubject":"` + testExecutorSubject + `","controllerSubject":"` + testControllerSubject +
				`","audience":"` + testAudience + `"}`
			g.Expect(stdout).To(Equal(want + "\n"))
			g.Expect(msg).To(Equal(want))
		})
	}
}

// TestRebindJobArgumentsParse checks that what snapshot.RebindJob writes into
// the container is what the executor mode reads.
func TestRebindJobArgumentsParse(t *testing.T) {
	g := NewWithT(t)
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "ns"}}
	c.Spec.Replicas = new(int32(3))
	c.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{Key: "k", SHA256: sha256Of([]byte("x")), SourceCluster: "src"}}
	job := snapshot.RebindJob(c, &baov1.RestoreStatus{ID: "1f2e3d4c", Attempts: 1}, testControllerSubject, "baokeeper:dev")
	ctr := job.Spec.Template.Spec.Containers[0]
	g.Expect(ctr.Args[:2]).To(Equal([]string{"executor", snapshot.ActionRebind}))
	f, err := parseRebindFlags(ctr.Args[2:], io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.members).To(HaveLen(1))
	g.Expect(f.executorSubject).To(Equal(workload.ServiceAccountSubject("ns", workload.NamesFor(c).ExecutorServiceAccount())))
	g.Expect(f.controllerSubject).To(Equal(testControllerSubject))
	g.Expect(f.audience).To(Equal(workload.JWTAudience(c)))
	g.Expect(f.terminationLog).To(Equal(ctr.TerminationMessagePath))
}
