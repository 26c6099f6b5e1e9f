/* kv_cache: the paged key/value cache.
 *
 * A pool of n_blocks fixed-size blocks (block_tokens positions each, 16 by
 * default) is allocated at creation. Each block stores K and V of every
 * layer for its positions, in F16 by default (llama.cpp's default cache
 * type), or BF16, Q8_0, Q4_0 (llama.cpp's --cache-type-k/-v: see
 * nc_kv_cache_create_swa). Quantized rows are quantized per head (blocks
 * of 32 along head_dim), as llama.cpp's set_rows writes them.
 * Each sequence has a block table; blocks are refcounted so that forked
 * sequences share their prefix. A shared block is copied (copy-on-write)
 * only when a sequence is about to write into it, which can only be the
 * partial last block: a fork never copies the whole prefix.
 *
 * Sliding windows (nc_kv_cache_create_swa): the layers that see only the
 * last `window` positions (a query at p sees keys p - window < j <= p) keep
 * their K/V (rows of the same types) in a second group of blocks, with a
 * second block table per sequence. The global group is the pool above
 * (n_blocks, what nc_kv_blocks_* count and nc_kv_seq_reserve / the scheduler
 * budget); the SWA group's blocks that lie wholly before what the sequence's
 * next query can see are released as its length advances (nc_kv_seq_set_len),
 * so a sequence holds about window + one step of positions there. The SWA
 * group's bound (nc_kv_swa_blocks_for) covers every sequence's window at
 * once, so it never runs short before the global group does; its storage
 * grows as blocks are taken (so it is what the windows held at most). A
 * model without windows has one group.
 *
 * A sequence's length is the number of positions whose K/V are written;
 * nc_kv_seq_reserve makes room beyond it, the forward pass writes and then
 * advances the length.
 *
 * Prefix caching (kv_prefix.c) names written full blocks by their content,
 * so that a later sequence starting with the same tokens takes the same
 * refcounted blocks (the same sharing as forks: one mechanism); blocks
 * nobody holds stay cached until the pool needs them. */
#ifndef NC_KV_CACHE_H
#define NC_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "gguf/quant.h"

typedef struct nc_kv_cache nc_kv_cache;

/* The element types of the K and V halves of a cache. */
typedef struct nc_kv_types {
  nc_type k, v;
} nc_kv_types;
#define NC_KV_TYPES_F16 ((nc_kv_types){NC_TYPE_F16, NC_TYPE_F16})

/* What the cache needs of a model's shape: its layers, KV heads, head
 * sizes of K and V, the sliding window (0: none) and the floats of
 * recurrent state each sequence carries (0: none; kv_state.c). The model
 * layer makes it from its hyperparameters (nc_hp_kv_shape). Layers of a
 * second shape (gemma4's sliding-window layers: other head counts and
 * sizes): NULL layer_alt, or n_layer flags marking the layers with
 * n_head_kv_alt heads of head_dim_alt (K) and head_dim_v_alt (V) values. */
typedef struct nc_kv_shape {
  int32_t n_layer, n_head_kv, head_dim, head_dim_v, n_swa;
  const bool *layer_alt;
  int32_t n_head_kv_alt, head_dim_alt, head_dim_v_alt;
  int64_t state_floats;
} nc_kv_shape;

/* F16, BF16, Q8_0 and Q4_0. */
bool nc_kv_type_supported(nc_type t);

/* An F16 cache. */
nc_code nc_kv_cache_create(nc_kv_shape shape, int64_t n_blocks,
                           int32_t block_tokens, int32_t max_seqs,
                           nc_kv_cache **out, nc_error *err);
/* A cache of these types (F16, BF16, Q8_0, Q4_0), with sliding windows:
 * layer_swa[l] (n_layer entries) marks the layers that see the last
 * shape.n_swa positions only; step_tokens bounds the positions one reserve
 * adds to all sequences together (the engine's token budget). NULL
 * layer_swa, no layer marked or n_swa 0: one group, every layer.
 * NC_ERR_INVALID_ARGUMENT for a type that is not a cache type or whose
 * block does not divide the head size. Both groups hold rows of these
 * types. */
