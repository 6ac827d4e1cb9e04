package kubectlbao

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// ReportInput is what kubectl bao report read, before anything is written: the
// cluster, its events, pods, StatefulSets and Jobs, the members' recent logs and the
// operator's log lines.
type ReportInput struct {
	Cluster      *baov1.OpenBaoCluster
	Events       []TimelineEntry
	Pods         []corev1.Pod
	StatefulSets []appsv1.StatefulSet
	Jobs         []batchv1.Job
	// MemberLogs are each member pod's recent OpenBao log, by pod name.
	MemberLogs map[string]string
	// OperatorLogs are each operator pod's log, by pod name; only the lines that
	// name the cluster are kept.
	OperatorLogs map[string]string
	// Problems says what could not be read (a log that a role may not read).
	Problems []string
	Now      time.Time
}

// reportFile is one file of the bundle.
type reportFile struct {
	name string
	data []byte
}

// BuildReport lays out the support bundle: every file is redacted (Redact), and no
// Secret, ConfigMap or environment value is read or written. Pure.
func BuildReport(in ReportInput) ([]reportFile, error) {
	c := in.Cluster
	var files []reportFile
	add := func(name string, data []byte) {
		files = append(files, reportFile{name: name, data: []byte(Redact(string(data)))})
	}
	addYAML := func(name string, v any) error {
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("failed to write %s: %w", name, err)
		}
		add(name, b)
		return nil
	}
	var readme bytes.Buffer
	fmt.Fprintf(&readme, "Support bundle of openbaocluster %s/%s, written by kubectl bao report at %s.\n", c.Namespace, c.Name, in.Now.UTC().Format(time.RFC3339))
	fmt.Fprintf(&readme, "Nothing secret is in it: no Secret or ConfigMap was read, environment values are left out, and tokens, keys\n"+
		"and passwords that look like them in logs are replaced by REDACTED.\n\n")
	fmt.Fprintln(&readme, "status.txt       kubectl bao status, as it printed")
	fmt.Fprintln(&readme, "history.txt      kubectl bao history")
	fmt.Fprintln(&readme, "timeline.txt     kubectl bao timeline (events, kept an hour by the API server)")
	fmt.Fprintln(&readme, "cluster.yaml     the OpenBaoCluster (managed fields left out)")
	fmt.Fprintln(&readme, "raft.txt         the Raft view as the operator last observed it (status.raft, members)")
	fmt.Fprintln(&readme, "objects/         the member pods, StatefulSets and executor Jobs (environment values left out)")
	fmt.Fprintln(&readme, "logs/            the members' recent OpenBao logs; operator-*.log: the operator's lines about this cluster")
	if len(in.Problems) > 0 {
		fmt.Fprintln(&readme, "\nNot in it:")
		for _, p := range in.Problems {
			fmt.Fprintln(&readme, "  "+p)
		}
	}
	add("README.txt", readme.Bytes())

	var b bytes.Buffer
	if err := RenderStatus(&b, c, in.Now); err != nil {
		return nil, err
	}
	add("status.txt", b.Bytes())
	b.Reset()
	if err := RenderHistory(&b, c, in.Now); err != nil {
		return nil, err
	}
	add("history.txt", b.Bytes())
	b.Reset()
	if err := RenderTimeline(&b, c.Namespace+"/"+c.Name, in.Events, in.Now); err != nil {
		return nil, err
	}
	add("timeline.txt", b.Bytes())
	if err := addYAML("cluster.yaml", Printable(c)); err != nil {
		return nil, err
	}
	b.Reset()
	fmt.Fprintf(&b, "leader: %s\nvoters: %s\n", orDash(c.Status.Leader), orDash(c.Status.Voters))
	if r := c.Status.Raft; r != nil {
		rb, _ := yaml.Marshal(r)
		fmt.Fprintf(&b, "raft:\n%s", indentLines(string(rb)))
	}
	for _, m := range c.Status.Members {
		fmt.Fprintf(&b, "member %s: version %s, raft role %s, ready %t\n", m.Name, orDash(m.Version), orDash(string(m.RaftRole)), m.Ready)
	}
	add("raft.txt", b.Bytes())
	for i := range in.Pods {
		p := in.Pods[i].DeepCopy()
		p.ManagedFields = nil
		dropEnvValues(&p.Spec)
		if err := addYAML("objects/pod-"+p.Name+".yaml", p); err != nil {
			return nil, err
		}
	}
	for i := range in.StatefulSets {
		s := in.StatefulSets[i].DeepCopy()
		s.ManagedFields = nil
		dropEnvValues(&s.Spec.Template.Spec)
		if err := addYAML("objects/statefulset-"+s.Name+".yaml", s); err != nil {
			return nil, err
		}
	}
	for i := range in.Jobs {
		j := in.Jobs[i].DeepCopy()
		j.ManagedFields = nil
		dropEnvValues(&j.Spec.Template.Spec)
		if err := addYAML("objects/job-"+j.Name+".yaml", j); err != nil {
			return nil, err
		}
	}
	for _, name := range sortedKeys(in.MemberLogs) {
		add("logs/"+name+".log", []byte(in.MemberLogs[name]))
	}
	for _, name := range sortedKeys(in.OperatorLogs) {
		add("logs/operator-"+name+".log", []byte(aboutCluster(in.OperatorLogs[name], c)))
	}
	return files, nil
}

