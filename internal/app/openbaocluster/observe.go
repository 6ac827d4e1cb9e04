package openbaocluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// observation is everything one pass knows about the world, read once at its start.
type observation struct {
	now time.Time

	sts  *appsv1.StatefulSet
	pods map[string]*corev1.Pod

	sealSecret *corev1.Secret
	ca         workload.CAState
	serving    *workload.KeyPair
	servingCA  []byte
	// userTLS is the user-provided TLS Secret (spec.tls.secretName), nil when unused or missing.
	userTLS *corev1.Secret

	// health is sys/health of each Ready member, by pod name.
	health map[string]*openbao.Health
	// healthErrs are the members whose health could not be read, with the reason.
	healthErrs map[string]string
	// existing are the objects found under the names the cluster writes, with their
	// owners (workload.Conflicts decides whether they are the cluster's).
	existing []workload.ExistingObject

	// autopilot is the Raft view from autopilot state; nil when it could not be read
	// (autopilotErr says why), or when no member was Ready.
	autopilot    *openbao.AutopilotState
	autopilotErr string
}

// pass carries what one reconcile decided, for the status computation.
type pass struct {
	cluster *baov1.OpenBaoCluster
	obs     *observation

	decision *upgrade.Decision
	refusal  string
	// refusalReason is the SpecValid reason of a refusal.
	refusalReason baov1.Reason
	// blocked says why the pass stopped without a spec problem (for example a missing seal key).
	blocked string
	// blockedReason is the Degraded reason of blocked.
	blockedReason baov1.Reason
	tlsReason     baov1.Reason
	tlsMessage    string
	issuedCert    bool
	createdSTS    bool
	renewAt       time.Time
	notAfter      time.Time
	// certSHA256 is the SHA-256 of the serving certificate the Secret holds.
	certSHA256  string
	runningImg  string
	initialized bool
	// jwtAudience is the audience this pass rendered into the initialization.
	jwtAudience string
}

func (r *Reconciler) observe(ctx context.Context, c *baov1.OpenBaoCluster) (*observation, error) {
	n := workload.NamesFor(c)
	obs := &observation{now: r.Clock.Now(), pods: map[string]*corev1.Pod{}, health: map[string]*openbao.Health{}, healthErrs: map[string]string{}}

	sts := &appsv1.StatefulSet{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: n.StatefulSet()}, sts); err == nil {
		obs.sts = sts
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("failed to get StatefulSet %s/%s: %w", c.Namespace, n.StatefulSet(), err)
	}

	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(workload.SelectorLabels(c))); err != nil {
		return nil, fmt.Errorf("failed to list pods of %s/%s: %w", c.Namespace, c.Name, err)
	}
	for i := range pods.Items {
		obs.pods[pods.Items[i].Name] = &pods.Items[i]
	}

	var err error
	if obs.sealSecret, err = r.getSecret(ctx, r.Client, c.Namespace, n.SealSecret()); err != nil {
		return nil, err
	}
	if c.Spec.TLS.SecretName != "" {
		if obs.userTLS, err = r.getSecret(ctx, r.APIReader, c.Namespace, c.Spec.TLS.SecretName); err != nil {
			return nil, err
		}
	} else {
		caSecret, err := r.getSecret(ctx, r.Client, c.Namespace, n.CASecret())
		if err != nil {
			return nil, err
		}
		obs.ca = workload.CAStateOf(caSecret)
		tlsSecret, err := r.getSecret(ctx, r.Client, c.Namespace, n.TLSSecret())
		if err != nil {
			return nil, err
		}
		if tlsSecret != nil {
			obs.serving = &workload.KeyPair{CertPEM: tlsSecret.Data[workload.TLSCertKey], KeyPEM: tlsSecret.Data[workload.TLSKeyKey]}
			obs.servingCA = tlsSecret.Data[workload.CACertKey]
		}
	}

	if obs.existing, err = r.observeExisting(ctx, c); err != nil {
		return nil, err
	}
	r.observeHealth(ctx, c, obs)
	return obs, nil
}