nc_code nc_kv_cache_create_swa(nc_kv_shape shape, nc_kv_types types,
                               const bool *layer_swa, int64_t n_blocks,
                               int32_t block_tokens, int32_t max_seqs,
                               int32_t step_tokens, nc_kv_cache **out,
                               nc_error *err);
/* The same without sliding windows. */
nc_code nc_kv_cache_create_typed(nc_kv_shape shape, nc_kv_types types,
                                 int64_t n_blocks, int32_t block_tokens,
                                 int32_t max_seqs, nc_kv_cache **out,
                                 nc_error *err);
void nc_kv_cache_free(nc_kv_cache *kv);
/* SWA blocks that always suffice (the SWA group's bound): every sequence
 * holds at most ceil((window + align) / block_tokens) + 3 of them (align:
 * the attention's 16-lane unit), plus what one step of step_tokens
 * positions adds to all of them, plus one being copied. Only the blocks
 * taken so far get storage (nc_kv_bytes_total). */
int64_t nc_kv_swa_blocks_for(int32_t block_tokens, int32_t max_seqs,
                             int32_t window, int32_t step_tokens);

/* A new empty sequence; -1 when max_seqs are live. */
int32_t nc_kv_seq_new(nc_kv_cache *kv);
/* Releases a sequence (last block first); its blocks return to the pool
 * (indexed ones as cached) when no other sequence shares them. Ignores ids
 * that are not live. */
void nc_kv_seq_free(nc_kv_cache *kv, int32_t seq);
/* A new sequence sharing all of src's blocks and length; -1 when max_seqs
 * are live or src is not live. */
int32_t nc_kv_seq_fork(nc_kv_cache *kv, int32_t src);
/* Makes room for positions [0, n_tokens_total): allocates missing blocks and
 * copies a shared block that will be written. All or nothing: NC_ERR_BUSY
 * when the pool is short (nothing changes). */
nc_code nc_kv_seq_reserve(nc_kv_cache *kv, int32_t seq, int32_t n_tokens_total,
                          nc_error *err);
/* Blocks nc_kv_seq_reserve would take from the (global) pool
 * (copy-on-write included); 0 when nothing is needed, -1 for a seq that is
 * not live. The SWA group needs no more than these for the same call. */
int64_t nc_kv_blocks_needed(const nc_kv_cache *kv, int32_t seq,
                            int32_t n_tokens_total);
/* Keeps positions [0, n_tokens); blocks past them are released. When the
 * sliding-window K/V that position n_tokens would read was released
 * already, the sequence is cut to 0 instead (it must be recomputed). */
void nc_kv_seq_truncate(nc_kv_cache *kv, int32_t seq, int32_t n_tokens);
/* Speculative steps write positions they may take back: of extra
 * positions written past len, the most (at most extra) after which
 * nc_kv_seq_truncate back to len keeps the sequence (the sliding-window
 * K/V that len reads is not released by writing them). extra without
 * windows. A cache with recurrent state goes back only to a checkpoint
 * (nc_kv_seq_rewind). */
int32_t nc_kv_rollback_room(const nc_kv_cache *kv, int32_t len, int32_t extra);
/* Positions written (0 for a seq that is not live). */
int32_t nc_kv_seq_len(const nc_kv_cache *kv, int32_t seq);
/* Positions the sequence's reserved blocks can hold. */
int32_t nc_kv_seq_capacity(const nc_kv_cache *kv, int32_t seq);
bool nc_kv_seq_is_live(const nc_kv_cache *kv, int32_t seq);

