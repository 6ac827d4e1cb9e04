package executorjob

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Labels and values of executor Jobs, beside workload.CommonLabels.
const (
	// LabelStep names the operation an executor Job performs.
	LabelStep = "baokeeper.dev/step"
	// LabelMember names the member an executor Job acts on.
	LabelMember = "baokeeper.dev/member"
	// LabelOperation carries the ID of the operation (one upgrade, one
	// scaling) an executor Job belongs to; see JobOfOperation.
	LabelOperation = "baokeeper.dev/operation"
	// ComponentExecutor is the workload.LabelComponent value of executor Jobs.
	ComponentExecutor = "executor"
	// StepStepDown is the LabelStep value of step-down Jobs.
	StepStepDown = "stepdown"
	// StepPromote is the LabelStep value of promote Jobs.
	StepPromote = "promote"
	// StepRemovePeer is the LabelStep value of remove-peer Jobs.
	StepRemovePeer = "removepeer"
	// StepDemote is the LabelStep value of demote Jobs.
	StepDemote = "demote"
	// StepWritePeers is the LabelStep value of the Job that writes peers.json on a
	// survivor of a lost majority.
	StepWritePeers = "writepeers"
)

// StepLabelOf is the LabelStep value (and the step in the Job's name) of the Job
// that carries out a step action of status.*.currentStep (the upgrade root's Step
// constants): a leadership transfer steps down, a removal removes the peer, a
// demotion demotes, and every other membership step (adding, promoting) promotes.
func StepLabelOf(stepAction baov1.StepAction) string {
	switch stepAction {
	case upgrade.StepTransferLeadership:
		return StepStepDown
	case upgrade.StepRemoveMember:
		return StepRemovePeer
	case upgrade.StepDemoteMember:
		return StepDemote
	default:
		return StepPromote
	}
}

// Executor actions the Jobs run ("baokeeper executor <action>").
const (
	// ActionStepDown moves leadership off a member (TransferLeadership).
	ActionStepDown = "step-down"
	// ActionPromote makes a member a voter (PromoteMember).
	ActionPromote = "promote"
	// ActionRemovePeer takes a member out of the Raft configuration
	// (RemoveMember).
	ActionRemovePeer = "remove-peer"
	// ActionDemote makes a member a non-voter and leaves it in the Raft
	// configuration (DemoteMember).
	ActionDemote = "demote"
	// ActionWritePeers writes OpenBao's peers.json, naming one voter, into a Raft
	// directory mounted from a member's volume (a recovery from a lost majority).
	ActionWritePeers = "write-peers"
)

// Paths and settings of executor Jobs.
const (
	// ExecutorContainerName is the name of the executor container.
	ExecutorContainerName = "executor"
	// TokenMountPath holds the projected service-account token.
	TokenMountPath = "/var/run/secrets/baokeeper"
	// TokenFile is the projected service-account token file.
	TokenFile = TokenMountPath + "/token"
	// CAMountPath holds the cluster CA.
	CAMountPath = "/var/run/secrets/baokeeper-ca"
	// CAFile is the cluster CA file.
	CAFile = CAMountPath + "/" + workload.CACertKey

	// ExecutorUID is the non-root user executor containers run as (distroless
	// "nonroot").
	ExecutorUID int64 = 65532
	// TokenExpirationSeconds is the lifetime of the projected token; kubelet
	// rotates it at 80%.
	TokenExpirationSeconds int64 = 600
	// JobTTLSecondsAfterFinished keeps a finished Job long enough for the
	// controller to read its outcome and for a person to read its logs.
	JobTTLSecondsAfterFinished int32 = 600
	// StepDownActiveDeadlineSeconds bounds a step-down Job: the executor's
	// own 60 s retry budget (StepDownTimeout), a login and pod start-up.
	StepDownActiveDeadlineSeconds int64 = 120
	// StepDownTimeout is the --timeout StepDownJobFor passes: how long the
	// executor retries a step-down.
	StepDownTimeout = 60 * time.Second
	// MembershipTimeout is the --timeout of promote, demote and remove-peer
	// Jobs and the executor's default for them: a demotion takes 9-10 s to
	// apply and the removal follows, with room for an election and retries.
	MembershipTimeout = 90 * time.Second
	// MembershipActiveDeadlineSeconds bounds a promote, demote or remove-peer
	// Job: MembershipTimeout, ExecutorGrace, a login and pod start-up.
	MembershipActiveDeadlineSeconds int64 = 150
	// ExecutorGrace is how long past its --timeout the executor lets a call
	// in flight finish before it cancels it; Job deadlines cover it.
	ExecutorGrace = 10 * time.Second

	maxNameLength        = 63
	nameHashChars        = 8
	maxOperationIDLength = 16
)

