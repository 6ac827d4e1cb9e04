// Package openbao is baokeeper's one client of the OpenBao HTTP API for
// clusters that use Raft integrated storage. It wraps
// github.com/openbao/openbao/api/v2 behind small role interfaces and returns
// plain result structs, so that neither the controller nor the executor
// touches the api client, its tokens or its error types directly.
//
// The roles, and who holds which:
//
//   - Reader (New, Config): the controller's read-only view. Leader,
//     RaftConfiguration and AutopilotState go through the cluster's client
//     Service; Health goes to one member. Package openbaofake fakes it.
//   - MemberReader: Leader and Health of one member addressed directly, which
//     is what finding the active node needs (raftops.FindActive).
//   - Leadership: MemberReader plus StepDown, AutopilotState and Snapshot of
//     one member (raftops.TransferLeadership, the executor's snapshot action).
//   - Membership: MemberReader plus RaftConfiguration, Promote, Demote and
//     RemovePeer through one member (raftops.PromoteMember, DemoteMember,
//     RemoveMember).
//   - MemberClient (NewMemberClient, MemberConfig): Leadership and Membership
//     together; what an executor Job builds with its CA file, TLS server
//     name, dialer and the executor role.
//
// Both constructors build the same client, which owns, in this order:
//
//  1. A TLS client that trusts only the cluster CA (Config.CACertPEM or
//     MemberConfig.CAFile), optionally for a fixed server name so that a
//     member can be addressed by IP. Verification is never skipped, and BAO_*
//     environment variables (BAO_TOKEN, BAO_NAMESPACE, BAO_SKIP_VERIFY, ...)
//     cannot inject a token, a namespace or an insecure transport. The Reader
//     lets the api client follow one redirect and honours proxy variables; a
//     MemberClient does neither: a redirect means the addressed node is not
//     the active one (ErrNotActive), and following it would send the request
//     and the token to a node the caller did not pick.
//  2. Logging in to OpenBao's JWT auth method (auth/<AuthMount>/login) with a
//     projected, audience-bound service-account token, at the address the
//     request goes to. The token file is read again on every login because
//     kubelet rotates it.
//  3. Caching the resulting short-lived client token in the client (never in
//     a package variable) and logging in again once less than 20% of its TTL
//     is left, or when a request is refused with 403; the refused request is
//     then retried exactly once with the fresh token. Logins are serialized,
//     and a caller waiting for one gives up when its context ends.
//  4. Sending each request bounded by the caller's context and the per-call
//     timeout, whichever ends first (Snapshot only by the context; its login
//     by the timeout too), and mapping the answers into Health, Leader,
//     RaftConfiguration, AutopilotState and SnapshotInfo. A snapshot stream is
//     checked on the way for a complete archive (ErrIncompleteSnapshot).
//  5. Turning failures into errors that say what to check, that never contain
//     a client token or the service-account token (tokens are never logged
//     either), and that callers branch on with errors.Is (ErrLoginFailed,
//     ErrPermissionDenied, ErrBadRequest, ErrNotFound, ErrNotActive,
//     ErrNotNonVoter, ErrAlreadyNonVoter, ErrIncompleteSnapshot,
//     context.DeadlineExceeded), StatusCode, and TransienceOf, which says
//     whether repeating a request may help, also for a cause that was dropped
//     from the error because its text held a secret.
//
// The package does no Raft procedure: which node to step down, when a
// membership change counts as applied, and what to retry belong to package
// raftops, built on the interfaces here. It does not init, unseal or join
// either.
package openbao
