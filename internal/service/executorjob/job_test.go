package executorjob

import (
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/raftops"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

const (
	testUID       = types.UID("3f1c2a8e-0b7d-4e55-9a61-2c4f5d6e7a8b")
	testNamespace = "ns"
	testImage     = "ghcr.io/baokeeper/baokeeper:v0.1.0"
)

// newCluster returns an OpenBaoCluster ns/bao with 3 replicas, changed by opts.
func newCluster(opts ...func(*baov1.OpenBaoCluster)) *baov1.OpenBaoCluster {
	replicas := int32(3)
	c := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "bao", UID: testUID},
		Spec:       baov1.OpenBaoClusterSpec{Version: "2.4.0", Replicas: &replicas},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func withName(name string) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) { c.Name = name }
}

func withReplicas(n int32) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) { c.Spec.Replicas = &n }
}

func withTLSSecret(name string) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) { c.Spec.TLS.SecretName = name }
}

func TestStepDownJobName(t *testing.T) {
	long := strings.Repeat("a", 55)
	tests := []struct {
		reason  string
		cluster string
		member  string
		attempt int32
		want    string
	}{
		{reason: "cluster, step, ordinal and attempt", cluster: "bao", member: "bao-2", attempt: 1, want: "bao-stepdown-2-1"},
		{reason: "another attempt is another Job", cluster: "bao", member: "bao-2", attempt: 3, want: "bao-stepdown-2-3"},
		{reason: "a cluster name with dashes keeps the ordinal", cluster: "team-a-bao", member: "team-a-bao-10", attempt: 0, want: "team-a-bao-stepdown-10-0"},
		{reason: "a member of another set keeps its whole name", cluster: "bao", member: "bao-green-1", attempt: 1, want: "bao-stepdown-bao-green-1-1"},
		{reason: "exactly 63 characters are kept", cluster: strings.Repeat("b", 50), member: strings.Repeat("b", 50) + "-0", attempt: 1,
			want: strings.Repeat("b", 50) + "-stepdown-0-1"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			got := StepDownJobName(newCluster(withName(tt.cluster)), tt.member, tt.attempt)
			g.Expect(got).To(Equal(tt.want), tt.reason)
			g.Expect(len(got)).To(BeNumerically("<=", 63))
		})
	}

	t.Run("a long name is cut to 63 characters, ends in a hash and stays unique and stable", func(t *testing.T) {
		g := NewWithT(t)
		c := newCluster(withName(long))
		a1 := StepDownJobName(c, long+"-1", 1)
		g.Expect(a1).To(HaveLen(63))
		g.Expect(a1).To(HavePrefix(long[:54] + "-"))
		g.Expect(a1).To(MatchRegexp(`-[0-9a-f]{8}$`))
		g.Expect(validation.IsDNS1123Label(a1)).To(BeEmpty(), "a valid label value and DNS label")
		g.Expect(StepDownJobName(c, long+"-1", 1)).To(Equal(a1), "deterministic")
		g.Expect(StepDownJobName(c, long+"-1", 2)).NotTo(Equal(a1), "attempts differ")
		g.Expect(StepDownJobName(c, long+"-2", 1)).NotTo(Equal(a1), "members differ")
	})

	t.Run("a cut never ends the prefix in a dash", func(t *testing.T) {
		g := NewWithT(t)
		// 53 characters, then "-stepdown-...": the cut after 54 characters
		// would end in that dash.
		c := newCluster(withName(strings.Repeat("c", 53)))
		name := StepDownJobName(c, c.Name+"-0", 1)
		g.Expect(validation.IsDNS1123Label(name)).To(BeEmpty(), name)
		g.Expect(name).NotTo(ContainSubstring("--"))
		g.Expect(name).To(HavePrefix(c.Name + "-"))
		g.Expect(name).To(HaveLen(53 + 1 + 8))
	})
}

func TestMemberAddresses(t *testing.T) {
	g := NewWithT(t)
	g.Expect(MemberAddresses(newCluster(withReplicas(3)))).To(Equal([]string{
		"https://bao-0.bao-internal.ns.svc:8200",
		"https://bao-1.bao-internal.ns.svc:8200",
		"https://bao-2.bao-internal.ns.svc:8200",
	}))
	g.Expect(MemberAddresses(newCluster(withReplicas(5)))).To(HaveLen(5))
	for i, addr := range MemberAddresses(newCluster(withReplicas(5))) {
		g.Expect(raftops.NodeID(addr)).To(Equal(workload.NamesFor(newCluster()).Member(int32(i))), "node IDs come back from addresses")
	}
}

