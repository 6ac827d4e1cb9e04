package bluegreen

import (
	"fmt"
	"maps"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// StepLabelValidate is the executorjob.LabelStep value of validation hook Jobs.
const StepLabelValidate = "validate"

// Environment of the validation hook's container, beside the user's env.
const (
	// EnvAddr is the API address of green's first member.
	EnvAddr = "BAO_ADDR"
	// EnvGreenAddrs lists the API addresses of every green member, comma-separated.
	EnvGreenAddrs = "BAOKEEPER_GREEN_ADDRS"
	// EnvCACert is the path of the cluster CA certificate.
	EnvCACert = "BAO_CACERT"
)

// ValidationJobName is the name of one attempt of the validation hook Job.
func ValidationJobName(c *baov1.OpenBaoCluster, opID string, attempt int32) string {
	return executorjob.BoundedName(fmt.Sprintf("%s-%s-%s-%d", c.Name, StepLabelValidate, opID, attempt))
}

// ValidationJob builds the validation hook Job of one attempt: the user's image,
// command, args and env, with green's addresses and the cluster CA added. It gets
// no OpenBao role and no Kubernetes token: a check of green goes through green's
// API like any client's. activeDeadlineSeconds is the hook's timeout, so a hook
// that hangs fails like one that exits non-zero.
func ValidationJob(c *baov1.OpenBaoCluster, opID string, attempt int32, hook *baov1.ValidationHookSpec, timeout time.Duration, greenAddrs []string, caSecret string) *batchv1.Job {
	labels := executorjob.ExecutorLabels(c, StepLabelValidate, "")
	labels[executorjob.LabelOperation] = opID
	caFile := executorjob.CAMountPath + "/" + workload.CACertKey
	env := []corev1.EnvVar{
		{Name: EnvAddr, Value: first(greenAddrs)},
		{Name: EnvGreenAddrs, Value: strings.Join(greenAddrs, ",")},
		{Name: EnvCACert, Value: caFile},
	}
	env = append(env, hook.Env...)
	deadline := int64(timeout.Seconds())
	if deadline < 1 {
		deadline = 1
	}
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            ValidationJobName(c, opID, attempt),
			Namespace:       c.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{workload.OwnerReference(c)},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptrTo(int32(0)),
			TTLSecondsAfterFinished: ptrTo(executorjob.JobTTLSecondsAfterFinished),
			ActiveDeadlineSeconds:   &deadline,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptrTo(false),
					SecurityContext: &corev1.PodSecurityContext{
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    "validate",
						Image:   hook.Image,
						Command: hook.Command,
						Args:    hook.Args,
						Env:     env,
						VolumeMounts: []corev1.VolumeMount{
							{Name: "ca", MountPath: executorjob.CAMountPath, ReadOnly: true},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptrTo(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Volumes: []corev1.Volume{
						{Name: "ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: caSecret,
							Items:      []corev1.KeyToPath{{Key: workload.CACertKey, Path: workload.CACertKey}},
						}}},
					},
				},
			},
		},
	}
}

func first(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}

func ptrTo[T any](v T) *T { return &v }
