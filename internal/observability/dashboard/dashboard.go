package dashboard

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// UID is the dashboard's uid: its URL is /d/baokeeper.
const UID = "baokeeper"

// Variable names, as queries use them ($namespace, $cluster, ${datasource}).
const (
	DatasourceVar = "datasource"
	NamespaceVar  = "namespace"
	ClusterVar    = "cluster"
)

// legend names a series by its cluster.
const legend = "{{namespace}}/{{name}}"

// snapshotAgeWarning is where the snapshot age turns orange: the threshold of the
// BaokeeperSnapshotStale alert (24 h).
const snapshotAgeWarning = 24 * 3600

// sel is the one place that writes a selector: metric{namespace=~"$namespace",
// name=~"$cluster", extra...}. Every baokeeper series carries the cluster's namespace
// and name.
func sel(metric string, extra ...string) string {
	m := append([]string{NamespaceVar + `=~"$` + NamespaceVar + `"`, `name=~"$` + ClusterVar + `"`}, extra...)
	return metric + "{" + strings.Join(m, ", ") + "}"
}

// maxBy is max by (namespace, name, labels...) (expr): one series per cluster, however
// many replicas of the operator serve it.
func maxBy(expr string, labels ...string) string {
	return "max by (" + strings.Join(append([]string{"namespace", "name"}, labels...), ", ") + ") (" + expr + ")"
}

// overRange is the increase of a counter over the dashboard's time range, by cluster
// and labels.
func overRange(metric string, labels ...string) string {
	return "sum by (" + strings.Join(append([]string{"namespace", "name"}, labels...), ", ") + ") (increase(" + sel(metric) + "[$__range]))"
}

// quantile is the q-quantile of a histogram over the dashboard's time range, by
// cluster and labels.
func quantile(q, histogram string, labels ...string) string {
	by := strings.Join(append([]string{"namespace", "name"}, append(labels, "le")...), ", ")
	return fmt.Sprintf("histogram_quantile(%s, sum by (%s) (increase(%s[$__range])))", q, by, sel(histogram+"_bucket"))
}

// datasource is the panels' and queries' data source: the datasource variable.
func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + DatasourceVar + "}")}
}

// query is a range query.
func query(ref, expr, legendFormat string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource()).RefId(ref).Expr(expr).LegendFormat(legendFormat).Range()
}

// instant is an instant query, for tables, stats and bar gauges.
func instant(ref, expr, legendFormat string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource()).RefId(ref).Expr(expr).LegendFormat(legendFormat).Instant()
}

// tableQuery is an instant query formatted as a table (one row per series, a column
// per label).
func tableQuery(ref, expr string) *prometheus.DataqueryBuilder {
	return instant(ref, expr, "__auto").Format(prometheus.PromQueryFormatTable)
}

// thresholds colors values below at with below, from at on with above.
func thresholds(below string, at float64, above string) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).
		Steps([]dashboard.Threshold{{Color: below}, {Value: cog.ToPtr(at), Color: above}})
}

// valueText maps values to text and color: value, text, color, value, text, color...
func valueText(triples ...string) []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i := 0; i+2 < len(triples); i += 3 {
		opts[triples[i]] = dashboard.ValueMappingResult{Text: cog.ToPtr(triples[i+1]), Color: cog.ToPtr(triples[i+2]), Index: cog.ToPtr(int32(i / 3))}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

func lastValue() *common.ReduceDataOptionsBuilder {
	return common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false)
}

func tableLegend() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeTable).Placement(common.LegendPlacementBottom).
		ShowLegend(true).Calcs([]string{"lastNotNull", "max"})
}

// panels numbers the panels in the order they are added.
type panels struct {
	next uint32
}

func (p *panels) id() uint32 {
	p.next++
	return p.next
}