func TestStepDownJob(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	job := StepDownJob(c, "bao-1", 2, testImage)

	t.Run("identity: name, namespace, owner and labels", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(job.TypeMeta).To(Equal(metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}))
		g.Expect(job.Name).To(Equal("bao-stepdown-1-2"))
		g.Expect(job.Namespace).To(Equal("ns"))
		g.Expect(job.OwnerReferences).To(Equal([]metav1.OwnerReference{workload.OwnerReference(c)}))
		g.Expect(*job.OwnerReferences[0].Controller).To(BeTrue())
		g.Expect(job.OwnerReferences[0].UID).To(Equal(testUID))
		want := map[string]string{
			workload.LabelManagedBy: workload.ManagedByValue,
			workload.LabelName:      "baokeeper-executor",
			workload.LabelInstance:  "bao",
			workload.LabelCluster:   "bao",
			workload.LabelComponent: "executor",
			"baokeeper.dev/step":    "stepdown",
			"baokeeper.dev/member":  "bao-1",
		}
		g.Expect(job.Labels).To(Equal(want))
		g.Expect(job.Spec.Template.Labels).To(Equal(want), "pods carry the same labels")
		sel := labels.SelectorFromSet(workload.SelectorLabels(c))
		g.Expect(sel.Matches(labels.Set(job.Spec.Template.Labels))).To(BeFalse(),
			"no Service, PDB or StatefulSet of the members selects an executor pod")
	})

	t.Run("Job policy: no Kubernetes retries, bounded, cleaned up", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(job.Spec.BackoffLimit).To(HaveValue(Equal(int32(0))))
		g.Expect(job.Spec.TTLSecondsAfterFinished).To(HaveValue(Equal(int32(600))))
		g.Expect(job.Spec.ActiveDeadlineSeconds).To(HaveValue(Equal(int64(120))))
		g.Expect(job.Spec.Template.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	})

	pod := job.Spec.Template.Spec
	g.Expect(pod.Containers).To(HaveLen(1))
	ctr := pod.Containers[0]

	t.Run("identity in OpenBao: executor service account, projected token only", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(pod.ServiceAccountName).To(Equal("bao-executor"))
		g.Expect(pod.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
	})

	t.Run("volumes: audience-bound token and the cluster CA", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(pod.Volumes).To(HaveLen(2))
		token := pod.Volumes[0]
		g.Expect(token.Name).To(Equal("token"))
		g.Expect(token.Projected).NotTo(BeNil())
		g.Expect(token.Projected.Sources).To(Equal([]corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Audience: "openbao.baokeeper.dev/" + c.Namespace + "/" + c.Name, ExpirationSeconds: ptrTo(int64(600)), Path: "token",
		}}}))
		ca := pod.Volumes[1]
		g.Expect(ca.Name).To(Equal("ca"))
		g.Expect(ca.Secret).To(Equal(&corev1.SecretVolumeSource{
			SecretName: "bao-tls",
			Items:      []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
		}))
		g.Expect(ctr.VolumeMounts).To(ConsistOf(
			corev1.VolumeMount{Name: "token", MountPath: "/var/run/secrets/baokeeper", ReadOnly: true},
			corev1.VolumeMount{Name: "ca", MountPath: "/var/run/secrets/baokeeper-ca", ReadOnly: true},
		))
	})

	t.Run("a user-managed TLS secret provides the CA", func(t *testing.T) {
		g := NewWithT(t)
		j := StepDownJob(newCluster(withTLSSecret("my-tls")), "bao-1", 1, testImage)
		g.Expect(j.Spec.Template.Spec.Volumes[1].Secret.SecretName).To(Equal("my-tls"))
	})

	t.Run("least privilege", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(pod.SecurityContext).To(Equal(&corev1.PodSecurityContext{
			RunAsNonRoot:   ptrTo(true),
			RunAsUser:      ptrTo(int64(65532)),
			RunAsGroup:     ptrTo(int64(65532)),
			FSGroup:        ptrTo(int64(65532)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}))
		g.Expect(ctr.SecurityContext).To(Equal(&corev1.SecurityContext{
			RunAsNonRoot:             ptrTo(true),
			RunAsUser:                ptrTo(int64(65532)),
			RunAsGroup:               ptrTo(int64(65532)),
			AllowPrivilegeEscalation: ptrTo(false),
			ReadOnlyRootFilesystem:   ptrTo(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}))
	})

	t.Run("container: image, arguments, termination message, resources", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(ctr.Name).To(Equal("executor"))
		g.Expect(ctr.Image).To(Equal(testImage))
		g.Expect(ctr.Command).To(BeEmpty(), "the image's entrypoint is baokeeper")
		g.Expect(ctr.Args).To(Equal([]string{
			"executor", "step-down",
			"--member", "bao-1",
			"--members", "https://bao-0.bao-internal.ns.svc:8200,https://bao-1.bao-internal.ns.svc:8200,https://bao-2.bao-internal.ns.svc:8200",
			"--ca-file", "/var/run/secrets/baokeeper-ca/ca.crt",
			"--token-file", "/var/run/secrets/baokeeper/token",
		}))
		g.Expect(ctr.TerminationMessagePolicy).To(Equal(corev1.TerminationMessageFallbackToLogsOnError))
		g.Expect(ctr.Resources.Requests.Cpu().Cmp(resource.MustParse("10m"))).To(Equal(0))
		g.Expect(ctr.Resources.Requests.Memory().Cmp(resource.MustParse("32Mi"))).To(Equal(0))
		g.Expect(ctr.Resources.Limits.Memory().Cmp(resource.MustParse("128Mi"))).To(Equal(0))
		g.Expect(ctr.Env).To(BeEmpty(), "no secrets or settings through the environment")
	})

	t.Run("five members are all listed", func(t *testing.T) {
		g := NewWithT(t)
		j := StepDownJob(newCluster(withReplicas(5)), "bao-4", 1, testImage)
		args := j.Spec.Template.Spec.Containers[0].Args
		g.Expect(args[5]).To(Equal(strings.Join(MemberAddresses(newCluster(withReplicas(5))), ",")))
		g.Expect(strings.Split(args[5], ",")).To(HaveLen(5))
	})

	t.Run("pure: the same inputs give the same Job, and the input is not changed", func(t *testing.T) {
		g := NewWithT(t)
		before := c.DeepCopy()
		g.Expect(StepDownJob(c, "bao-1", 2, testImage)).To(Equal(job))
		g.Expect(c).To(Equal(before))
		job.Labels["x"] = "y"
		g.Expect(job.Spec.Template.Labels).NotTo(HaveKey("x"), "Job and pod labels are separate maps")
	})
}