// aboutCluster keeps the lines of an operator log that name the cluster (its
// namespace and name, as logr's object key writes them).
func aboutCluster(log string, c *baov1.OpenBaoCluster) string {
	var out strings.Builder
	key := fmt.Sprintf(`"name":"%s","namespace":"%s"`, c.Name, c.Namespace)
	short := c.Namespace + "/" + c.Name
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if l := sc.Text(); strings.Contains(l, key) || strings.Contains(l, short) {
			out.WriteString(l)
			out.WriteByte('\n')
		}
	}
	return out.String()
}

// dropEnvValues leaves environment variables' names and references, not their
// values: a value may be a credential someone put there.
func dropEnvValues(spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for j := range cs[i].Env {
				if cs[i].Env[j].Value != "" {
					cs[i].Env[j].Value = "REDACTED"
				}
			}
		}
	}
}

// redactions are what Redact replaces: OpenBao and Vault tokens, JWTs, bearer
// headers, and the values of JSON or HCL fields named like secrets.
func redactions() []struct {
	re   *regexp.Regexp
	with string
} {
	return []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`\b(hv[sbr]|s|b|r)\.[A-Za-z0-9_-]{20,}`), "$1.REDACTED"},
		{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}`), "REDACTED-JWT"},
		{regexp.MustCompile(`(?i)(authorization:\s*bearer\s+)\S+`), "${1}REDACTED"},
		{regexp.MustCompile(`(?i)("(?:[a-z_]*token|secret(?:_id)?|password|unseal_key[a-z_]*|key|private_key|secret_key|access_key)"\s*:\s*)"[^"]*"`), `${1}"REDACTED"`},
		{regexp.MustCompile(`(?i)\b((?:[a-z_]*token|secret(?:_id)?|password|secret_key|access_key)\s*=\s*)("[^"]*"|\S+)`), `${1}"REDACTED"`},
	}
}

// Redact replaces what looks like a credential in s with REDACTED. Pure.
func Redact(s string) string {
	for _, r := range redactions() {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}

// WriteReport writes files as a gzipped tar under dir/ to w.
func WriteReport(w io.Writer, dir string, files []reportFile, now time.Time) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: dir + "/" + f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: now}); err != nil {
			return fmt.Errorf("failed to write %s into the bundle: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return fmt.Errorf("failed to write %s into the bundle: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("failed to finish the bundle: %w", err)
	}
	return gz.Close()
}

func (r *runner) reportCommand() *cobra.Command {
	var file, operatorNS string
	var tail int64
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "report CLUSTER",
		Short: "Write a support bundle of the cluster, with nothing secret in it",
		Long: "Writes a gzipped tar: the status, history and timeline as kubectl bao prints them, the OpenBaoCluster, the Raft " +
			"view, the member pods, StatefulSets and executor Jobs, the members' recent logs, and the operator's log lines " +
			"about this cluster. No Secret or ConfigMap is read; environment values are left out; tokens, keys and passwords " +
			"that look like them in logs are replaced by REDACTED. What could not be read (a log your role may not read) is " +
			"listed in its README.txt.",
		Example:           "  kubectl bao report bao -n vault\n  kubectl bao report bao -n vault -f bao.tar.gz --operator-namespace baokeeper-system",
		Args:              oneCluster,
		ValidArgsFunction: r.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := r.connect()
			if err != nil {
				return err
			}
			in, err := r.readReport(cmd.Context(), s, args[0], operatorNS, tail, since)
			if err != nil {
				return err
			}
			files, err := BuildReport(in)
			if err != nil {
				return err
			}
			if file == "" {
				file = fmt.Sprintf("baokeeper-report-%s-%s-%s.tar.gz", in.Cluster.Namespace, in.Cluster.Name, in.Now.UTC().Format("20060102T150405Z"))
			}
			f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return fmt.Errorf("failed to create %s: %w; name another file with -f", file, err)
			}
			dir := strings.TrimSuffix(strings.TrimSuffix(file[strings.LastIndex(file, "/")+1:], ".gz"), ".tar")
			if err := WriteReport(f, dir, files, in.Now); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("failed to write %s: %w", file, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Wrote %s: %d files about openbaocluster %s/%s", file, len(files), in.Cluster.Namespace, in.Cluster.Name)
			if len(in.Problems) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "; not in it: %s", strings.Join(in.Problems, "; "))
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the bundle to write (default baokeeper-report-NAMESPACE-NAME-TIME.tar.gz); an existing file is not overwritten")
	cmd.Flags().StringVar(&operatorNS, "operator-namespace", "", "the namespace of the operator's pods (default: every namespace where your role may list pods labelled app.kubernetes.io/name=baokeeper)")
	cmd.Flags().Int64Var(&tail, "tail", 500, "how many recent lines of each member's log to include")
	cmd.Flags().DurationVar(&since, "since", time.Hour, "how far back the operator's log is read for lines about the cluster")
	return cmd
}