// observeHealth reads sys/health of every Ready member. A member that cannot be read
// is recorded, not fatal: the status says which one and why.
func (r *Reconciler) observeHealth(ctx context.Context, c *baov1.OpenBaoCluster, obs *observation) {
	caPEM := obs.clusterCA()
	if r.OpenBao == nil || len(caPEM) == 0 {
		return
	}
	names := make([]string, 0, len(obs.pods))
	for name, pod := range obs.pods {
		if podReady(pod) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return
	}
	slices.Sort(names)
	bao, err := r.OpenBao.ForCluster(c, caPEM)
	if err != nil {
		for _, name := range names {
			obs.healthErrs[name] = err.Error()
		}
		return
	}
	n := workload.NamesFor(c)
	// Every member at once, within one deadline for the pass: a member that does not
	// answer costs the pass one timeout, not one per member.
	hctx, cancel := context.WithTimeout(ctx, r.healthTimeout())
	type answer struct {
		name string
		h    *openbao.Health
		err  error
	}
	answers := make(chan answer, len(names))
	for _, name := range names {
		go func() {
			addr := fmt.Sprintf("https://%s.%s.%s.svc:%d", name, n.HeadlessService(), c.Namespace, workload.APIPort)
			h, err := bao.Health(hctx, addr)
			answers <- answer{name, h, err}
		}()
	}
	for range names {
		a := <-answers
		if a.err != nil {
			ctrl.LoggerFrom(ctx).V(4).Info("Reading member health failed", "Pod", a.name, "reason", a.err.Error())
			obs.healthErrs[a.name] = a.err.Error()
			continue
		}
		obs.health[a.name] = a.h
	}
	cancel()
	if len(obs.health) == 0 {
		return
	}
	actx, cancel := context.WithTimeout(ctx, r.healthTimeout())
	defer cancel()
	st, err := bao.AutopilotState(actx)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Reading autopilot state failed", "reason", err.Error())
		obs.autopilotErr = err.Error()
		return
	}
	obs.autopilot = st
}

func (r *Reconciler) healthTimeout() time.Duration {
	if r.Config.HealthTimeout > 0 {
		return r.Config.HealthTimeout
	}
	return 5 * time.Second
}

func (r *Reconciler) getSecret(ctx context.Context, rd client.Reader, ns, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := rd.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get Secret %s/%s: %w", ns, name, err)
	}
	return s, nil
}

// readFailed reports whether a read of OpenBao failed in this pass: a Ready
// member's sys/health, or autopilot state while some member could be read.
func (o *observation) readFailed() bool {
	return len(o.healthErrs) > 0 || (len(o.health) > 0 && o.autopilot == nil)
}

// clusterCA is the CA that members' certificates chain to.
func (o *observation) clusterCA() []byte {
	if o.userTLS != nil {
		return o.userTLS.Data[workload.CACertKey]
	}
	if len(o.servingCA) > 0 {
		return o.servingCA
	}
	if o.ca.Current != nil {
		return o.ca.Bundle(o.now)
	}
	return nil
}

// stsCurrent reports whether the StatefulSet controller has seen the latest spec;
// its status counts only then.
func (o *observation) stsCurrent() bool {
	return o.sts != nil && o.sts.Status.ObservedGeneration >= o.sts.Generation
}

func podReady(p *corev1.Pod) bool {
	if p == nil || !p.DeletionTimestamp.IsZero() {
		return false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// wasInitialized reports whether the cluster ever reported initialized. It is sticky:
// once a member was Ready (which requires initialized and unsealed), initialization
// stanzas are never rendered again.
func wasInitialized(c *baov1.OpenBaoCluster) bool {
	return meta.IsStatusConditionTrue(c.Status.Conditions, string(baov1.ConditionInitialized))
}

// initializedNow is wasInitialized, or a member is Ready in this observation.
func initializedNow(c *baov1.OpenBaoCluster, obs *observation) bool {
	if wasInitialized(c) {
		return true
	}
	for _, pod := range obs.pods {
		if podReady(pod) {
			return true
		}
	}
	return false
}

func normalizeVersion(v string) string { return strings.TrimPrefix(v, "v") }

// stsReplicas is the StatefulSet's replicas, which a membership change moves one
// member at a time toward spec.replicas; 0 without a StatefulSet.
func (o *observation) stsReplicas() int32 {
	if o.sts == nil || o.sts.Spec.Replicas == nil {
		return 0
	}
	return *o.sts.Spec.Replicas
}