func TestJobPhaseOf(t *testing.T) {
	t0 := time.Date(2030, time.March, 14, 9, 26, 53, 0, time.UTC)
	completed := t0.Add(3 * time.Second)
	cond := func(typ batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(t0)}
	}
	job := func(mut func(j *batchv1.Job)) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "bao-stepdown-0-1", Namespace: "ns"}}
		if mut != nil {
			mut(j)
		}
		return j
	}
	tests := []struct {
		reason    string
		job       *batchv1.Job
		want      operation.JobPhase
		wantAt    time.Time
		wantInMsg string
	}{
		{reason: "no Job", job: nil, want: operation.JobNone},
		{reason: "a new Job without conditions runs", job: job(nil), want: operation.JobRunning},
		{
			reason: "Complete means succeeded, at the completion time",
			job: job(func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, "", ""), cond(batchv1.JobComplete, corev1.ConditionTrue, "", "")}
				j.Status.CompletionTime = &metav1.Time{Time: completed}
			}),
			want: operation.JobSucceeded, wantAt: completed,
		},
		{
			reason: "Complete without a completion time falls back to the condition's time",
			job: job(func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionTrue, "", "")}
			}),
			want: operation.JobSucceeded, wantAt: t0,
		},
		{
			reason: "Failed carries its reason and message",
			job: job(func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionTrue, "BackoffLimitExceeded", "Job has reached the specified backoff limit")}
			}),
			want: operation.JobFailed, wantAt: t0, wantInMsg: "BackoffLimitExceeded: Job has reached the specified backoff limit",
		},
		{
			reason: "Failed by the deadline",
			job: job(func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionTrue, "DeadlineExceeded", "Job was active longer than specified deadline")}
			}),
			want: operation.JobFailed, wantAt: t0, wantInMsg: "DeadlineExceeded",
		},
		{
			reason: "Failed without text still says which Job failed",
			job: job(func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionTrue, "", "")}
			}),
			want: operation.JobFailed, wantAt: t0, wantInMsg: "Job bao-stepdown-0-1 failed",
		},
		{
			reason: "FailureTarget is not terminal yet: the pod may still run a step-down",
			job: job(func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue, "BackoffLimitExceeded", "")}
			}),
			want: operation.JobRunning,
		},
		{
			reason: "a condition that is not True does not count",
			job: job(func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionFalse, "", ""), cond(batchv1.JobComplete, corev1.ConditionUnknown, "", "")}
			}),
			want: operation.JobRunning,
		},
		{
			reason: "a Job being deleted is not trusted, even when it says Complete",
			job: job(func(j *batchv1.Job) {
				j.DeletionTimestamp = &metav1.Time{Time: t0}
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionTrue, "", "")}
			}),
			want: operation.JobRunning, wantInMsg: "being deleted",
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			phase, at, msg := JobPhaseOf(tt.job)
			g.Expect(phase).To(Equal(tt.want), tt.reason)
			g.Expect(at).To(Equal(tt.wantAt), tt.reason)
			if tt.wantInMsg == "" {
				g.Expect(msg).To(BeEmpty(), tt.reason)
			} else {
				g.Expect(msg).To(ContainSubstring(tt.wantInMsg), tt.reason)
			}
		})
	}
}