// Build builds the dashboard.
func Build() (dashboard.Dashboard, error) {
	p := &panels{}
	b := dashboard.NewDashboardBuilder("baokeeper: OpenBao clusters").
		Uid(UID).
		Description("OpenBao Raft clusters run by baokeeper: health, upgrades, snapshots, break-glass, and baokeeper's alerts. Generated by internal/observability/dashboard: do not edit, run go run ./hack/gen-dashboard.").
		Tags([]string{"baokeeper", "openbao"}).
		Refresh("30s").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Readonly().
		Link(dashboard.NewDashboardLinkBuilder("Runbooks").Type(dashboard.DashboardLinkTypeLink).
			Url("https://github.com/baokeeper/baokeeper/tree/main/docs/runbooks").TargetBlank(true).Icon("doc")).
		WithVariable(dashboard.NewDatasourceVariableBuilder(DatasourceVar).Label("Data source").Type("prometheus")).
		WithVariable(labelValues(NamespaceVar, "Namespace", "baokeeper_cluster_phase", "namespace")).
		WithVariable(labelValues(ClusterVar, "Cluster", `baokeeper_cluster_phase{namespace=~"$`+NamespaceVar+`"}`, "name"))

	b.WithRow(dashboard.NewRowBuilder("Alerts").Id(p.id()))
	b.WithPanel(alertList(p.id()))

	b.WithRow(dashboard.NewRowBuilder("Clusters").Id(p.id()))
	b.WithPanel(clustersTable(p.id()))
	for _, panel := range clusterStats(p) {
		b.WithPanel(panel)
	}

	b.WithRow(dashboard.NewRowBuilder("Raft and members").Id(p.id()))
	for _, panel := range raftPanels(p) {
		b.WithPanel(panel)
	}

	b.WithRow(dashboard.NewRowBuilder("Upgrades").Id(p.id()))
	for _, panel := range upgradePanels(p) {
		b.WithPanel(panel)
	}

	b.WithRow(dashboard.NewRowBuilder("Snapshots").Id(p.id()))
	for _, panel := range snapshotPanels(p) {
		b.WithPanel(panel)
	}

	d, err := b.Build()
	if err != nil {
		return dashboard.Dashboard{}, fmt.Errorf("failed to build the dashboard (a builder in internal/observability/dashboard is given a value it refuses): %w", err)
	}
	return d, nil
}

// labelValues is a multi-value query variable with All (.*) over the values of
// label on selector.
func labelValues(name, label, selector, valueLabel string) *dashboard.QueryVariableBuilder {
	q := "label_values(" + selector + ", " + valueLabel + ")"
	return dashboard.NewQueryVariableBuilder(name).Label(label).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).Definition(q).
		Multi(true).IncludeAll(true).AllValue(".*").
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc)
}

// alertList shows the Baokeeper* alerts that fire or are pending, from every rule
// source Grafana knows (the Prometheus data source with its alerting rules, or an
// Alertmanager). It is not filtered by namespace or cluster: the operator's own
// alerts (BaokeeperOperatorDown, BaokeeperReconcileErrors) carry neither.
func alertList(id uint32) *dashboard.PanelBuilder {
	return dashboard.NewPanelBuilder().Type("alertlist").Id(id).Title("Firing and pending baokeeper alerts").
		Description("Alerts of config/prometheus/baokeeper-rules.yaml whose name starts with Baokeeper, from every rule source Grafana knows; each names its runbook (runbook_url).").
		GridPos(dashboard.GridPos{W: 24, H: 6}).
		Options(map[string]any{
			"alertName":                "Baokeeper",
			"alertInstanceLabelFilter": "",
			"dashboardAlerts":          false,
			"groupMode":                "default",
			"groupBy":                  []string{},
			"maxItems":                 50,
			"sortOrder":                1,
			"showInstances":            true,
			"viewMode":                 "list",
			"stateFilter": map[string]bool{
				"firing": true, "pending": true, "noData": false, "normal": false, "error": true,
			},
		})
}

