/* nucleus serve: counters and latency histograms, rendered in the
 * Prometheus text format. Thread-safe. */
#ifndef NUCLEUS_SERVER_METRICS_H
#define NUCLEUS_SERVER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "nucleus.h"

typedef struct metrics metrics;

metrics *metrics_create(void);
void metrics_destroy(metrics *m);

void metrics_count_response(metrics *m, unsigned status);
void metrics_add_tokens(metrics *m, int64_t prompt, int64_t generated);
void metrics_observe_ttft(metrics *m, double seconds);
void metrics_observe_itl(metrics *m, double seconds);

/* The exposition text (allocated; free()); NULL when out of memory.
 * stats may be NULL when there is no engine. */
char *metrics_render(metrics *m, const nucleus_engine_stats *stats,
                     size_t requests_in_flight);

#endif