func TestJobName(t *testing.T) {
	tests := []struct {
		reason  string
		cluster string
		step    string
		opID    string
		member  string
		attempt int32
		want    string
	}{
		{reason: "cluster, step, operation, ordinal and attempt", cluster: "bao", step: StepStepDown, opID: "1f2e3d4c", member: "bao-2", attempt: 1,
			want: "bao-stepdown-1f2e3d4c-2-1"},
		{reason: "promote", cluster: "bao", step: StepPromote, opID: "1f2e3d4c", member: "bao-3", attempt: 0, want: "bao-promote-1f2e3d4c-3-0"},
		{reason: "remove-peer", cluster: "bao", step: StepRemovePeer, opID: "1f2e3d4c", member: "bao-4", attempt: 2, want: "bao-removepeer-1f2e3d4c-4-2"},
		{reason: "demote", cluster: "bao", step: StepDemote, opID: "1f2e3d4c", member: "bao-1", attempt: 0, want: "bao-demote-1f2e3d4c-1-0"},
		{reason: "a member of another set keeps its whole name", cluster: "bao", step: StepPromote, opID: "1f2e3d4c", member: "bao-green-1", attempt: 1,
			want: "bao-promote-1f2e3d4c-bao-green-1-1"},
		{reason: "exactly 63 characters are kept", cluster: strings.Repeat("b", 41), step: StepStepDown, opID: "1f2e3d4c", member: strings.Repeat("b", 41) + "-0", attempt: 1,
			want: strings.Repeat("b", 41) + "-stepdown-1f2e3d4c-0-1"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			got := JobName(newCluster(withName(tt.cluster)), tt.step, tt.opID, tt.member, tt.attempt)
			g.Expect(got).To(Equal(tt.want), tt.reason)
			g.Expect(len(got)).To(BeNumerically("<=", 63))
			g.Expect(validation.IsDNS1123Label(got)).To(BeEmpty(), got)
		})
	}

	for _, name := range []string{"bao", strings.Repeat("a", 42), strings.Repeat("a", 55), strings.Repeat("c", 53), strings.Repeat("d", 63)} {
		t.Run("a "+strconv.Itoa(len(name))+"-character cluster name gives valid, stable, distinct names", func(t *testing.T) {
			g := NewWithT(t)
			c := newCluster(withName(name))
			base := JobName(c, StepRemovePeer, "1f2e3d4c", name+"-1", 1)
			g.Expect(len(base)).To(BeNumerically("<=", 63))
			g.Expect(validation.IsDNS1123Label(base)).To(BeEmpty(), base)
			g.Expect(JobName(c, StepRemovePeer, "1f2e3d4c", name+"-1", 1)).To(Equal(base), "deterministic")
			others := map[string]string{
				"another operation": JobName(c, StepRemovePeer, "9a8b7c6d", name+"-1", 1),
				"another attempt":   JobName(c, StepRemovePeer, "1f2e3d4c", name+"-1", 2),
				"another member":    JobName(c, StepRemovePeer, "1f2e3d4c", name+"-2", 1),
				"another step":      JobName(c, StepPromote, "1f2e3d4c", name+"-1", 1),
				"the demote step":   JobName(c, StepDemote, "1f2e3d4c", name+"-1", 1),
			}
			seen := map[string]string{base: "base"}
			for what, other := range others {
				g.Expect(seen).NotTo(HaveKey(other), "%s gives a name of its own", what)
				seen[other] = what
			}
			g.Expect(JobName(c, StepStepDown, "1f2e3d4c", name+"-1", 1)).NotTo(Equal(StepDownJobName(c, name+"-1", 1)),
				"never the name of a Job without an operation")
		})
	}
}