// BoundedName returns name, cut to 63 characters with a hash of the whole name
// at the end when it is longer (see StepDownJobName).
func BoundedName(name string) string { return boundedName(name) }

// StepDownJobName is the deterministic name of the step-down Job of a member
// and attempt: <cluster>-stepdown-<ordinal>-<attempt>. A name longer than 63
// characters (the limit of the job-name label that Kubernetes puts on the
// Job's pods) is cut and ends in a hash of the full name, so that it stays
// unique and stable.
//
// Deprecated: the name carries no operation, so a Job left by an earlier
// upgrade (succeeded, kept for JobTTLSecondsAfterFinished) has the name of
// this upgrade's Job and reads as its outcome. Use JobName with an operation
// ID.
func StepDownJobName(c *baov1.OpenBaoCluster, member string, attempt int32) string {
	return boundedName(fmt.Sprintf("%s-%s-%s-%d", c.Name, StepStepDown, memberOrdinal(c, member), attempt))
}

// JobName is the deterministic name of the executor Job of one step, operation,
// member and attempt: <cluster>-<step>-<opID>-<ordinal>-<attempt>, bounded
// like StepDownJobName (cut to 63 characters, ending in a hash of the full
// name). Why the operation ID: names are reused across operations otherwise,
// and a finished Job of an earlier operation would be found under the name
// of this one. A member outside the cluster's StatefulSet (say bao-green-1)
// keeps its whole name in place of the ordinal.
func JobName(c *baov1.OpenBaoCluster, step, opID, member string, attempt int32) string {
	return boundedName(fmt.Sprintf("%s-%s-%s-%s-%d", c.Name, step, opID, memberOrdinal(c, member), attempt))
}

// ValidateOperationID checks that opID can go into Job names and the
// LabelOperation label: 1 to 16 lowercase letters, digits or dashes, starting
// and ending with a letter or digit (8 hex characters, say). The builders do
// not check it; a Job with an invalid ID is refused by the API server.
func ValidateOperationID(opID string) error {
	switch {
	case opID == "":
		return errors.New("invalid operation ID: it is empty")
	case len(opID) > maxOperationIDLength:
		return fmt.Errorf("invalid operation ID %q: longer than %d characters", opID, maxOperationIDLength)
	}
	for i, r := range opID {
		alnum := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		if !alnum && (r != '-' || i == 0 || i == len(opID)-1) {
			return fmt.Errorf("invalid operation ID %q: use lowercase letters, digits and inner dashes only", opID)
		}
	}
	return nil
}

// memberOrdinal returns the ordinal of member in the cluster's StatefulSet,
// or the whole member name when it is not one of its pods.
func memberOrdinal(c *baov1.OpenBaoCluster, member string) string {
	ordinal := strings.TrimPrefix(member, c.Name+"-")
	if _, err := strconv.ParseUint(ordinal, 10, 32); err != nil {
		return member
	}
	return ordinal
}

func boundedName(name string) string { return BoundedNameN(name, maxNameLength) }