// clustersTable has one row per cluster, joined from instant queries by their
// namespace and name labels.
func clustersTable(id uint32) *table.PanelBuilder {
	queries := []struct{ ref, expr, column string }{
		{"A", maxBy(sel("baokeeper_cluster_phase"), "phase") + " == 1", ""},
		{"B", maxBy(sel("baokeeper_cluster_version_info"), "current_version", "desired_version"), ""},
		{"C", maxBy(sel("baokeeper_cluster_desired_members")), "Desired members"},
		{"D", maxBy(sel("baokeeper_cluster_ready_members")), "Ready members"},
		{"E", maxBy(sel("baokeeper_raft_healthy_voters")), "Healthy voters"},
		{"F", maxBy(sel("baokeeper_raft_failure_tolerance")), "Failure tolerance"},
		{"G", maxBy(sel("baokeeper_upgrade_pods_completed")) + " and on (namespace, name) (" + maxBy(sel("baokeeper_upgrade_in_progress")) + " == 1)", "Upgrade: steps done"},
		{"H", maxBy(sel("baokeeper_upgrade_pods_total")) + " and on (namespace, name) (" + maxBy(sel("baokeeper_upgrade_in_progress")) + " == 1)", "Upgrade: steps"},
		{"I", maxBy(sel("baokeeper_upgrade_failed"), "reason"), ""},
		{"J", breakGlass(), "Break-glass"},
		{"K", snapshotAge(), "Snapshot age"},
	}
	t := table.NewPanelBuilder().Id(id).Title("Clusters").
		Description("One row per cluster: status.phase, spec.version (desired) and status.currentVersion, members, healthy voters, autopilot's failure tolerance, the running upgrade's progress, its failure reason, break-glass and the age of status.lastSnapshot.").
		Datasource(datasource()).GridPos(dashboard.GridPos{W: 24, H: 8})
	exclude := map[string]bool{"Time": true, "Value #A": true, "Value #B": true, "Value #I": true}
	rename := map[string]string{"namespace": "Namespace", "name": "Cluster", "phase": "Phase",
		"desired_version": "Desired version", "current_version": "Current version", "reason": "Upgrade failure"}
	order := map[string]int{"namespace": 0, "name": 1, "phase": 2, "desired_version": 3, "current_version": 4}
	for i, q := range queries {
		t.WithTarget(tableQuery(q.ref, q.expr))
		if q.column != "" {
			rename["Value #"+q.ref] = q.column
			order["Value #"+q.ref] = 5 + i
		}
	}
	order["reason"] = 5 + len(queries)
	t.WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}})
	t.WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
		"excludeByName": exclude, "renameByName": rename, "indexByName": order,
	}})
	t.OverrideByName("Snapshot age", []dashboard.DynamicConfigValue{{Id: "unit", Value: "s"}})
	t.OverrideByName("Break-glass", []dashboard.DynamicConfigValue{{Id: "mappings", Value: valueText("0", "off", "green", "1", "ACTIVE", "red")},
		{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background"}}})
	t.OverrideByName("Failure tolerance", []dashboard.DynamicConfigValue{{Id: "thresholds", Value: dashboard.ThresholdsConfig{
		Mode: dashboard.ThresholdsModeAbsolute, Steps: []dashboard.Threshold{{Color: "red"}, {Value: cog.ToPtr(1.0), Color: "green"}}}},
		{Id: "custom.cellOptions", Value: map[string]any{"type": "color-text"}}})
	return t
}

// breakGlass is 1 while break-glass stops the cluster's automation: the upgrade
// manager's gauge, or the phase read from status where the gauge is not (yet) there.
func breakGlass() string {
	return maxBy(sel("baokeeper_break_glass_active")) + " or " + maxBy(sel("baokeeper_cluster_phase", `phase="BreakGlass"`))
}

// snapshotAge is the age of status.lastSnapshot, in seconds.
func snapshotAge() string {
	return "time() - " + maxBy(sel("baokeeper_snapshot_last_taken_timestamp_seconds"))
}

func clusterStats(p *panels) []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		stat.NewPanelBuilder().Id(p.id()).Title("Break-glass").
			Description("ACTIVE while break-glass stops every automation of the cluster (status.breakGlass): follow status.breakGlass.recoverySteps and the runbook of its reason.").
			Datasource(datasource()).GridPos(dashboard.GridPos{W: 8, H: 4}).
			WithTarget(instant("A", breakGlass(), legend)).
			Mappings(valueText("0", "off", "green", "1", "ACTIVE", "red")).
			ColorMode(common.BigValueColorModeBackground).GraphMode(common.BigValueGraphModeNone).
			TextMode(common.BigValueTextModeValueAndName).ReduceOptions(lastValue()),
		stat.NewPanelBuilder().Id(p.id()).Title("Failure tolerance").
			Description("Voters the cluster can lose and keep its quorum, as autopilot last reported. Below 1 with 3 or more members, one more failure stops the cluster.").
			Datasource(datasource()).GridPos(dashboard.GridPos{W: 8, H: 4}).
			WithTarget(instant("A", maxBy(sel("baokeeper_raft_failure_tolerance")), legend)).
			Thresholds(thresholds("red", 1, "green")).
			ColorMode(common.BigValueColorModeBackground).GraphMode(common.BigValueGraphModeNone).
			TextMode(common.BigValueTextModeValueAndName).ReduceOptions(lastValue()),
		stat.NewPanelBuilder().Id(p.id()).Title("Snapshot age").
			Description("Time since status.lastSnapshot.takenAt: the newest pre-upgrade snapshot, the way back after an upgrade's point of no return. Orange from 24 h, the threshold of BaokeeperSnapshotStale.").
			Datasource(datasource()).GridPos(dashboard.GridPos{W: 8, H: 4}).
			WithTarget(instant("A", snapshotAge(), legend)).
			Unit("s").Thresholds(thresholds("green", snapshotAgeWarning, "orange")).
			ColorMode(common.BigValueColorModeValue).GraphMode(common.BigValueGraphModeNone).
			TextMode(common.BigValueTextModeValueAndName).ReduceOptions(lastValue()),
	}
}