// readReport reads what the bundle holds. A log that cannot be read is listed in
// Problems, not an error: the rest of the bundle still helps.
func (r *runner) readReport(ctx context.Context, s *session, name, operatorNS string, tail int64, since time.Duration) (ReportInput, error) {
	c, err := s.get(ctx, name)
	if err != nil {
		return ReportInput{}, err
	}
	in := ReportInput{Cluster: c, Now: r.opts.Now(), MemberLogs: map[string]string{}, OperatorLogs: map[string]string{}}
	events := &corev1.EventList{}
	if err := s.cl.List(ctx, events, client.InNamespace(c.Namespace), client.MatchingFields{"involvedObject.uid": string(c.UID)}); err != nil {
		in.Problems = append(in.Problems, fmt.Sprintf("events: %v", err))
	}
	in.Events = Timeline(events.Items)
	own := client.MatchingLabels{workload.LabelCluster: c.Name}
	pods := &corev1.PodList{}
	if err := s.cl.List(ctx, pods, client.InNamespace(c.Namespace), own); err != nil {
		return in, fmt.Errorf("failed to list the pods of openbaocluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	in.Pods = pods.Items
	sts := &appsv1.StatefulSetList{}
	if err := s.cl.List(ctx, sts, client.InNamespace(c.Namespace), own); err != nil {
		in.Problems = append(in.Problems, fmt.Sprintf("StatefulSets: %v", err))
	}
	in.StatefulSets = sts.Items
	jobs := &batchv1.JobList{}
	if err := s.cl.List(ctx, jobs, client.InNamespace(c.Namespace), own); err != nil {
		in.Problems = append(in.Problems, fmt.Sprintf("Jobs: %v", err))
	}
	in.Jobs = jobs.Items
	cfg, err := r.flags.ToRESTConfig()
	if err != nil {
		return in, fmt.Errorf("failed to load the kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return in, fmt.Errorf("failed to create a client for the logs: %w", err)
	}
	for _, p := range in.Pods {
		if _, member := p.Labels[workload.LabelInstance]; !member || p.Labels["batch.kubernetes.io/job-name"] != "" {
			continue
		}
		b, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: "openbao", TailLines: &tail}).DoRaw(ctx)
		if err != nil {
			in.Problems = append(in.Problems, fmt.Sprintf("the log of %s: %v", p.Name, err))
			continue
		}
		in.MemberLogs[p.Name] = string(b)
	}
	ops := &corev1.PodList{}
	var opts []client.ListOption
	if operatorNS != "" {
		opts = append(opts, client.InNamespace(operatorNS))
	}
	opts = append(opts, client.MatchingLabels{"app.kubernetes.io/name": "baokeeper"})
	if err := s.cl.List(ctx, ops, opts...); err != nil {
		in.Problems = append(in.Problems, fmt.Sprintf("the operator's pods: %v; pass --operator-namespace", err))
	}
	for _, p := range ops.Items {
		secs := int64(max(since, time.Second) / time.Second)
		b, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{SinceSeconds: &secs}).DoRaw(ctx)
		if err != nil {
			in.Problems = append(in.Problems, fmt.Sprintf("the log of the operator pod %s/%s: %v", p.Namespace, p.Name, err))
			continue
		}
		in.OperatorLogs[p.Name] = string(b)
	}
	return in, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func indentLines(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
