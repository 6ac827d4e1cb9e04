// Package rules reads baokeeper's alerting rules, config/prometheus/baokeeper-rules.yaml
// (a PrometheusRule, written by hand), and its tests keep them honest:
//
//  1. Every alert is named Baokeeper*, has a severity (warning or critical), a summary,
//     a description and a runbook_url that points to docs/runbooks/<alert>.md, which
//     exists; docs/observability.md lists it with its runbook.
//  2. Every expression parses with Prometheus' parser and reads only metrics that
//     baokeeper exports (internal/metrics.Names) or that controller-runtime and
//     Prometheus write (promqlcheck.KnownNames); up is selected by the job convention.
//  3. promtool check rules accepts the rule group (the PrometheusRule's spec, written
//     to a temporary file), and promtool test rules passes
//     config/prometheus/baokeeper-rules.test.yaml, which has a case where each alert
//     fires and one where it does not. Without promtool (Debian package prometheus)
//     the test skips, and fails when BAOKEEPER_REQUIRE_INTEGRATION is set.
package rules