func TestMemberAddressesN(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(withReplicas(3))
	g.Expect(MemberAddressesN(c, 3)).To(Equal(MemberAddresses(c)))
	g.Expect(MemberAddressesN(c, 4)).To(Equal(append(MemberAddresses(c), "https://bao-3.bao-internal.ns.svc:8200")),
		"a scale-up lists the new ordinal")
	g.Expect(MemberAddressesN(c, 2)).To(Equal(MemberAddresses(c)[:2]))
	g.Expect(MemberAddressesN(c, 0)).To(BeEmpty())
	g.Expect(MemberAddressesN(c, -1)).To(BeEmpty())
}

// TestOperationJobs checks the builders that take an operation ID.
func TestOperationJobs(t *testing.T) {
	const opID = "1f2e3d4c"
	scaled := MemberAddressesN(newCluster(), 4)
	tests := []struct {
		reason       string
		build        func(c *baov1.OpenBaoCluster, opID, member string, attempt int32, image string, members []string) *batchv1.Job
		member       string
		wantName     string
		wantStep     string
		wantAction   string
		wantTimeout  string
		wantDeadline int64
	}{
		{reason: "step-down", build: StepDownJobFor, member: "bao-1", wantName: "bao-stepdown-1f2e3d4c-1-2",
			wantStep: "stepdown", wantAction: "step-down", wantTimeout: "1m0s", wantDeadline: 120},
		{reason: "promote", build: PromoteJob, member: "bao-3", wantName: "bao-promote-1f2e3d4c-3-2",
			wantStep: "promote", wantAction: "promote", wantTimeout: "1m30s", wantDeadline: 150},
		{reason: "remove-peer", build: RemovePeerJob, member: "bao-3", wantName: "bao-removepeer-1f2e3d4c-3-2",
			wantStep: "removepeer", wantAction: "remove-peer", wantTimeout: "1m30s", wantDeadline: 150},
		{reason: "demote", build: DemoteJob, member: "bao-2", wantName: "bao-demote-1f2e3d4c-2-2",
			wantStep: "demote", wantAction: "demote", wantTimeout: "1m30s", wantDeadline: 150},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			c := newCluster()
			members := append([]string(nil), scaled...)
			job := tt.build(c, opID, tt.member, 2, testImage, members)

			g.Expect(job.Name).To(Equal(tt.wantName))
			want := map[string]string{
				workload.LabelManagedBy:   workload.ManagedByValue,
				workload.LabelName:        "baokeeper-executor",
				workload.LabelInstance:    "bao",
				workload.LabelCluster:     "bao",
				workload.LabelComponent:   "executor",
				"baokeeper.dev/step":      tt.wantStep,
				"baokeeper.dev/member":    tt.member,
				"baokeeper.dev/operation": opID,
			}
			g.Expect(job.Labels).To(Equal(want))
			g.Expect(job.Spec.Template.Labels).To(Equal(want), "pods carry the operation too")
			g.Expect(JobOfOperation(job, opID)).To(BeTrue())
			g.Expect(job.Spec.ActiveDeadlineSeconds).To(HaveValue(Equal(tt.wantDeadline)))
			timeout, err := time.ParseDuration(tt.wantTimeout)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(time.Duration(tt.wantDeadline)*time.Second).To(BeNumerically(">=", timeout+ExecutorGrace+20*time.Second),
				"the deadline covers --timeout, the executor's grace and start-up")
			g.Expect(job.Spec.Template.Spec.Containers[0].Args).To(Equal([]string{
				"executor", tt.wantAction,
				"--member", tt.member,
				"--members", strings.Join(scaled, ","),
				"--ca-file", "/var/run/secrets/baokeeper-ca/ca.crt",
				"--token-file", "/var/run/secrets/baokeeper/token",
				"--timeout", tt.wantTimeout,
			}), "the members given, not the spec's")
			g.Expect(job.Spec.BackoffLimit).To(HaveValue(Equal(int32(0))))
			g.Expect(job.Spec.Template.Spec.ServiceAccountName).To(Equal("bao-executor"))

			before := c.DeepCopy()
			g.Expect(tt.build(c, opID, tt.member, 2, testImage, members)).To(Equal(job), "pure: the same inputs give the same Job")
			g.Expect(c).To(Equal(before), "the cluster is not changed")
			g.Expect(members).To(Equal(scaled), "the members are not changed")
			g.Expect(tt.build(c, "9a8b7c6d", tt.member, 2, testImage, members).Name).NotTo(Equal(job.Name), "another operation, another Job")
		})
	}
}