// BoundedNameN is name when it has at most n characters, else its first characters
// and a hash of the whole, n characters in all: distinct names stay distinct.
func BoundedNameN(name string, n int) string {
	if len(name) <= n {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	prefix := strings.TrimRight(name[:n-nameHashChars-1], "-.")
	return prefix + "-" + hex.EncodeToString(sum[:])[:nameHashChars]
}

// MemberAddresses returns the API address of every ordinal of the cluster,
// https://<pod>.<headless service>.<namespace>.svc:8200, in ordinal order.
func MemberAddresses(c *baov1.OpenBaoCluster) []string {
	return MemberAddressesN(c, c.GetReplicas())
}

// MemberAddressesN returns the API addresses of ordinals 0 to n-1 of the
// cluster, as MemberAddresses does for the current replica count. During a
// scale change the members to address are not the spec's: the ordinals that
// run, or will run, at the time of the Job.
func MemberAddressesN(c *baov1.OpenBaoCluster, n int32) []string {
	names := workload.NamesFor(c)
	out := make([]string, 0, max(n, 0))
	for i := range n {
		out = append(out, fmt.Sprintf("https://%s:%d", names.MemberHost(i, c.Namespace), workload.APIPort))
	}
	return out
}

// tlsSecretName is the Secret whose ca.crt the executor trusts.
func tlsSecretName(c *baov1.OpenBaoCluster) string {
	if c.Spec.TLS.SecretName != "" {
		return c.Spec.TLS.SecretName
	}
	return workload.NamesFor(c).TLSSecret()
}

// ExecutorLabels are the labels of an executor Job and its pod. They carry the
// cluster label (so the controller maps them to their cluster) but not the
// members' selector labels, so no Service, PodDisruptionBudget or StatefulSet
// of the cluster ever selects an executor pod.
func ExecutorLabels(c *baov1.OpenBaoCluster, step, member string) map[string]string {
	l := map[string]string{
		workload.LabelName:      "baokeeper-executor",
		workload.LabelInstance:  c.Name,
		workload.LabelCluster:   c.Name,
		workload.LabelManagedBy: workload.ManagedByValue,
		workload.LabelComponent: ComponentExecutor,
		LabelStep:               step,
	}
	if member != "" {
		l[LabelMember] = member
	}
	return l
}

// ExecutorJobSpec is what differs between executor Jobs.
type ExecutorJobSpec struct {
	// Name is the Job's deterministic name.
	Name string
	// Step is the LabelStep value; Member the LabelMember value, if any.
	Step, Member string
	// Operation is the LabelOperation value; empty leaves the label off.
	Operation string
	// Image runs "baokeeper executor ...".
	Image string
	// Args are the container's arguments, starting with "executor".
	Args []string
	// Env is added to the container's environment (credentials from Secrets).
	Env []corev1.EnvVar
	// ActiveDeadlineSeconds bounds the Job.
	ActiveDeadlineSeconds int64
	// MemoryLimit is the container's memory limit; empty means 128Mi.
	MemoryLimit string
	// Volumes and VolumeMounts are added to the pod and the container (a CA
	// bundle of object storage).
	Volumes      []corev1.Volume
	VolumeMounts []corev1.VolumeMount
	// TTLSecondsAfterFinished replaces JobTTLSecondsAfterFinished when set.
	TTLSecondsAfterFinished *int32
	// ServiceAccountName and Audience replace the cluster's executor service
	// account and JWT audience when set: the identity a restored snapshot trusts
	// until its roles are rewritten (a restore's rebind Job).
	ServiceAccountName, Audience string
}

// StepDownJob builds the executor Job that moves leadership off member. It is
// pure: the same inputs give the same Job, so the controller can create it
// idempotently under its deterministic name and find it again after a
// restart.
//
// Deprecated: its name and labels carry no operation (see StepDownJobName).
// Use StepDownJobFor.
func StepDownJob(c *baov1.OpenBaoCluster, member string, attempt int32, image string) *batchv1.Job {
	return ExecutorJob(c, ExecutorJobSpec{
		Name: StepDownJobName(c, member, attempt), Step: StepStepDown, Member: member, Image: image,
		Args: []string{
			"executor", ActionStepDown,
			"--member", member,
			"--members", strings.Join(MemberAddresses(c), ","),
			"--ca-file", CAFile,
			"--token-file", TokenFile,
		},
		ActiveDeadlineSeconds: StepDownActiveDeadlineSeconds,
	})
}

// StepDownJobFor builds the executor Job of operation opID that moves
// leadership off member, asking the members at the API addresses members
// (MemberAddresses or MemberAddressesN) for the active node. Its name is
// JobName(c, StepStepDown, opID, member, attempt) and it carries
// LabelOperation=opID. Pure, like every builder here.
func StepDownJobFor(c *baov1.OpenBaoCluster, opID, member string, attempt int32, image string, members []string) *batchv1.Job {
	return memberJob(c, memberJobSpec{
		step: StepStepDown, action: ActionStepDown, timeout: StepDownTimeout, deadline: StepDownActiveDeadlineSeconds,
	}, opID, member, attempt, image, members)
}

// PromoteJob builds the executor Job of operation opID that makes member (a
// Raft node ID) a voter and verifies it (PromoteMember), through the active
// node among members. Name JobName(c, StepPromote, ...), label
// LabelOperation=opID.
func PromoteJob(c *baov1.OpenBaoCluster, opID, member string, attempt int32, image string, members []string) *batchv1.Job {
	return memberJob(c, memberJobSpec{
		step: StepPromote, action: ActionPromote, timeout: MembershipTimeout, deadline: MembershipActiveDeadlineSeconds,
	}, opID, member, attempt, image, members)
}

// RemovePeerJob builds the executor Job of operation opID that demotes member
// (a Raft node ID) if it votes and removes it from the Raft configuration,
// verifying each step (RemoveMember), through the active node among members.
// members need not include member: its pod may be gone. Name
// JobName(c, StepRemovePeer, ...), label LabelOperation=opID.
func RemovePeerJob(c *baov1.OpenBaoCluster, opID, member string, attempt int32, image string, members []string) *batchv1.Job {
	return memberJob(c, memberJobSpec{
		step: StepRemovePeer, action: ActionRemovePeer, timeout: MembershipTimeout, deadline: MembershipActiveDeadlineSeconds,
	}, opID, member, attempt, image, members)
}

// DemoteJob builds the executor Job of operation opID that makes member (a
// Raft node ID) a non-voter and verifies it, leaving it in the Raft
// configuration (DemoteMember), through the active node among members. The
// member must not be the leader. Name JobName(c, StepDemote, ...), label
// LabelOperation=opID.
func DemoteJob(c *baov1.OpenBaoCluster, opID, member string, attempt int32, image string, members []string) *batchv1.Job {
	return memberJob(c, memberJobSpec{
		step: StepDemote, action: ActionDemote, timeout: MembershipTimeout, deadline: MembershipActiveDeadlineSeconds,
	}, opID, member, attempt, image, members)
}

// memberJobSpec is what differs between the Jobs that act on one member.
type memberJobSpec struct {
	step, action string
	// timeout is the executor's --timeout; deadline must cover it.
	timeout  time.Duration
	deadline int64
}

func memberJob(c *baov1.OpenBaoCluster, spec memberJobSpec, opID, member string, attempt int32, image string, members []string) *batchv1.Job {
	return ExecutorJob(c, ExecutorJobSpec{
		Name: JobName(c, spec.step, opID, member, attempt), Step: spec.step, Member: member, Operation: opID, Image: image,
		Args:                  append([]string{"executor"}, memberArgs(spec, member, members)...),
		ActiveDeadlineSeconds: spec.deadline,
	})
}

// memberArgs are the arguments of "baokeeper executor" for one step on member: its
// action first, then the member, the members to ask for the active node, the pod's
// CA and token files and the step's timeout.
func memberArgs(spec memberJobSpec, member string, members []string) []string {
	return []string{
		spec.action,
		"--member", member,
		"--members", strings.Join(members, ","),
		"--ca-file", CAFile,
		"--token-file", TokenFile,
		"--timeout", spec.timeout.String(),
	}
}

// WritePeersActiveDeadlineSeconds bounds the Job that writes peers.json: a pod
// start on a known node and a file write.
const WritePeersActiveDeadlineSeconds int64 = 120

// RaftDir is the Raft directory of a member's data volume, where OpenBao looks for
// peers.json when it starts.
const RaftDir = workload.DataMountPath + "/raft"

// WritePeersJob builds the Job of recovery opID that writes peers.json naming
// survivor (at its Raft address address) as the only voter into survivor's Raft
// directory. It mounts the survivor's data volume claim, so it runs on node, the
// node of the survivor's pod (a ReadWriteOnce claim may be mounted by several pods
// of one node), as OpenBao's user (the directory is OpenBao's). It reads nothing a
// tenant could write: the file's whole content is in its arguments. Pure.
func WritePeersJob(c *baov1.OpenBaoCluster, opID, survivor string, attempt int32, image, node, address string) *batchv1.Job {
	job := ExecutorJob(c, ExecutorJobSpec{
		Name: JobName(c, StepWritePeers, opID, survivor, attempt), Step: StepWritePeers, Member: survivor, Operation: opID, Image: image,
		Args:                  []string{"executor", ActionWritePeers, "--raft-dir", RaftDir, "--id", survivor, "--address", address},
		ActiveDeadlineSeconds: WritePeersActiveDeadlineSeconds,
		Volumes: []corev1.Volume{{Name: workload.DataVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: workload.DataVolume + "-" + survivor}}}},
		VolumeMounts: []corev1.VolumeMount{{Name: workload.DataVolume, MountPath: workload.DataMountPath}},
	})
	pod := &job.Spec.Template.Spec
	// It talks to nobody: no OpenBao token, no CA beside the survivor's data.
	pod.Volumes = slices.DeleteFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "token" || v.Name == "ca" })
	pod.Containers[0].VolumeMounts = slices.DeleteFunc(pod.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "token" || m.Name == "ca" })
	// On the survivor's node, whatever the executor's placement says: the kubelet
	// refuses a pod whose selector or affinity its node does not match.
	pod.NodeName, pod.NodeSelector, pod.Affinity, pod.TopologySpreadConstraints = node, nil, nil, nil
	pod.Tolerations = append([]corev1.Toleration(nil), c.Spec.Placement.Tolerations...)
	pod.SecurityContext.RunAsUser, pod.SecurityContext.RunAsGroup, pod.SecurityContext.FSGroup =
		ptrTo(workload.OpenBaoUID), ptrTo(workload.OpenBaoGID), ptrTo(workload.OpenBaoGID)
	sc := pod.Containers[0].SecurityContext
	sc.RunAsUser, sc.RunAsGroup = ptrTo(workload.OpenBaoUID), ptrTo(workload.OpenBaoGID)
	return job
}

