package nodeagent

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
)

// defaultPath is the PATH of a container whose spec sets none (what most images set).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// objectReader reads the Secrets and ConfigMaps that env vars and volumes refer to. A
// missing object is an error for which apierrors.IsNotFound is true.
type objectReader interface {
	Secret(namespace, name string) (*corev1.Secret, error)
	ConfigMap(namespace, name string) (*corev1.ConfigMap, error)
}

// podFacts are the values of a pod that the API object does not hold yet.
type podFacts struct {
	PodIP           string
	HostIP          string
	NodeAllocatable corev1.ResourceList
}

// envVar is one resolved environment variable.
type envVar struct{ Name, Value string }

// envList is an ordered environment in which a later definition replaces an earlier
// one in place.
type envList struct {
	vars  []envVar
	index map[string]int
}

func (l *envList) set(name, value string) {
	if l.index == nil {
		l.index = map[string]int{}
	}
	if i, ok := l.index[name]; ok {
		l.vars[i].Value = value
		return
	}
	l.index[name] = len(l.vars)
	l.vars = append(l.vars, envVar{name, value})
}

func (l *envList) get(name string) (string, bool) {
	if i, ok := l.index[name]; ok {
		return l.vars[i].Value, true
	}
	return "", false
}

func (l *envList) asMap() map[string]string {
	m := make(map[string]string, len(l.vars))
	for _, v := range l.vars {
		m[v.Name] = v.Value
	}
	return m
}

func (l *envList) environ() []string {
	out := make([]string, 0, len(l.vars))
	for _, v := range l.vars {
		out = append(out, v.Name+"="+v.Value)
	}
	return out
}

// configError is a container configuration problem (a missing Secret or key); the
// container waits with reason CreateContainerConfigError and this message. Messages
// name objects and keys, never values.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// containerEnv resolves a container's environment like the kubelet: runtime defaults
// (PATH, HOME, HOSTNAME), the kubernetes Service variables, then envFrom, then env;
// $(VAR) in env values expands with everything defined before it.
func containerEnv(pod *corev1.Pod, ctr *corev1.Container, facts podFacts, apiHost, apiPort, hostname string, objs objectReader) (*envList, error) {
	l := &envList{}
	l.set("PATH", defaultPath)
	l.set("HOME", "/root")
	if hostname != "" {
		l.set("HOSTNAME", hostname)
	}
	if apiHost != "" && apiPort != "" {
		l.set("KUBERNETES_SERVICE_HOST", apiHost)
		l.set("KUBERNETES_SERVICE_PORT", apiPort)
		l.set("KUBERNETES_SERVICE_PORT_HTTPS", apiPort)
		l.set("KUBERNETES_PORT", "tcp://"+joinHostPort(apiHost, apiPort))
		p := "KUBERNETES_PORT_" + apiPort + "_TCP"
		l.set(p, "tcp://"+joinHostPort(apiHost, apiPort))
		l.set(p+"_PROTO", "tcp")
		l.set(p+"_PORT", apiPort)
		l.set(p+"_ADDR", apiHost)
	}
	ns := pod.Namespace
	for _, from := range ctr.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := objs.ConfigMap(ns, from.ConfigMapRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
					continue
				}
				return nil, objErr("configmap", ns, from.ConfigMapRef.Name, err)
			}
			data = cm.Data
		case from.SecretRef != nil:
			s, err := objs.Secret(ns, from.SecretRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && from.SecretRef.Optional != nil && *from.SecretRef.Optional {
					continue
				}
				return nil, objErr("secret", ns, from.SecretRef.Name, err)
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			l.set(from.Prefix+k, data[k])
		}
	}
	for _, e := range ctr.Env {
		if e.ValueFrom == nil {
			l.set(e.Name, expandVars(e.Value, l.get))
			continue
		}
		v, skip, err := envValueFrom(pod, ctr, e.ValueFrom, facts, objs)
		if err != nil {
			return nil, err
		}
		if !skip {
			l.set(e.Name, v)
		}
	}
	return l, nil
}