int64_t nc_kv_blocks_total(const nc_kv_cache *kv);
int64_t nc_kv_blocks_free(const nc_kv_cache *kv);
int64_t nc_kv_blocks_used(const nc_kv_cache *kv);
int32_t nc_kv_block_tokens(const nc_kv_cache *kv);
int32_t nc_kv_max_seqs(const nc_kv_cache *kv);
/* Bytes of an F16 block of every layer (a full cache's block). */
size_t nc_kv_bytes_per_block(nc_kv_shape shape, int32_t block_tokens);
/* K and V bytes of one position over all layers (0 for a type that is not a
 * cache type or a head size its block does not divide); with swa (NULL:
 * none) only over the layers it marks (true) or does not (false)
 * (nc_kv_bytes_per_position_of). */
size_t nc_kv_bytes_per_position(nc_kv_shape shape, nc_kv_types types);
size_t nc_kv_bytes_per_position_of(nc_kv_shape shape, nc_kv_types types,
                                   const bool *layer_swa, bool swa);
nc_kv_types nc_kv_cache_types(const nc_kv_cache *kv);
/* llama.cpp rotates what goes into a quantized (Q8_0, Q4_0) half of the
 * cache by an orthonormal Walsh-Hadamard matrix (nc_fwht: fewer outliers
 * per block), when the head size is a multiple of 64: K (and Q with it) in
 * pieces of the largest power of two from 64 dividing head_dim, V in
 * pieces of 64 (and the attention output back). The width for type t, 0
 * for none. */
int32_t nc_kv_rotation(nc_type t, int32_t head_dim, bool is_k);
/* The widths of this cache's K and V halves of a layer (0: not rotated). */
int32_t nc_kv_rot_k(const nc_kv_cache *kv, int32_t layer);
int32_t nc_kv_rot_v(const nc_kv_cache *kv, int32_t layer);
/* Bytes of one position's K (V) row of a layer: its n_head_kv heads, each
 * head's part row_bytes / n_head_kv bytes (0 for a layer out of range). */
size_t nc_kv_k_row_bytes(const nc_kv_cache *kv, int32_t layer);
size_t nc_kv_v_row_bytes(const nc_kv_cache *kv, int32_t layer);
/* Layer groups (1, or 2 with sliding windows: 0 global, 1 SWA), their
 * blocks and the blocks taken (free and cached ones excluded). */
int32_t nc_kv_n_groups(const nc_kv_cache *kv);
int64_t nc_kv_group_blocks_total(const nc_kv_cache *kv, int32_t group);
int64_t nc_kv_group_blocks_used(const nc_kv_cache *kv, int32_t group);
/* K/V bytes (in the cache's types) of the blocks taken, all groups (what
 * the cache holds for live sequences), and of the storage allocated. */
size_t nc_kv_bytes_used(const nc_kv_cache *kv);
size_t nc_kv_bytes_total(const nc_kv_cache *kv);

/* ---- recurrent state (kv_state.c)
 *
 * A model with recurrent layers (qwen35's gated DeltaNet: a convolution
 * window and a state matrix per head, of a fixed size whatever the length)
 * keeps, beside a sequence's K/V blocks, one state slot of
 * shape.state_floats floats per live sequence. Slot i belongs to sequence
 * id i: allocated when the id first goes live, kept for the next sequence
 * of that id after a free (the pool: its memory follows the most sequences
 * live at once, at most max_seqs, which the engine's scheduler bounds as
 * it bounds sequences). A new sequence's state is zeros, a fork copies its
 * source's; the forward pass reads and advances it with the positions. The
 * state of a position cannot be taken back: nc_kv_seq_truncate below the
 * length cuts such a sequence to 0 (recomputed from its tokens), and
 * nc_kv_rollback_room is 0. Prefix reuse (below) needs the state at the
 * end of the reused blocks: snapshots (kv_snap.c). */

/* The state slot of a live sequence (state_floats floats), NULL for a
 * cache without state or a sequence that is not live. */