// JobOfOperation reports whether job belongs to operation opID: it carries
// LabelOperation with that value. The controller ignores every other Job it
// finds. Why: a Job of an earlier operation, finished and kept for
// JobTTLSecondsAfterFinished, says nothing about this one, even under the
// same name. A Job without the label (built by the deprecated StepDownJob,
// or by an older baokeeper) belongs to no operation, and an empty opID
// matches no Job.
func JobOfOperation(job *batchv1.Job, opID string) bool {
	return job != nil && opID != "" && job.Labels[LabelOperation] == opID
}

// ExecutorJob builds an executor Job of the cluster.
//
// Why these settings: backoffLimit 0 because a retry is the controller's
// decision (it must respect OpenBao's 10 s cooldown and count attempts in
// status); no Kubernetes API token because the executor talks only to
// OpenBao (and object storage), with a projected token whose audience only
// OpenBao accepts; a read-only root filesystem and no capabilities because it
// needs neither. The result goes to the termination message, which the
// controller reads from the pod's status.
func ExecutorJob(c *baov1.OpenBaoCluster, spec ExecutorJobSpec) *batchv1.Job {
	n := workload.NamesFor(c)
	labels := ExecutorLabels(c, spec.Step, spec.Member)
	if spec.Operation != "" {
		labels[LabelOperation] = spec.Operation
	}
	memLimit := spec.MemoryLimit
	if memLimit == "" {
		memLimit = "128Mi"
	}

	container := corev1.Container{
		Name:            ExecutorContainerName,
		Image:           spec.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            spec.Args,
		Env:             spec.Env,
		VolumeMounts: append([]corev1.VolumeMount{
			{Name: "token", MountPath: TokenMountPath, ReadOnly: true},
			{Name: "ca", MountPath: CAMountPath, ReadOnly: true},
		}, spec.VolumeMounts...),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("32Mi"),
			},
			Limits: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse(memLimit),
			},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptrTo(true),
			RunAsUser:                ptrTo(ExecutorUID),
			RunAsGroup:               ptrTo(ExecutorUID),
			AllowPrivilegeEscalation: ptrTo(false),
			ReadOnlyRootFilesystem:   ptrTo(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}

	ex := c.Spec.Upgrade.Executor
	if len(ex.Resources.Requests) > 0 || len(ex.Resources.Limits) > 0 {
		container.Resources = *ex.Resources.DeepCopy()
	}
	sa, audience := n.ExecutorServiceAccount(), workload.JWTAudience(c)
	if spec.ServiceAccountName != "" {
		sa = spec.ServiceAccountName
	}
	if spec.Audience != "" {
		audience = spec.Audience
	}
	ttl := JobTTLSecondsAfterFinished
	if spec.TTLSecondsAfterFinished != nil {
		ttl = *spec.TTLSecondsAfterFinished
	}
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            spec.Name,
			Namespace:       c.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{workload.OwnerReference(c)},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptrTo(int32(0)),
			TTLSecondsAfterFinished: ptrTo(ttl),
			ActiveDeadlineSeconds:   ptrTo(spec.ActiveDeadlineSeconds),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           sa,
					AutomountServiceAccountToken: ptrTo(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptrTo(true),
						RunAsUser:      ptrTo(ExecutorUID),
						RunAsGroup:     ptrTo(ExecutorUID),
						FSGroup:        ptrTo(ExecutorUID),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{container},
					Volumes: append([]corev1.Volume{
						{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
							Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
								Audience:          audience,
								ExpirationSeconds: ptrTo(TokenExpirationSeconds),
								Path:              "token",
							}}},
						}}},
						{Name: "ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: tlsSecretName(c),
							Items:      []corev1.KeyToPath{{Key: workload.CACertKey, Path: workload.CACertKey}},
						}}},
					}, spec.Volumes...),
				},
			},
		},
	}
	workload.ApplyPlacement(&job.Spec.Template.Spec, ex.Placement, c.Spec.ImagePullSecrets)
	return job
}

