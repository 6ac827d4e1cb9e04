package openbaocluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// conflictRequeue is how soon a pass that lost a write race runs again.
const conflictRequeue = time.Second

// reconcileWorkload applies every object of the cluster in dependency order.
func (r *Reconciler) reconcileWorkload(ctx context.Context, p *pass) (ctrl.Result, error) {
	steps := []struct {
		name string
		fn   func(context.Context, *pass) error
	}{
		{"identities", r.applyIdentities},
		{"seal", r.ensureSealKey},
		{"tls", r.ensureTLS},
		{"config", r.applyConfig},
		{"services", r.applyServices},
		{"network policy", r.applyNetworkPolicy},
		{"statefulset", r.applyStatefulSet},
	}
	for _, s := range steps {
		if err := s.fn(ctx, p); err != nil {
			if apierrors.IsConflict(err) {
				// The upgrade manager changed the StatefulSet since it was read: read
				// again shortly instead of logging an error.
				ctrl.LoggerFrom(ctx).V(1).Info("Object changed while applying; retrying", "step", s.name)
				return ctrl.Result{RequeueAfter: conflictRequeue}, nil
			}
			if p.blocked == "" {
				// Whatever keeps the cluster from progressing is in its status and an
				// event, not only in the log: an admission webhook or policy, a quota,
				// a missing permission, an immutable field.
				p.blocked, p.blockedReason = fmt.Sprintf("The API server refused a write of the cluster's %s objects: %v. "+
					"Fix what it names (an admission policy or webhook, a quota, the operator's permissions); baokeeper retries with backoff", s.name, err),
					baov1.ReasonApplyFailed
			}
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) applyIdentities(ctx context.Context, p *pass) error {
	for _, sa := range workload.ServiceAccounts(p.cluster) {
		if err := applyObject(ctx, r.Client, sa); err != nil {
			return err
		}
	}
	role, binding := workload.ServiceRegistrationRBAC(p.cluster)
	execRole, execBinding := workload.ExecutorRBAC(p.cluster)
	for _, obj := range []client.Object{role, binding, execRole, execBinding, workload.ExecutorMailbox(p.cluster), workload.ExecutorKeys(p.cluster)} {
		if err := applyObject(ctx, r.Client, obj); err != nil {
			return err
		}
	}
	return nil
}

// ensureSealKey creates the static-seal key once. It is never updated: a second key
// would make the Raft data unreadable.
func (r *Reconciler) ensureSealKey(ctx context.Context, p *pass) error {
	if p.cluster.GetSealType() != baov1.StaticSeal || p.obs.sealSecret != nil {
		return nil
	}
	if wasInitialized(p.cluster) {
		p.blockedReason = baov1.ReasonSealKeyMissing
		p.blocked = fmt.Sprintf("The static-seal key Secret %s is missing, but the cluster was initialized with it: restore the Secret from your backup. baokeeper does not generate a new key, because members could no longer unseal their data",
			workload.NamesFor(p.cluster).SealSecret())
		return reconcile.TerminalError(errors.New(p.blocked))
	}
	if p.cluster.Spec.Bootstrap != nil {
		return r.copySealKey(ctx, p)
	}
	s, err := workload.SealSecret(p.cluster, r.Rand)
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Creating static-seal key", "Secret", s.Name)
	if err := r.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create seal Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// copySealKey creates the static-seal key of a cluster that starts from a snapshot
// as a copy of the key the snapshot's data was sealed with: a new key could not
// unseal it. Without that key the cluster is not created.
func (r *Reconciler) copySealKey(ctx context.Context, p *pass) error {
	c := p.cluster
	name := workload.SourceSealSecret(c)
	src, err := r.getSecret(ctx, r.APIReader, c.Namespace, name)
	if err != nil {
		return err
	}
	source := &baov1.OpenBaoCluster{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.BootstrapSourceCluster()}, source); {
	case apierrors.IsNotFound(err):
		source = nil
	case err != nil:
		return fmt.Errorf("failed to get the snapshot's source cluster %s/%s: %w", c.Namespace, c.BootstrapSourceCluster(), err)
	}
	if why := snapshot.SealSourceRefusal(c, source, src); why != "" {
		p.blockedReason = baov1.ReasonSealKeyRefused
		p.blocked = why
		return errors.New(p.blocked)
	}
	var key []byte
	if src != nil {
		key = src.Data[workload.SealKeyKey]
	}
	if len(key) == 0 {
		p.blockedReason = baov1.ReasonSealKeyMissing
		p.blocked = fmt.Sprintf("spec.bootstrap.fromSnapshot needs the static-seal key the snapshot's data was sealed with, in Secret %s (key %q) of namespace %s, and it is missing: "+
			"create it from your backup of %s's seal Secret, or name the Secret that holds it in spec.bootstrap.fromSnapshot.sealKeySecretRef. Nothing was created",
			name, workload.SealKeyKey, c.Namespace, c.BootstrapSourceCluster())
		return errors.New(p.blocked)
	}
	s := workload.SealSecretWithKey(c, key)
	ctrl.LoggerFrom(ctx).Info("Creating static-seal key from the snapshot source's", "Secret", s.Name, "from", name)
	if err := r.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create seal Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// ensureTLS keeps a serving certificate that covers every member: the user's, or one
// issued by the operator's CA and renewed before it expires.
func (r *Reconciler) ensureTLS(ctx context.Context, p *pass) error {
	c, obs := p.cluster, p.obs
	if c.Spec.TLS.SecretName != "" {
		return r.checkUserTLS(p)
	}
	ca := obs.ca
	if renew, reason := workload.CADecision(ca.Current, obs.now); renew {
		ctrl.LoggerFrom(ctx).Info("Issuing cluster CA", "reason", reason)
		kp, err := workload.NewCA(c, obs.now, r.Rand)
		if err != nil {
			return err
		}
		// The CA it replaces stays trusted (ca.crt holds both) and keeps signing the
		// serving certificate until the new one is known everywhere (CABundleSoak).
		ca = ca.Rotate(kp, obs.now)
		if err := applyObject(ctx, r.Client, withOwner(workload.CASecretFor(c, ca, obs.now), c)); err != nil {
			return err
		}
	}
	signer, bundle := ca.Signer(obs.now), ca.Bundle(obs.now)
	serving := obs.serving
	renew, reason, renewAt := workload.ServingDecision(c, serving, signer.CertPEM, obs.now)
	switch {
	case renew:
		ctrl.LoggerFrom(ctx).Info("Issuing serving certificate", "reason", reason)
		kp, err := workload.IssueServing(c, signer, obs.now, r.Rand)
		if err != nil {
			return err
		}
		if err := applyObject(ctx, r.Client, withOwner(workload.TLSSecret(c, kp, bundle), c)); err != nil {
			return err
		}
		p.issuedCert = true
		_, _, renewAt = workload.ServingDecision(c, &kp, signer.CertPEM, obs.now)
		serving = &kp
	case !bytes.Equal(obs.servingCA, bundle):
		// A rotated CA is published beside the old one before any certificate it
		// signs is served; the serving certificate stays.
		ctrl.LoggerFrom(ctx).Info("Publishing the cluster CA bundle", "Secret", workload.NamesFor(c).TLSSecret())
		if err := applyObject(ctx, r.Client, withOwner(workload.TLSSecret(c, *serving, bundle), c)); err != nil {
			return err
		}
	}
	if at := ca.SwitchAt(obs.now); !at.IsZero() && (renewAt.IsZero() || at.Before(renewAt)) {
		renewAt = at
	}
	p.renewAt = renewAt
	p.certSHA256 = workload.CertificateSHA256(serving.CertPEM)
	if na, err := workload.CertNotAfter(serving.CertPEM); err == nil {
		p.notAfter = na
	}
	p.tlsReason = baov1.ReasonCertificateIssued
	p.tlsMessage = fmt.Sprintf("Serving certificate %s is valid until %s", workload.NamesFor(c).TLSSecret(), p.notAfter.UTC().Format("2006-01-02T15:04:05Z"))
	return nil
}

// keepServedCertificate keeps the certificate hash the template carries, so that an
// unusable user Secret is not rolled out to the members.
func (p *pass) keepServedCertificate() {
	if t := p.cluster.Status.TLS; t != nil {
		p.certSHA256 = t.CertificateSHA256
		if t.NotAfter != nil {
			p.notAfter = t.NotAfter.Time
		}
	}
}

func (r *Reconciler) checkUserTLS(p *pass) error {
	s := p.obs.userTLS
	name := p.cluster.Spec.TLS.SecretName
	switch {
	case s == nil:
		p.tlsReason, p.tlsMessage = baov1.ReasonUserCertificateMissing,
			fmt.Sprintf("Secret %s (spec.tls.secretName) does not exist: create it with tls.crt, tls.key and ca.crt", name)
	case len(s.Data[workload.TLSCertKey]) == 0 || len(s.Data[workload.TLSKeyKey]) == 0 || len(s.Data[workload.CACertKey]) == 0:
		p.tlsReason, p.tlsMessage = baov1.ReasonUserCertificateMissing,
			fmt.Sprintf("Secret %s (spec.tls.secretName) must hold tls.crt, tls.key and ca.crt", name)
		p.keepServedCertificate()
	default:
		if problem := workload.UserCertificateProblem(p.cluster, s.Data[workload.TLSCertKey]); problem != "" {
			// Rolling a certificate out that the members or their clients cannot use
			// would take the cluster down one member at a time: the template keeps the
			// certificate the members serve, and the condition says what to fix.
			p.tlsReason, p.tlsMessage = baov1.ReasonUserCertificateInvalid,
				fmt.Sprintf("Secret %s (spec.tls.secretName): %s; members keep the certificate they serve until it is fixed", name, problem)
			p.keepServedCertificate()
			return nil
		}
		p.tlsReason, p.tlsMessage = baov1.ReasonUserCertificate, fmt.Sprintf("Using the user-provided Secret %s", name)
		p.certSHA256 = workload.CertificateSHA256(s.Data[workload.TLSCertKey])
		if na, err := workload.CertNotAfter(s.Data[workload.TLSCertKey]); err == nil {
			p.notAfter = na
		}
	}
	return nil
}

func (r *Reconciler) applyConfig(ctx context.Context, p *pass) error {
	c := p.cluster
	// Once the initial members formed the cluster (currentVersion is seeded when all
	// of them were Ready), every later join is as a non-voter that baokeeper promotes.
	cfg, err := workload.RenderConfigFor(c, workload.ConfigOptions{JoinAsNonVoter: c.Status.CurrentVersion != ""})
	if err != nil {
		return err
	}
	initHCL := workload.InitializeDisabled
	if !initializedNow(c, p.obs) {
		iss, err := r.Issuer.Issuer(ctx)
		if err != nil {
			return fmt.Errorf("failed to read the service-account issuer for %s/%s: %w", c.Namespace, c.Name, err)
		}
		sa := r.Config.ControllerServiceAccount
		p.jwtAudience = workload.JWTAudience(c)
		initHCL, err = workload.RenderInitialize(c, workload.AuthParams{
			Issuer:            iss.URL,
			PublicKeysPEM:     iss.PublicKeysPEM,
			ControllerSubject: workload.ServiceAccountSubject(sa.Namespace, sa.Name),
			Audience:          p.jwtAudience,
		})
		if err != nil {
			return err
		}
	}
	audience := p.jwtAudience
	if audience == "" {
		audience = recordedAudience(c, p.obs)
	}
	// The requests go in a Secret (they can carry credentials); the ConfigMap holds
	// them only for a StatefulSet that mounts it whole and has yet to initialize.
	if err := applyObject(ctx, r.Client, workload.InitSecret(c, initHCL)); err != nil {
		return err
	}
	cmInit := workload.InitializeDisabled
	if workload.UsesConfigMapInit(p.obs.sts) {
		cmInit = initHCL
	}
	return applyObject(ctx, r.Client, workload.ConfigMap(c, cfg, cmInit, audience))
}

func (r *Reconciler) applyServices(ctx context.Context, p *pass) error {
	for _, svc := range workload.Services(p.cluster) {
		n := workload.NamesFor(p.cluster)
		if (svc.Name == n.ClientService() || svc.Name == n.ActiveService()) && !p.cluster.Restored() {
			// A cluster that starts from a snapshot serves no client before its data
			// is the snapshot's: a write into the data the restore replaces would be
			// acknowledged and lost. The controller reads member 0 directly meanwhile.
			continue
		}
		if err := applyObject(ctx, r.Client, svc); err != nil {
			return err
		}
	}
	return applyObject(ctx, r.Client, workload.PodDisruptionBudget(p.cluster))
}

// applyNetworkPolicy keeps the members' NetworkPolicy while spec.networkPolicy is
// enabled, and deletes the one the cluster controls once it is not.
func (r *Reconciler) applyNetworkPolicy(ctx context.Context, p *pass) error {
	c := p.cluster
	if c.Spec.NetworkPolicy.Enabled {
		return applyObject(ctx, r.Client, workload.NetworkPolicy(c, r.Config.ControllerServiceAccount.Namespace))
	}
	np := &networkingv1.NetworkPolicy{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: workload.NamesFor(c).NetworkPolicy()}, np)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to read NetworkPolicy %s/%s: %w", c.Namespace, np.Name, err)
	case !metav1.IsControlledBy(np, c):
		// Someone else's policy of the same name: not the cluster's to delete.
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("Deleting the members' NetworkPolicy: spec.networkPolicy.enabled is false", "NetworkPolicy", np.Name)
	if err := r.Client.Delete(ctx, np, client.Preconditions{UID: &np.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete NetworkPolicy %s/%s: %w", c.Namespace, np.Name, err)
	}
	return nil
}

// applyStatefulSet creates the StatefulSet with the image of spec.version, or keeps an
// existing one's image: the workload loop never changes what a running cluster runs.
func (r *Reconciler) applyStatefulSet(ctx context.Context, p *pass) error {
	c := p.cluster
	tlsName := c.Spec.TLS.SecretName
	if tlsName == "" {
		tlsName = workload.NamesFor(c).TLSSecret()
	}
	annotations, err := workload.TemplateAnnotations(c)
	if err != nil {
		return err
	}
	sts, err := workload.StatefulSet(c, workload.StatefulSetParams{
		Image:               upgrade.ResolveImage(c.Spec.Image, c.Spec.Version),
		TLSSecretName:       tlsName,
		Existing:            p.obs.sts,
		TemplateAnnotations: annotations,
	})
	if err != nil {
		return err
	}
	if p.obs.sts != nil {
		// The image and the replicas of an existing StatefulSet belong to the upgrade
		// manager (upgrades and scaling), and the builder keeps what it observed.
		// Applying with the observed resourceVersion as a precondition means a pass that
		// read the StatefulSet before the upgrade manager changed it fails with a
		// conflict and retries, instead of writing the old image or replicas back.
		sts.ResourceVersion = p.obs.sts.ResourceVersion
	}
	if p.obs.sts == nil {
		ctrl.LoggerFrom(ctx).Info("Creating StatefulSet", "StatefulSet", sts.Name, "image", workload.ContainerImage(&sts.Spec.Template.Spec))
		p.createdSTS = true
	}
	p.runningImg = workload.ContainerImage(&sts.Spec.Template.Spec)
	return applyObject(ctx, r.Client, sts)
}

func withOwner[T client.Object](obj T, c *baov1.OpenBaoCluster) T {
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(), workload.OwnerReference(c)))
	return obj
}