float *nc_kv_seq_state(nc_kv_cache *kv, int32_t seq);
/* Checkpoints, for speculative steps: the state of live seq at its
 * length now, copied aside (one per sequence; a later one replaces it);
 * false for a cache without state or out of memory. Rewind: back to the
 * checkpoint, its state restored and the positions past its length
 * released (the checkpoint is spent); false, nothing changed, without one
 * (a new or forked sequence has none) or when the sequence is shorter. */
bool nc_kv_seq_checkpoint(nc_kv_cache *kv, int32_t seq);
bool nc_kv_seq_rewind(nc_kv_cache *kv, int32_t seq);
/* Floats of one sequence's state (0: none). */
int64_t nc_kv_state_floats(const nc_kv_cache *kv);
/* Bytes of the state slots allocated (the pool). */
size_t nc_kv_state_bytes(const nc_kv_cache *kv);

/* ---- state snapshots (kv_snap.c)
 *
 * A cache with state keeps at most max_seqs snapshots of a sequence's
 * state, each at the end of one of its full blocks, attached to that block
 * (dropped with its content: the block freed unnamed or evicted). A prefix
 * hit (below) ends at a named block with a snapshot, and restores the
 * state from it: the hit's positions then continue bit for bit as a cold
 * run (the state after position p depends only on the tokens up to p).
 * The forward pass writes a snapshot (nc_batch_set_snapshot) while it
 * computes the block's last position. */

/* A snapshot buffer (state_floats floats) for the state of live seq after
 * position end - 1, attached to its block that ends at end (end a multiple
 * of the block size; the block reserved, the sequence's own, not yet
 * written: its length < end). rolling: drops the snapshot the sequence
 * took rolling before (a sequence keeps one rolling snapshot; others stay
 * until evicted). Past the bound, the least recently used snapshot of a
 * named block makes room. NULL: no state, no such block, no room. */
float *nc_kv_snap_take(nc_kv_cache *kv, int32_t seq, int32_t end, bool rolling);
/* The most snapshots a cache with state keeps (nc_kv_snaps_set_max): n in
 * [1, NC_KV_MAX_SNAPS] (the default is max_seqs), set before the first
 * snapshot is taken; a cache without state keeps none whatever n is.
 * Fewer snapshots than running sequences is correct, only slower: a
 * sequence that finds no slot takes none, and a later hit or a preempted
 * sequence recomputes the state from the nearest one it has. */
#define NC_KV_MAX_SNAPS 65536
nc_code nc_kv_snaps_set_max(nc_kv_cache *kv, int32_t n, nc_error *err);
/* Snapshots attached now, their bound (max_seqs unless set; 0 without
 * state), and the bytes of the snapshot buffers allocated. */
int32_t nc_kv_snaps_held(const nc_kv_cache *kv);
int32_t nc_kv_snaps_max(const nc_kv_cache *kv);
size_t nc_kv_snap_bytes(const nc_kv_cache *kv);

/* ---- prefix caching (kv_prefix.c): content-addressed full blocks
 *
 * A written full block can be indexed by the hash of (its parent's hash,
 * its token ids), rooted in a salt; when its last holder lets go it stays
 * cached (reusable, evicted LRU when the pool needs a block). Cached blocks
 * count as free: nc_kv_blocks_free includes them and nc_kv_seq_reserve
 * evicts them before it reports the pool short.
 *
 * With sliding windows, a written block's SWA part is indexed under the
 * same name while the sequence still holds it (the last window of every
 * step's end) and stays cached after; the global and the SWA blocks are
 * evicted independently. A hit of h blocks needs the global blocks [0, h)
 * and the SWA blocks from the window start of position h * bt on: the hit
 * is the longest run of global blocks cut back to the last h whose window
 * is all cached, so that a reuse reads exactly the K/V a cold run writes
 * (what is missing is recomputed).
 *
 * The name holds no float order: the caller indexes only K/V whose rows
 * all took one order (the engine's reuse orders, nc_batch_add_reusable),
 * so a position's K/V depend on its tokens alone. */

