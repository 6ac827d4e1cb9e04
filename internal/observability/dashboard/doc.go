// Package dashboard builds baokeeper's Grafana dashboard in Go, with the Grafana
// Foundation SDK, and renders the two files that ship it:
// config/grafana/baokeeper-dashboard.json (import it in Grafana) and
// config/grafana/dashboard-configmap.yaml (the same JSON in a ConfigMap labelled
// grafana_dashboard: "1", which the Grafana sidecar of kube-prometheus-stack and of
// the Grafana Helm chart loads by default). Neither file is edited by hand:
//
//	go run ./hack/gen-dashboard
//
// writes both from Build (hack/gen-dashboard is the entry point; it has no logic of
// its own). The package's test fails when the committed files differ from what Build
// renders now, parses every query with Prometheus' parser (internal/observability/
// promqlcheck) and checks every metric name against internal/metrics.Names, and checks
// that every query is filtered by the namespace and cluster variables.
//
//  1. Variables: datasource (any Prometheus), namespace and cluster (label_values of
//     baokeeper_cluster_phase; cluster is the series' name label), both multi-value
//     with All. Every query selects {namespace=~"$namespace", name=~"$cluster"}
//     through sel, the one place that writes a selector.
//  2. Rows, in order: Alerts (an alert list of the Baokeeper* alerts,
//     config/prometheus/baokeeper-rules.yaml), Clusters (one table row per cluster:
//     phase, versions, members, voters, failure tolerance, upgrade progress,
//     failure, break-glass, snapshot age), Raft and members, Upgrades (progress, the
//     current step against its timeout, step and upgrade duration quantiles, leader
//     transfers, failures and rollbacks by reason), Snapshots.
//  3. State series are aggregated with max by (namespace, name, ...): every replica of
//     the operator serves them, so two replicas must not count twice.
//  4. Render marshals the dashboard (indented JSON) and wraps it in the ConfigMap.
package dashboard
