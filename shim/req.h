/* req.h - requests on the program's inbound connections (core/request.h
 * decides; this file moves the bytes).
 *
 * A connection some inbound request rule matches carries a request state
 * in its descriptor entry (fd.h). Before the program reads, the shim peeks
 * at what the kernel holds and lets the read take only the bytes before
 * the first head that is not decided, held (delay) or denied: the program
 * never sees a request that was not let through, and the bytes it reads
 * are never changed.
 *   - an incomplete head or a held one: a blocking read waits here (its
 *     SO_RCVTIMEO and signals keep their meaning, shim/wait.h); a
 *     non-blocking one gets EAGAIN and the readiness layer hides the
 *     descriptor until it is worth trying again;
 *   - a denied head (reply): the program reads end-of-file there, so it
 *     finishes the responses of the requests it already read, in order,
 *     and shuts down or closes; the 429 is written then, first, and the
 *     connection lingers until the client has read it (shim/linger.c);
 *   - reject: the read fails with ECONNRESET and the close resets.
 */
#ifndef SL_REQ_H
#define SL_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fd.h"

struct sl_runtime;
struct sl_addr;

/* accept.c: fd was accepted from peer on local (NULL: not known). */
void sl_req_accept(struct sl_runtime *rt, int fd, const struct sl_addr *local,
                   const struct sl_addr *peer);

/* io.c, before a read of up to len bytes of a request connection: how
 * many bytes the read may take (> 0); 0 for end-of-file; -1 with errno. */
ssize_t sl_req_before_read(int fd, struct sl_fd *e, size_t len, bool nonblock);

/* io.c, after the read took `got` bytes into iov (MSG_PEEK reads: not). */
void sl_req_after_read(struct sl_fd *e, const struct iovec *iov, int iovcnt, size_t got);

/* close.c: fd is being closed; a 429 due is written. True when the
 * descriptor must linger rather than close (shim/linger.c): the withheld
 * request is unread, and closing now would reset the connection and lose
 * the 429. */
bool sl_req_close(int fd, struct sl_fd *e);

/* close.c: the program shuts fd down for writing: a 429 due is written
 * first. */
void sl_req_shutdown(int fd, struct sl_fd *e);

/* fd.c: the entry is forgotten; frees the request state. */
void sl_req_free(struct sl_fd *e);

#endif