// TerminationMessage returns the termination message of the executor container
// of a finished executor pod, or "".
func TerminationMessage(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == ExecutorContainerName && cs.State.Terminated != nil {
			return cs.State.Terminated.Message
		}
	}
	return ""
}

// JobPhaseOf maps an executor Job to the phase the rolling state machine
// reads, with the time it finished and, for a failure, the reason and message
// of its Failed condition.
//
// Only the terminal conditions count (Complete, Failed). FailureTarget and
// SuccessCriteriaMet come first, while the pod may still run, and a step-down
// that is still running must not be followed by another one. A Job that is
// being deleted reports Running: its status says nothing about the current
// attempt any more, and a new Job under the same name cannot be created until
// it is gone. A nil Job is JobNone.
func JobPhaseOf(job *batchv1.Job) (phase operation.JobPhase, finishedAt time.Time, message string) {
	if job == nil {
		return operation.JobNone, time.Time{}, ""
	}
	if job.DeletionTimestamp != nil {
		return operation.JobRunning, time.Time{}, fmt.Sprintf("Job %s is being deleted", job.Name)
	}
	for _, cond := range job.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			at := cond.LastTransitionTime.Time
			if job.Status.CompletionTime != nil {
				at = job.Status.CompletionTime.Time
			}
			return operation.JobSucceeded, at, ""
		case batchv1.JobFailed:
			msg := cond.Reason
			if cond.Message != "" {
				msg = strings.TrimSpace(msg + ": " + cond.Message)
			}
			if msg == "" {
				msg = fmt.Sprintf("Job %s failed", job.Name)
			}
			return operation.JobFailed, cond.LastTransitionTime.Time, msg
		}
	}
	return operation.JobRunning, time.Time{}, ""
}

