/* nucleus serve: the set of engine requests in flight, so that shutdown
 * can wait for them to drain and then cancel the rest. Thread-safe. */
#ifndef NUCLEUS_SERVER_INFLIGHT_H
#define NUCLEUS_SERVER_INFLIGHT_H

#include <stddef.h>

#include "nucleus.h"

typedef struct inflight inflight;

inflight *inflight_create(void);
void inflight_destroy(inflight *set);

/* Adds a request; returns a slot token for inflight_remove, or -1 when
 * out of memory. */
int inflight_add(inflight *set, nucleus_request *req);
void inflight_remove(inflight *set, int slot);

size_t inflight_count(inflight *set);

/* Cancels every request in the set (they stay until their owner removes
 * them). */
void inflight_cancel_all(inflight *set);

#endif
