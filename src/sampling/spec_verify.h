/* spec_verify: which drafted tokens a completion keeps (speculative
 * decoding, docs/SPECULATIVE.md).
 *
 * A drafter proposes tokens d_1..d_k after a completion's last token; the
 * model scores the last token and the drafts in one forward call, which
 * gives the target's logits at k + 1 positions. Position j is verified with
 * the row (sampler.h) of its logits and its sampler as it stands after
 * d_1..d_j were accepted (its step and its penalty history include them;
 * its grammar mask is the matcher's after them), so that p, the final
 * distribution of that row, is what decoding without drafts would sample
 * from at that position. The verification of position j:
 *
 *   - NC_SPEC_EXACT (Leviathan et al. 2023, Chen et al. 2023): accept the
 *     draft x with probability min(1, p(x) / q(x)); on a rejection emit a
 *     token drawn from the normalised residual max(0, p - q). The emitted
 *     token is distributed as p exactly.
 *   - NC_SPEC_STRICT (llama.cpp's server): draw y from p; the draft is kept
 *     when y == x, and y is emitted either way. Exact too, whatever chose
 *     x, but it keeps x with probability p(x): sum_x p(x) q(x) for a draw
 *     from q (against sum_x min(p(x), q(x))), p of q's mode for the mode,
 *     which is what a drafter proposes under it (nc_spec_draft_token).
 *
 * q is the drafter's distribution at that position: a draft model's final
 * distribution (n_vocab probabilities), or NULL for a point mass on x (the
 * n-gram drafter and predicted outputs). For a point mass the two rules
 * are the same rule: y is the draw of decoding without drafts (the same
 * generator address (seed, stream, step), draw 0), the draft is accepted
 * when y == x, which happens with probability p(x) = min(1, p(x) / 1), and
 * a rejection emits y, distributed as p restricted to tokens other than x:
 * the normalised residual max(0, p - 1[x]). So with point masses a
 * speculative run emits exactly the tokens of a run without drafts (given
 * the same logits, which batch invariance gives), at every temperature.
 *
 * With q, EXACT takes its two uniforms from the same generator address
 * with draws 1 (acceptance) and 2 (the residual), STRICT takes draw 0. When
 * every draft is accepted, the bonus token is drawn from the last row's p
 * as decoding without drafts draws (nc_sample_batch). */
#ifndef NC_SPEC_VERIFY_H
#define NC_SPEC_VERIFY_H

#include <stdbool.h>

#include "sampler.h"

typedef enum nc_spec_rule {
  NC_SPEC_EXACT, /* min(1, p / q), then the residual */
  NC_SPEC_STRICT /* draw from p, keep the draft when equal */
} nc_spec_rule;

/* The generator's draw indices of one position (rng.h): the sampler's own
 * draw is 0. */
enum { NC_SPEC_DRAW_ACCEPT = 1, NC_SPEC_DRAW_RESIDUAL = 2 };

/* Verifies draft at the position of row: res is the emitted token (the
 * draft when *accepted; otherwise the replacement), its logprob and top
 * logprobs as the sampler asks (the target's, as nc_sample_batch gives
 * them); q as above (NULL: a point mass). The row's inspect record is
 * filled for point masses only. res->status and the return value tell a
 * failed row (NaN logits, everything masked, a draft out of range). */
nc_code nc_spec_verify(nc_sample_workspace *ws, const nc_sample_row *row,
                       int32_t draft, const float *q, nc_spec_rule rule,
                       nc_sample_result *res, bool *accepted, nc_error *err);

/* What a drafter with a distribution (a draft model, an MTP head) proposes
 * at a row of its logits, its sampler standing for the completion's
 * pipeline and history. Under NC_SPEC_EXACT a draw from its final
 * distribution q, written to q[0..n_vocab) for the verifier; under
 * NC_SPEC_STRICT the mode of q (ties to the lower id), q not written: the
 * strict rule keeps a draft x with probability p(x) whatever chose it, and
 * the mode of q is the draft p most likely keeps where q is near p (a draw
 * from q is kept with probability sum_x q(x) p(x), less where q is flat).
 * ids and probs: workspace of n_vocab each. The token, or -1 when the row
 * fails (NaN logits, everything masked). */
int32_t nc_spec_draft_token(nc_sample_workspace *ws, const nc_sample_row *row,
                            nc_spec_rule rule, int32_t *ids, double *probs,
                            float *q);

#endif