// series is a time series panel of range queries, with a table legend.
func series(p *panels, title, description string, w uint32) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().Id(p.id()).Title(title).Description(description).
		Datasource(datasource()).GridPos(dashboard.GridPos{W: w, H: 8}).Legend(tableLegend())
}

func raftPanels(p *panels) []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		series(p, "Members by version", "Members in status.members reporting each OpenBao version (unknown: none reported). Two versions outside an upgrade is BaokeeperVersionSkew.", 12).
			WithTarget(query("A", maxBy(sel("baokeeper_cluster_members"), "version"), legend+" {{version}}")).
			Min(0).Decimals(0),
		series(p, "Healthy voters and desired members", "Healthy voters (the leader included) against spec.replicas.", 12).
			WithTarget(query("A", maxBy(sel("baokeeper_raft_healthy_voters")), legend+" healthy voters")).
			WithTarget(query("B", maxBy(sel("baokeeper_raft_voters")), legend+" voters")).
			WithTarget(query("C", maxBy(sel("baokeeper_cluster_desired_members")), legend+" desired members")).
			Min(0).Decimals(0),
		series(p, "Failure tolerance", "Autopilot's failure tolerance as last read. Below 1 for 15 min with 3 or more members is BaokeeperFailureToleranceLow.", 12).
			WithTarget(query("A", maxBy(sel("baokeeper_raft_failure_tolerance")), legend)).
			Min(0).Decimals(0).Thresholds(thresholds("red", 1, "green")).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)),
		series(p, "Raft leader", "Members with Raft role Leader in status.members: 1 is healthy, 0 means no leader (BaokeeperNoLeader).", 12).
			WithTarget(query("A", maxBy(sel("baokeeper_raft_leader")), legend)).
			Min(0).Decimals(0),
	}
}