func ptrTo[T any](v T) *T { return &v }

// PodStartGrace is how long an executor pod may wait to start before a waiting
// reason that does not heal on its own (see StuckPod) fails its attempt.
const PodStartGrace = 60 * time.Second

// stuckReasons are container waiting reasons that do not go away without a person:
// an image that cannot be pulled or run, a Secret or ConfigMap that is missing.
var stuckReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// StuckPod says why an executor pod cannot start, once it has waited longer than
// grace with a reason that does not heal on its own; "" otherwise. Without it, such a
// pod holds its attempt until the Job's activeDeadlineSeconds (30 minutes for a
// snapshot), and three attempts cost an hour and a half before anyone is told.
func StuckPod(pod *corev1.Pod, now time.Time, grace time.Duration) string {
	if pod == nil || now.Sub(pod.CreationTimestamp.Time) < grace {
		return ""
	}
	for _, cs := range pod.Status.ContainerStatuses {
		w := cs.State.Waiting
		if w == nil || !slices.Contains(stuckReasons, w.Reason) {
			continue
		}
		msg := fmt.Sprintf("executor pod %s cannot start its container %s: %s", pod.Name, cs.Name, w.Reason)
		if w.Message != "" {
			msg += " (" + w.Message + ")"
		}
		return msg
	}
	return ""
}
