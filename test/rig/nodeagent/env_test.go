package nodeagent

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// fakeObjects is an objectReader over maps keyed "namespace/name".
type fakeObjects struct {
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
}

func (f fakeObjects) Secret(ns, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (f fakeObjects) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	if c, ok := f.configMaps[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func testObjects() fakeObjects {
	return fakeObjects{
		secrets: map[string]*corev1.Secret{"prod/creds": {Data: map[string][]byte{"token": []byte("s3cret")}}},
		configMaps: map[string]*corev1.ConfigMap{
			"prod/cfg": {Data: map[string]string{"LEVEL": "debug", "MODE": "ha"}},
		},
	}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func TestContainerEnv(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "bao-0", UID: "u-1", Labels: map[string]string{"app": "bao"}},
		Spec:       corev1.PodSpec{NodeName: "rig-node-1", ServiceAccountName: "bao"},
	}
	facts := podFacts{PodIP: "10.250.0.10", HostIP: "10.250.0.1", NodeAllocatable: nodeCapacity()}
	cases := []struct {
		name, reason string
		env          []corev1.EnvVar
		envFrom      []corev1.EnvFromSource
		resources    corev1.ResourceRequirements
		want         map[string]string
		absent       []string
		wantErr      string
	}{
		{
			name: "field refs", reason: "downward API fields resolve, the pod IP from the agent",
			env: []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace"),
				fieldEnv("POD_UID", "metadata.uid"), fieldEnv("POD_IP", "status.podIP"), fieldEnv("HOST_IP", "status.hostIP"),
				fieldEnv("NODE", "spec.nodeName"), fieldEnv("SA", "spec.serviceAccountName"), fieldEnv("APP", "metadata.labels['app']")},
			want: map[string]string{"POD_NAME": "bao-0", "POD_NAMESPACE": "prod", "POD_UID": "u-1", "POD_IP": "10.250.0.10",
				"HOST_IP": "10.250.0.1", "NODE": "rig-node-1", "SA": "bao", "APP": "bao"},
		},
		{
			name: "expansion order", reason: "$(VAR) expands with variables defined before, later ones stay literal",
			env: []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), {Name: "ADDR", Value: "https://$(POD_NAME).x:$(PORT)"}, {Name: "PORT", Value: "8200"},
				{Name: "ESC", Value: "$$(POD_NAME)"}},
			want: map[string]string{"ADDR": "https://bao-0.x:$(PORT)", "ESC": "$(POD_NAME)"},
		},
		{
			name: "defaults", reason: "PATH, HOSTNAME and the kubernetes Service variables are set",
			want: map[string]string{"PATH": defaultPath, "HOSTNAME": "bao-0", "KUBERNETES_SERVICE_HOST": "10.250.0.1",
				"KUBERNETES_SERVICE_PORT": "6443", "KUBERNETES_PORT": "tcp://10.250.0.1:6443"},
		},
		{
			name: "override", reason: "a later definition replaces an earlier one",
			env:  []corev1.EnvVar{{Name: "PATH", Value: "/opt/bin"}, {Name: "X", Value: "1"}, {Name: "X", Value: "2"}},
			want: map[string]string{"PATH": "/opt/bin", "X": "2"},
		},
		{
			name: "secret and configmap keys", reason: "key refs read the objects",
			env: []corev1.EnvVar{
				{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}},
				{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "LEVEL"}}},
			},
			want: map[string]string{"TOKEN": "s3cret", "LEVEL": "debug"},
		},
		{
			name: "optional missing", reason: "an optional missing Secret or key leaves the variable unset",
			env: []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "k", Optional: ptr.To(true)}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "nokey", Optional: ptr.To(true)}}},
			},
			absent: []string{"A", "B"},
		},
		{
			name: "required secret missing", reason: "a required missing Secret is a config error naming it, not its values",
			env:     []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "k"}}}},
			wantErr: `secret "nope" not found`,
		},
		{
			name: "required key missing", reason: "a required missing key is a config error naming the key",
			env:     []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "other"}}}},
			wantErr: "couldn't find key other in Secret prod/creds",
		},
		{
			name: "envFrom", reason: "envFrom adds every key with the prefix, env wins over it",
			envFrom: []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
			env:     []corev1.EnvVar{{Name: "CFG_MODE", Value: "single"}},
			want:    map[string]string{"CFG_LEVEL": "debug", "CFG_MODE": "single"},
		},
		{
			name: "resource field", reason: "resourceFieldRef divides and rounds up; no limit falls back to the node",
			resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1536Mi")}},
			env: []corev1.EnvVar{
				{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Gi")}}},
				{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			},
			want: map[string]string{"MEM": "2", "CPU": "8"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctr := &corev1.Container{Name: "bao", Env: tc.env, EnvFrom: tc.envFrom, Resources: tc.resources}
			l, err := containerEnv(pod, ctr, facts, "10.250.0.1", "6443", "bao-0", testObjects())
			if tc.wantErr != "" {
				var ce *configError
				g.Expect(errors.As(err, &ce)).To(BeTrue(), tc.reason)
				g.Expect(err.Error()).To(ContainSubstring(tc.wantErr), tc.reason)
				g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"), "errors never carry secret values")
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tc.reason)
			m := l.asMap()
			for k, v := range tc.want {
				g.Expect(m).To(HaveKeyWithValue(k, v), tc.reason)
			}
			for _, k := range tc.absent {
				g.Expect(m).NotTo(HaveKey(k), tc.reason)
			}
		})
	}
}