/* The chain root of a salt (NULL/0: no salt). */
uint64_t nc_kv_salt_hash(const char *salt, size_t len);
/* On an empty live sequence: roots its chain at salt and takes the longest
 * run of indexed full blocks whose token ids prefix tokens[0, n_tokens),
 * leaving at least the last token to feed (with state: the longest such
 * run whose last block has a snapshot, copied into the sequence's state).
 * Returns the positions reused (its new length, a multiple of the block
 * size); 0 otherwise. */
int32_t nc_kv_seq_attach_prefix(nc_kv_cache *kv, int32_t seq, uint64_t salt,
                                const int32_t *tokens, int32_t n_tokens);
/* What nc_kv_seq_attach_prefix would reuse now, changing nothing: the
 * positions, and in *n_idle how many of its blocks are cached (refcount 0:
 * taking them lowers nc_kv_blocks_free). */
int32_t nc_kv_prefix_peek(const nc_kv_cache *kv, uint64_t salt,
                          const int32_t *tokens, int32_t n_tokens,
                          int64_t *n_idle);
/* Indexes the sequence's written full blocks not yet indexed; tokens holds
 * the ids of its positions [0, n_tokens). */
void nc_kv_seq_publish(nc_kv_cache *kv, int32_t seq, const int32_t *tokens,
                       int32_t n_tokens);
/* Blocks that would return to the pool (free or cached) if these sequences
 * were freed: those no other sequence holds. */
int64_t nc_kv_blocks_exclusive(nc_kv_cache *kv, const int32_t *seqs,
                               int32_t n_seqs);
/* Cached blocks (indexed, refcount 0: reusable or evictable). */
int64_t nc_kv_blocks_cached(const nc_kv_cache *kv);
/* Indexed blocks, held or cached. */
int64_t nc_kv_blocks_hashed(const nc_kv_cache *kv);
/* Cached blocks taken for other content so far. */
int64_t nc_kv_evictions(const nc_kv_cache *kv);

/* ---- used by the forward pass */

/* The K (or V) row of one layer at a position below the sequence's
 * capacity, in the cache's type (nc_kv_k_row_bytes bytes). NULL when out
 * of range or released (a sliding-window layer's position before
 * nc_kv_seq_window_start). Positions of one block are contiguous. */
void *nc_kv_k_data(nc_kv_cache *kv, int32_t layer, int32_t seq, int32_t pos);
void *nc_kv_v_data(nc_kv_cache *kv, int32_t layer, int32_t seq, int32_t pos);
const void *nc_kv_k_data_c(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                           int32_t pos);
const void *nc_kv_v_data_c(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                           int32_t pos);
/* The same rows of an F16 half: n_head_kv * head_dim (head_dim_v) halves;
 * NULL when out of range, released or when that half is not F16. */
nc_fp16 *nc_kv_k_row(nc_kv_cache *kv, int32_t layer, int32_t seq, int32_t pos);
nc_fp16 *nc_kv_v_row(nc_kv_cache *kv, int32_t layer, int32_t seq, int32_t pos);
const nc_fp16 *nc_kv_k_row_c(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                             int32_t pos);
const nc_fp16 *nc_kv_v_row_c(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                             int32_t pos);
/* Marks positions [0, n_tokens) written (n_tokens <= capacity) and
 * releases the SWA blocks no later query of the sequence reads. */
void nc_kv_seq_set_len(nc_kv_cache *kv, int32_t seq, int32_t n_tokens);
/* The first position of the sequence whose sliding-window K/V is still
 * held (0 without windows). The attention of a query at p reads its
 * sliding-window layers from the start of the aligned unit holding
 * p + 1 - window (see forward.c), which is never before it. */
int32_t nc_kv_seq_window_start(const nc_kv_cache *kv, int32_t seq);
/* The refcount of the (global) block holding pos (tests and
 * diagnostics). */
int32_t nc_kv_block_refcount(const nc_kv_cache *kv, int32_t seq, int32_t pos);

#endif
