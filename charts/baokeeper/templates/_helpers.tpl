{{/* The release's full name, used for every object this chart creates. */}}
{{- define "baokeeper.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "baokeeper.serviceAccountName" -}}
{{- default (include "baokeeper.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "baokeeper.selectorLabels" -}}
app.kubernetes.io/name: baokeeper
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "baokeeper.labels" -}}
{{ include "baokeeper.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The operator's image reference: a digest wins over a tag. */}}
{{- define "baokeeper.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The leader-election Lease's name: one per release. */}}
{{- define "baokeeper.leaseName" -}}
{{- default (printf "%s.openbao.baokeeper.dev" (include "baokeeper.fullname" .)) .Values.leaderElection.leaseName -}}
{{- end -}}

{{/* The manager's rules, as controller-gen generates them (files/manager-role.yaml, a
copy of config/rbac/role.yaml that a test keeps equal), without Leases: those are in
a Role in the release namespace (leader election), never cluster-wide. */}}
{{- define "baokeeper.rules" -}}
{{- $out := list -}}
{{- range (.Files.Get "files/manager-role.yaml" | fromYaml).rules -}}
{{- if not (has "coordination.k8s.io" (default list .apiGroups)) -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- $out | toYaml -}}
{{- end -}}

{{/* Rules that only a ClusterRole can hold: cluster-scoped APIs and non-resource URLs. */}}
{{- define "baokeeper.clusterScopedRules" -}}
{{- $out := list -}}
{{- range (.Files.Get "files/manager-role.yaml" | fromYaml).rules -}}
{{- if or .nonResourceURLs (has "authentication.k8s.io" (default list .apiGroups)) (has "authorization.k8s.io" (default list .apiGroups)) -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- $out | toYaml -}}
{{- end -}}

{{/* Rules on namespaced objects, for a Role in each watched namespace. Leases stay in
the release namespace (leader election), in a Role of their own. */}}
{{- define "baokeeper.namespacedRules" -}}
{{- $out := list -}}
{{- range (.Files.Get "files/manager-role.yaml" | fromYaml).rules -}}
{{- if not (or .nonResourceURLs (has "authentication.k8s.io" (default list .apiGroups)) (has "authorization.k8s.io" (default list .apiGroups)) (has "coordination.k8s.io" (default list .apiGroups))) -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- $out | toYaml -}}
{{- end -}}

{{/* The Secret that holds the metrics endpoint's certificate and its CA. */}}
{{- define "baokeeper.metricsTLSSecret" -}}
{{- default (printf "%s-metrics-tls" (include "baokeeper.fullname" .)) .Values.metrics.tls.secretName -}}
{{- end -}}
