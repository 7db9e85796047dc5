/* SPDX-License-Identifier: MIT */
/*
 * kcr_faultproxy: a TCP proxy for tests that can break the network on demand.
 *
 * A proxy listens on 127.0.0.1 on a port the kernel picks and forwards every
 * accepted connection byte for byte to one target host:port (TLS passes
 * through untouched: the client verifies the target's certificate as if it
 * had connected directly, so the target's SANs must cover the name the client
 * uses, e.g. 127.0.0.1). A test points a client at kcr_faultproxy_port() and
 * then injects faults:
 *
 *  - cut:     every open connection is closed on both sides with a reset
 *             (SO_LINGER 0); later connections are accepted as usual;
 *  - stall:   no byte moves in either direction while on; connections stay
 *             open and new ones are accepted (and connected to the target)
 *             but see nothing: a blackholed, half-open network;
 *  - refuse:  new connections are accepted and reset at once while on.
 *
 * One thread per proxy owns every socket and runs a poll() loop with a 50 ms
 * timeout, woken at once through a pipe by the control calls. Each direction
 * of a connection has one fixed buffer (16 KiB), so memory is bounded; a
 * proxy holds at most KCR_FAULTPROXY_MAX_CONNS connections at once and resets
 * any beyond that. The control calls are synchronous: when stall(), refuse()
 * or cut() returns, the proxy thread has applied it (no byte is forwarded
 * after stall(true) returns; every connection open when cut() was called is
 * closed when it returns).
 *
 * Every function may be called from any thread except the ones noted; none
 * may be called on a proxy after (or concurrently with) kcr_faultproxy_stop().
 * Needs only C11, pthreads and POSIX sockets; all sockets are close-on-exec,
 * so children forked by the test (kubectl) never hold a proxied connection.
 */
#ifndef KCR_FAULTPROXY_H
#define KCR_FAULTPROXY_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* KCR_FAULTPROXY_MAX_CONNS: connections open at once; more are reset. */
#define KCR_FAULTPROXY_MAX_CONNS 256

/* An opaque proxy; created by kcr_faultproxy_start, freed by kcr_faultproxy_stop. */
typedef struct kcr_faultproxy kcr_faultproxy_t;

/*
 * kcr_faultproxy_start resolves target_host (a name or address, borrowed) and
 * target_port, listens on 127.0.0.1:0 and starts the proxy thread. On success
 * stores a new proxy in *out and returns 0; on failure stores NULL and returns
 * a negative errno value (-EINVAL for bad arguments, -EHOSTUNREACH if the
 * target does not resolve). The target is not contacted until a client
 * connects; a target that refuses then makes the proxy reset that client.
 */
int kcr_faultproxy_start(const char *target_host, int target_port, kcr_faultproxy_t **out);

/* kcr_faultproxy_port is the loopback port the proxy listens on. */
int kcr_faultproxy_port(const kcr_faultproxy_t *p);

/*
 * kcr_faultproxy_cut closes every open connection, client and target side,
 * with a reset (SO_LINGER 0), and returns how many it closed. Connections
 * accepted after the call are forwarded as usual (subject to stall/refuse).
 */
int kcr_faultproxy_cut(kcr_faultproxy_t *p);

/*
 * kcr_faultproxy_stall(p, true) stops forwarding in both directions; bytes
 * already read stay buffered and flow again after kcr_faultproxy_stall(p,
 * false). While stalled, new connections are accepted and connected to the
 * target but get no byte forwarded, and a peer's close is not noticed (the
 * proxy does not read), so active() does not drop until the stall ends.
 */
void kcr_faultproxy_stall(kcr_faultproxy_t *p, bool on);

/*
 * kcr_faultproxy_refuse(p, true) makes the proxy accept each new connection
 * and reset it at once (the client sees ECONNRESET or EOF); connections
 * already open are not touched. kcr_faultproxy_refuse(p, false) restores
 * forwarding for new connections.
 */
void kcr_faultproxy_refuse(kcr_faultproxy_t *p, bool on);

/*
 * kcr_faultproxy_connections is how many connections the proxy has accepted
 * since it started, refused and over-limit ones included.
 */
unsigned long kcr_faultproxy_connections(kcr_faultproxy_t *p);

/*
 * kcr_faultproxy_bytes_down is how many bytes the proxy has read from the
 * target (the server's side: TLS records as they cross the network) since it
 * started, over every connection.
 */
unsigned long long kcr_faultproxy_bytes_down(kcr_faultproxy_t *p);

/*
 * kcr_faultproxy_active is how many proxied connections are open now: a
 * connection counts from its accept until both of its sockets are closed
 * (both peers done, an error, cut() or stop()).
 */
int kcr_faultproxy_active(kcr_faultproxy_t *p);

/*
 * kcr_faultproxy_stop closes the listener and every connection (with a
 * reset), joins the proxy thread and frees the proxy. NULL is a no-op.
 */
void kcr_faultproxy_stop(kcr_faultproxy_t *p);

#ifdef __cplusplus
}
#endif

#endif /* KCR_FAULTPROXY_H */
