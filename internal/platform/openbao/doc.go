// Package openbao is the controller's read-only view of one OpenBao cluster
// that uses Raft integrated storage. It wraps
// github.com/openbao/openbao/api/v2 behind the small Client interface and
// returns plain result structs, so that controllers never touch the api
// client, its tokens or its error types directly.
//
// The package owns, in this order:
//
//  1. Building a TLS client that trusts only the cluster CA given in
//     Config.CACertPEM. Verification is never skipped, and BAO_* environment
//     variables (BAO_TOKEN, BAO_NAMESPACE, BAO_SKIP_VERIFY, ...) cannot inject
//     a token, a namespace or an insecure transport.
//  2. Logging in to OpenBao's JWT auth method (auth/<Config.AuthMount>/login)
//     with the controller's projected, audience-bound service-account token.
//     The token file at Config.TokenPath is read again on every login because
//     kubelet rotates it.
//  3. Caching the resulting short-lived client token in the Client (never in
//     a package variable) and logging in again once less than 20% of its TTL
//     is left, or when a request is refused with 403; the refused request is
//     then retried exactly once with the fresh token.
//  4. Reading cluster state: sys/health of one member addressed directly (no
//     token), sys/leader through the Service (no token), and the Raft
//     configuration and autopilot state (token), each bounded by the caller's
//     context and Config.Timeout, whichever ends first.
//  5. Mapping the api responses into Health, Leader, RaftConfiguration and
//     AutopilotState.
//  6. Turning failures into errors that say what to check, that callers can
//     branch on with errors.Is (ErrLoginFailed, ErrPermissionDenied,
//     ErrNotFound, context.DeadlineExceeded), and that never contain a client
//     token or the service-account token. Tokens are never logged either.
//
// The package does not write to OpenBao (no init, unseal, join, peer removal
// or step-down); those belong to other packages.
//
// Package openbaofake provides an in-memory Client for unit tests of other
// packages.
package openbao