func objErr(kind, ns, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return &configError{msg: fmt.Sprintf("%s %q not found", kind, name)}
	}
	return &configError{msg: fmt.Sprintf("failed to read %s %s/%s: %v", kind, ns, name, err)}
}

// envValueFrom resolves one valueFrom; skip is true for an optional reference that is
// missing (the variable is then not set).
func envValueFrom(pod *corev1.Pod, ctr *corev1.Container, src *corev1.EnvVarSource, facts podFacts, objs objectReader) (string, bool, error) {
	ns := pod.Namespace
	switch {
	case src.FieldRef != nil:
		v, err := podField(pod, src.FieldRef.FieldPath, facts)
		return v, false, err
	case src.ResourceFieldRef != nil:
		v, err := resourceField(pod, ctr, src.ResourceFieldRef, facts)
		return v, false, err
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s, err := objs.Secret(ns, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, objErr("secret", ns, ref.Name, err)
		}
		b, ok := s.Data[ref.Key]
		if !ok {
			if optional {
				return "", true, nil
			}
			return "", false, &configError{msg: fmt.Sprintf("couldn't find key %s in Secret %s/%s", ref.Key, ns, ref.Name)}
		}
		return string(b), false, nil
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := objs.ConfigMap(ns, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, objErr("configmap", ns, ref.Name, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if optional {
				return "", true, nil
			}
			return "", false, &configError{msg: fmt.Sprintf("couldn't find key %s in ConfigMap %s/%s", ref.Key, ns, ref.Name)}
		}
		return v, false, nil
	default:
		return "", false, &configError{msg: "env var source not supported by the rig node agent"}
	}
}

// podField resolves a downward-API field path of the pod.
func podField(pod *corev1.Pod, fieldPath string, facts podFacts) (string, error) {
	if rest, ok := strings.CutPrefix(fieldPath, "metadata.labels['"); ok && strings.HasSuffix(rest, "']") {
		return pod.Labels[strings.TrimSuffix(rest, "']")], nil
	}
	if rest, ok := strings.CutPrefix(fieldPath, "metadata.annotations['"); ok && strings.HasSuffix(rest, "']") {
		return pod.Annotations[strings.TrimSuffix(rest, "']")], nil
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return facts.HostIP, nil
	case "status.podIP", "status.podIPs":
		return facts.PodIP, nil
	default:
		return "", &configError{msg: fmt.Sprintf("field path %q is not supported by the rig node agent", fieldPath)}
	}
}

// formatMap renders labels or annotations like the kubelet's downward API files.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// resourceField resolves a resourceFieldRef; unset limits fall back to the node's
// allocatable amount, like the kubelet.
func resourceField(pod *corev1.Pod, ctr *corev1.Container, ref *corev1.ResourceFieldSelector, facts podFacts) (string, error) {
	c := ctr
	if ref.ContainerName != "" {
		c = nil
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ref.ContainerName {
				c = &pod.Spec.Containers[i]
			}
		}
		if c == nil {
			return "", &configError{msg: fmt.Sprintf("resourceFieldRef names unknown container %q", ref.ContainerName)}
		}
	}
	kind, res, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", &configError{msg: fmt.Sprintf("resource %q is not supported", ref.Resource)}
	}
	var q resource.Quantity
	var found bool
	switch kind {
	case "limits":
		q, found = c.Resources.Limits[corev1.ResourceName(res)]
		if !found {
			q, found = facts.NodeAllocatable[corev1.ResourceName(res)]
		}
	case "requests":
		q, found = c.Resources.Requests[corev1.ResourceName(res)]
	default:
		return "", &configError{msg: fmt.Sprintf("resource %q is not supported", ref.Resource)}
	}
	if !found {
		return "0", nil
	}
	div := ref.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	if res == string(corev1.ResourceCPU) {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(div.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(div.Value())))), nil
}

func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}