func upgradePanels(p *panels) []cog.Builder[dashboard.Panel] {
	durations := func(title, description, histogram string) *bargauge.PanelBuilder {
		b := bargauge.NewPanelBuilder().Id(p.id()).Title(title).Description(description).
			Datasource(datasource()).GridPos(dashboard.GridPos{W: 12, H: 8}).
			Unit("s").Min(0).DisplayMode(common.BarGaugeDisplayModeGradient).
			Orientation(common.VizOrientationHorizontal).ReduceOptions(lastValue())
		for i, q := range []string{"0.5", "0.9", "0.99"} {
			b.WithTarget(instant(string(rune('A'+i)), quantile(q, histogram, "strategy"), legend+" {{strategy}} p"+strings.TrimPrefix(q, "0.")))
		}
		return b
	}
	counts := func(title, description, expr, legendFormat string) *bargauge.PanelBuilder {
		return bargauge.NewPanelBuilder().Id(p.id()).Title(title).Description(description).
			Datasource(datasource()).GridPos(dashboard.GridPos{W: 8, H: 8}).
			WithTarget(instant("A", "round("+expr+")", legendFormat)).
			Min(0).Decimals(0).DisplayMode(common.BarGaugeDisplayModeBasic).
			Orientation(common.VizOrientationHorizontal).ReduceOptions(lastValue())
	}
	inProgress := " and on (namespace, name) (" + maxBy(sel("baokeeper_upgrade_in_progress")) + " == 1)"
	return []cog.Builder[dashboard.Panel]{
		bargauge.NewPanelBuilder().Id(p.id()).Title("Upgrade progress").
			Description("Steps of the running upgrade done (members on the target for RollingUpdate, phases for BlueGreen) out of its steps.").
			Datasource(datasource()).GridPos(dashboard.GridPos{W: 8, H: 8}).
			WithTarget(instant("A", maxBy(sel("baokeeper_upgrade_pods_completed"))+" / "+maxBy(sel("baokeeper_upgrade_pods_total")+" > 0")+inProgress, legend)).
			Unit("percentunit").Min(0).Max(1).DisplayMode(common.BarGaugeDisplayModeGradient).
			Orientation(common.VizOrientationHorizontal).ReduceOptions(lastValue()),
		series(p, "Upgrade steps: done and total", "baokeeper_upgrade_pods_completed and baokeeper_upgrade_pods_total while an upgrade runs.", 8).
			WithTarget(query("A", maxBy(sel("baokeeper_upgrade_pods_completed"))+inProgress, legend+" done")).
			WithTarget(query("B", maxBy(sel("baokeeper_upgrade_pods_total"))+inProgress, legend+" total")).
			Min(0).Decimals(0),
		series(p, "Current step: running time and timeout", "How long the running upgrade's current step (rolling) or phase (blue-green) has run, against its step timeout. Past the timeout without a failure is BaokeeperUpgradeStuck.", 8).
			WithTarget(query("A", "time() - "+maxBy(sel("baokeeper_upgrade_step_started_timestamp_seconds"), "strategy"), legend+" {{strategy}} running")).
			WithTarget(query("B", maxBy(sel("baokeeper_upgrade_step_timeout_seconds"), "strategy"), legend+" {{strategy}} timeout")).
			Unit("s").Min(0),
		durations("Step duration (time range)", "Quantiles of one upgrade step (a member of a rolling upgrade, an executor step of blue-green) over the dashboard's time range. A series' first observation is not counted by increase().", "baokeeper_upgrade_step_duration_seconds"),
		durations("Upgrade duration (time range)", "Quantiles of a whole upgrade, from planning to completion, over the dashboard's time range. A series' first observation is not counted by increase().", "baokeeper_upgrade_duration_seconds"),
		counts("Leader transfers (time range)", "Planned leadership changes (verified step-downs) over the dashboard's time range: one per upgrade is the promise.",
			overRange("baokeeper_leader_transfers_total"), legend),
		counts("Upgrade failures by reason (time range)", "Upgrades that stopped, by status.upgrade.failure.reason, over the dashboard's time range.",
			overRange("baokeeper_upgrade_failures_total", "strategy", "reason"), legend+" {{strategy}} {{reason}}"),
		counts("Rollbacks by reason (time range)", "Upgrades rolled back, by reason (Requested, or the failure that rolled one back on its own), over the dashboard's time range.",
			overRange("baokeeper_upgrade_rollbacks_total", "strategy", "reason"), legend+" {{strategy}} {{reason}}"),
		series(p, "OpenBao requests from the controller", "Requests per second the controller sends to each cluster's OpenBao, by answer code (0: no answer). An upgrade waiting on OpenBao polls every 500 ms; an idle cluster costs none between resyncs.", 24).
			WithTarget(query("A", "sum by (namespace, name, code) (rate("+sel("baokeeper_openbao_requests_total")+"[$__rate_interval]))", legend+" {{code}}")).
			Unit("reqps").Min(0),
	}
}

func snapshotPanels(p *panels) []cog.Builder[dashboard.Panel] {
	b := bargauge.NewPanelBuilder().Id(p.id()).Title("Snapshot duration (time range)").
		Description("Quantiles of a pre-upgrade snapshot, from its step's start to its verified receipt, over the dashboard's time range.").
		Datasource(datasource()).GridPos(dashboard.GridPos{W: 12, H: 8}).
		Unit("s").Min(0).DisplayMode(common.BarGaugeDisplayModeGradient).
		Orientation(common.VizOrientationHorizontal).ReduceOptions(lastValue())
	for i, q := range []string{"0.5", "0.9", "0.99"} {
		b.WithTarget(instant(string(rune('A'+i)), quantile(q, "baokeeper_snapshot_duration_seconds"), legend+" p"+strings.TrimPrefix(q, "0.")))
	}
	return []cog.Builder[dashboard.Panel]{
		b,
		series(p, "Snapshot age", "Time since status.lastSnapshot.takenAt. Older than 24 h while an upgrade runs is BaokeeperSnapshotStale.", 12).
			WithTarget(query("A", snapshotAge(), legend)).
			Unit("s").Min(0).Thresholds(thresholds("green", snapshotAgeWarning, "orange")).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)),
	}
}
