/* sampler_parallel: nc_sample_batch over a thread pool. Rows are split in
 * contiguous ranges, one per thread, each with its own workspace; a row's
 * result depends only on the row, so the output equals the serial one. */
#include <string.h>

#include "base/threadpool.h"
#include "sampler.h"

typedef struct par_job {
  nc_sample_workspace *const *ws;
  const nc_sample_row *rows;
  nc_sample_result *results;
  int32_t n_rows;
} par_job;

static void run_rows(void *arg, int ith, int nth) {
  const par_job *j = arg;
  int64_t lo, hi;
  nc_split_range(j->n_rows, ith, nth, &lo, &hi);
  if (lo < hi)
    nc_sample_batch(j->ws[ith], j->rows + lo, (int32_t)(hi - lo),
                    j->results + lo, NULL);
}

nc_code nc_sample_batch_parallel(nc_sample_workspace *const *ws, int n_ws,
                                 nc_threadpool *tp, const nc_sample_row *rows,
                                 int32_t n_rows, nc_sample_result *results,
                                 nc_error *err) {
  if (!ws || n_ws < 1 || !ws[0])
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sample batch: no workspace (n_ws = %d)", n_ws);
  int nth = tp ? nc_threadpool_size(tp) : 1;
  if (nth <= 1 || n_rows < 2)
    return nc_sample_batch(ws[0], rows, n_rows, results, err);
  if (n_ws < nth)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sample batch: %d workspaces for %d threads (one each)",
                   n_ws, nth);
  for (int i = 0; i < nth; i++)
    if (!ws[i])
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "sample batch: workspace %d is NULL", i);
  if (!rows || !results || n_rows < 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sample batch: rows or results missing (n_rows = %d)",
                   n_rows);
  par_job job = {ws, rows, results, n_rows};
  nc_threadpool_run(tp, run_rows, &job);
  for (int32_t r = 0; r < n_rows; r++) {
    if (results[r].status == NC_OK) continue;
    /* the first failing row again, alone, for its message */
    nc_sample_result tmp;
    nc_error row_err = {0};
    nc_code rc = nc_sample_batch(ws[0], &rows[r], 1, &tmp, &row_err);
    const char *msg = row_err.message;
    if (strncmp(msg, "row 0: ", 7) == 0) msg += 7;
    return nc_fail(err, rc ? rc : results[r].status, "row %d: %s", r, msg);
  }
  return NC_OK;
}