func TestJobOfOperation(t *testing.T) {
	c := newCluster()
	withOp := PromoteJob(c, "1f2e3d4c", "bao-3", 1, testImage, MemberAddresses(c))
	tests := []struct {
		reason string
		job    *batchv1.Job
		opID   string
		want   bool
	}{
		{reason: "a Job of the operation", job: withOp, opID: "1f2e3d4c", want: true},
		{reason: "a Job of another operation never counts", job: withOp, opID: "9a8b7c6d", want: false},
		{reason: "a Job without an operation (the deprecated StepDownJob, an older baokeeper) belongs to none", job: StepDownJob(c, "bao-1", 1, testImage), opID: "1f2e3d4c", want: false},
		{reason: "an empty operation ID matches nothing, not even a Job without the label", job: StepDownJob(c, "bao-1", 1, testImage), opID: "", want: false},
		{reason: "no Job", job: nil, opID: "1f2e3d4c", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			NewWithT(t).Expect(JobOfOperation(tt.job, tt.opID)).To(Equal(tt.want), tt.reason)
		})
	}
}

func TestValidateOperationID(t *testing.T) {
	tests := []struct {
		reason  string
		opID    string
		wantErr string
	}{
		{reason: "8 hex characters", opID: "1f2e3d4c"},
		{reason: "inner dashes", opID: "up-7-a"},
		{reason: "16 characters", opID: strings.Repeat("a", 16)},
		{reason: "empty", opID: "", wantErr: "it is empty"},
		{reason: "too long for the names", opID: strings.Repeat("a", 17), wantErr: "longer than 16"},
		{reason: "upper case is no DNS label", opID: "1F2E3D4C", wantErr: "lowercase"},
		{reason: "a leading dash", opID: "-1f2e", wantErr: "lowercase"},
		{reason: "a trailing dash", opID: "1f2e-", wantErr: "lowercase"},
		{reason: "a dot", opID: "1f.2e", wantErr: "lowercase"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			err := ValidateOperationID(tt.opID)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred(), tt.reason)
				name := JobName(newCluster(), StepPromote, tt.opID, "bao-1", 1)
				g.Expect(validation.IsDNS1123Label(name)).To(BeEmpty(), "a valid ID gives a valid name")
				g.Expect(validation.IsValidLabelValue(tt.opID)).To(BeEmpty(), "and a valid label value")
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)), tt.reason)
		})
	}
}

// TestStepLabelOf: every step action of scaling and blue-green names the executor
// Job that carries it out; the two strategies share the mapping.
func TestStepLabelOf(t *testing.T) {
	for action, want := range map[baov1.StepAction]string{
		upgrade.StepTransferLeadership: StepStepDown,
		upgrade.StepRemoveMember:       StepRemovePeer,
		upgrade.StepDemoteMember:       StepDemote,
		upgrade.StepPromoteMember:      StepPromote,
		"AddMember":                    StepPromote,
	} {
		if got := StepLabelOf(action); got != want {
			t.Errorf("StepLabelOf(%q) = %q, want %q", action, got, want)
		}
	}
}

func TestExecutorJobsFollowTheExecutorPlacement(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	c.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	c.Spec.Upgrade.Executor.Placement = baov1.PlacementSpec{NodeSelector: map[string]string{"pool": "system"}, PriorityClassName: "ops"}
	c.Spec.Upgrade.Executor.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
	spec := StepDownJob(c, "bao-0", 1, "ghcr.io/baokeeper/baokeeper:dev").Spec.Template.Spec //nolint:staticcheck // any executor Job will do
	g.Expect(spec.NodeSelector).To(Equal(map[string]string{"pool": "system"}))
	g.Expect(spec.PriorityClassName).To(Equal("ops"))
	g.Expect(spec.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: "regcred"}))
	g.Expect(spec.Containers[0].Resources.Limits.Memory().String()).To(Equal("256Mi"), "the user's resources replace the defaults")
	g.Expect(spec.TopologySpreadConstraints).To(BeEmpty(), "a Job has no spread of its own")
}
