// Attention over a KV cache: causal or not, sliding window, grouped-query, online softmax over
// blocks of keys (flash-style) with float32 accumulators. The block loop is shared by every level;
// the table's kv_dot / exp_sum / kv_axpy / scale (and, where a level has them, kv_dot_group /
// kv_axpy_group for decoding and kv_dot_rows / kv_axpy_rows for prompts) do the per-key work.
//
// Work is split into (token, kv head) items: the query heads that share a kv head go through each
// block of keys together, each key row used by all of them as it comes from memory (or, on a
// level without the group kernels, one after the other, the rest of the group reading the block
// from L1 or L2), and prompts go by tiles of tokens instead (see kTileMinTokens). A query's
// visible keys always form one contiguous range of positions, so there is no per-key mask: the
// range is cut into partitions of kPartitionKeys keys, each reduced on its own to (max, sum,
// acc), and the partitions are merged in order. When there are fewer items than threads
// (decoding), the partitions themselves run in parallel; otherwise each item runs its partitions
// in sequence, two kv heads of a token side by side (kSideBySideHeads). Both orders do the same
// arithmetic, and a row's arithmetic does not depend on its tile (see kTileBlockKeys), so the
// output never depends on the thread count.

#include "kernels/ops_table.h"
#include "kernels/thread_pool.h"

#include <oxinfer/error.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "kernels/x86/prefetch.h"
#endif

namespace oxinfer::kernels {
namespace {

constexpr int64_t kBlockKeys = 64;       // keys scored at once: the block's K and V rows stay in L1
constexpr int64_t kPartitionKeys = 512;  // keys per independently reduced partition
// Decoding reads this many kv heads' rows side by side, one stream each. On a 2-core Zen 5 VM,
// Qwen3-0.6B's f32 cache (8 kv heads, 2 threads, after 12 MB of other reads as between two
// layers): a plain read at 64 positions took 13-16 us with two heads side by side against 20-22
// head after head, and four were no faster than two; attention itself (with the keys of each
// thread's next unit asked for ahead), medians of 8 alternating runs, 6.8 against 9.5 us at
// position 0 and 24.7 against 27.7 at 64; in tg128 of Qwen3-0.6B q4_k, 27-31 against 30-33 us a
// layer (four alternating pairs).
constexpr int64_t kSideBySideHeads = 2;
// Prefill: calls of at least kTileMinTokens tokens go by tiles of up to kTileTokens tokens (all
// their query heads of one kv head as rows), each block of kTileBlockKeys keys read once for all
// rows: 16 KB of f32 K and V each, L1-resident while every row uses them. Token by token, every
// token read the whole cache again from L2/L3, which bounded attention by that bandwidth (a fifth
// of a 512-token prefill of Qwen3-0.6B). Shorter calls (decoding, drafts) keep the per-token items.
// Blocks start at kv_begin + multiples of kTileBlockKeys (and at the ring's turn), whatever the
// tile: a row's arithmetic is then the same in any tile, so tiles may shrink to give every
// thread work without changing a bit.
constexpr int64_t kTileMinTokens = 32;
constexpr int64_t kTileTokens = 16;
constexpr int64_t kTileBlockKeys = 32;

// Asks for the line at p: its page's address translation starts now. (x86: prefetch.h's volatile
// asm, which the compiler keeps in a loop that does nothing else.)
inline void ask_for_line(const std::byte* p) {
#if defined(__x86_64__) || defined(_M_X64)
    prefetch_line(p);
#elif defined(__GNUC__) && defined(__aarch64__)
    asm volatile("prfm pldl1keep, %0" : : "Q"(*p));
#else
    (void)p;
#endif
}

struct Range {
    int64_t lo = 0, hi = 0;  // visible key positions [lo, hi)
    int64_t partitions() const { return hi > lo ? (hi - lo + kPartitionKeys - 1) / kPartitionKeys : 0; }
};

// Online-softmax state of one (token, head) over some keys: out = acc / sum, all relative to max.
// Stored as [max, sum, acc[head_dim]] in a float buffer.
struct State {
    float* data;
    float& max() const { return data[0]; }
    float& sum() const { return data[1]; }
    float* acc() const { return data + 2; }
};

// out = acc / sum, or zeros when no key was visible (sum 0).
void finish(const OpsTable& table, const float* acc, float sum, float* out, int64_t dim) {
    if (sum > 0) {
        std::copy(acc, acc + dim, out);
        table.scale(out, 1.0f / sum, dim);
    } else {
        std::fill(out, out + dim, 0.0f);
    }
}

// One block's scores s[0, n) of a row into its running softmax (max, sum, acc[dim]): scaled and
// capped, then exp(s - max) in place; acc is rescaled when the max grows. The caller adds the
// weighted values.
void softmax_step(const OpsTable& table, const AttentionParams& p, float* s, int64_t n, float& max, float& sum, float* acc) {
    for (int64_t j = 0; j < n; ++j) s[j] *= p.scale;
    if (p.softcap > 0) table.softcap(s, p.softcap, n);
    float block_max = max;
    for (int64_t j = 0; j < n; ++j) block_max = std::max(block_max, s[j]);
    if (block_max > max) {  // rescale what was accumulated against the old max
        const float factor = std::exp(max - block_max);
        sum *= factor;
        table.scale(acc, factor, p.head_dim);
        max = block_max;
    }
    sum += static_cast<float>(table.exp_sum(s, n, max));
}

// Consecutive cache rows of one kv head: a block of keys, or none.
struct Rows {
    const std::byte* data = nullptr;
    int64_t count = 0;
};

struct Job {
    const OpsTable& table;
    const AttentionParams& p;
    const float* q;
    const int64_t* positions;
    const KvCacheView& k;
    const KvCacheView& v;
    int64_t kv_begin, kv_end;
    int kv_type;
    int64_t group;       // query heads per kv head
    int64_t state_size;  // floats per State: head_dim + 2

    Range visible(int64_t t) const {
        if (!p.causal) return {kv_begin, kv_end};
        const int64_t pos = positions[t];
        int64_t lo = kv_begin;
        if (p.window > 0) lo = std::max(lo, pos - p.window + 1);
        return {lo, std::max(lo, std::min(kv_end, pos + 1))};
    }

    const std::byte* row(const KvCacheView& cache, int64_t kv_head, int64_t position) const {
        const int64_t slot = cache.ring_size > 0 ? position % cache.ring_size : position;
        return cache.data + kv_head * cache.head_stride + slot * cache.position_stride;
    }

    // Asks for one line of every 4 KB page of the keys and values [lo, hi) of kv heads [first,
    // end), so that the pages' address translations are under way before the rows are read. On a
    // VM whose host maps memory in 4 KB pages each one costs a walk through two page tables, which
    // the rows' own prefetch, a few rows ahead, starts too late: Qwen3-0.6B decoding on a 2-core
    // Zen 5 VM, tokens with and without taking turns (medians), was 1.2% faster from 0 to 128
    // positions, 3.3% at 256 and 8.8% at 1024; a page asked for 16 KB ahead within each stream
    // instead gained nothing.
    void translate_ahead(int64_t first, int64_t end, int64_t lo, int64_t hi) const {
        if (lo >= hi) return;
        constexpr int64_t kPageBytes = 4096;
        for (const KvCacheView* cache : {&k, &v}) {
            const int64_t step = std::max<int64_t>(1, kPageBytes / cache->position_stride);
            for (int64_t h = first; h < end; ++h) {
                for (int64_t position = lo; position < hi; position += step) ask_for_line(row(*cache, h, position));
                ask_for_line(row(*cache, h, hi - 1));  // the last rows' page, which the steps may pass over
            }
        }
    }

    int64_t block_keys(int64_t from, int64_t hi) const {
        // A block is at most kBlockKeys keys of consecutive slots (a ring wraps between blocks).
        const int64_t count = std::min(kBlockKeys, hi - from);
        return k.ring_size > 0 ? std::min(count, k.ring_size - from % k.ring_size) : count;
    }

    // The block of keys from `from` of token t's kv head kv_head (none past its visible keys).
    Rows first_block(int64_t t, int64_t kv_head, int64_t from) const {
        const int64_t hi = visible(t).hi;
        return from < hi ? Rows{row(k, kv_head, from), block_keys(from, hi)} : Rows{};
    }
    Rows first_block(int64_t t, int64_t kv_head) const { return first_block(t, kv_head, visible(t).lo); }

    // Reduces keys [lo, hi) for the `group` query heads of each of kv heads [kv_head, kv_head +
    // heads) at token t into fresh states (states + r·state_size for row r = h·group + g, query
    // head (kv_head + h)·group + g); `scores` holds heads·group·kBlockKeys. The group kernels read
    // the kv heads' rows side by side, one stream each; `following` is where the thread reads next
    // (the same heads' first block, at the same head stride), asked for ahead while the last
    // values are added.
    void partial(int64_t t, int64_t kv_head, int64_t heads, int64_t lo, int64_t hi, float* states, float* scores,
                 const std::byte* following = nullptr, int64_t following_count = 0) const {
        const int64_t dim = p.head_dim, rows = heads * group;
        for (int64_t r = 0; r < rows; ++r) {
            const State s{states + r * state_size};
            s.max() = -INFINITY;
            s.sum() = 0;
            std::fill(s.acc(), s.acc() + dim, 0.0f);
        }
        const auto dot_group = table.kv_dot_group[kv_type];
        const auto axpy_group = table.kv_axpy_group[kv_type];
        const float* queries = q + (t * p.heads + kv_head * group) * dim;
        for (int64_t first = lo; first < hi;) {
            const int64_t count = block_keys(first, hi);
            const std::byte* keys = row(k, kv_head, first);
            const std::byte* values = row(v, kv_head, first);
            if (dot_group && axpy_group) {
                // Every query head over each key, then over each value, then the next block's keys.
                const bool last = first + count >= hi;
                const std::byte* next = last ? following : row(k, kv_head, first + count);
                const int64_t next_count = last ? following_count : block_keys(first + count, hi);
                dot_group(queries, group, heads, keys, k.head_stride, k.position_stride, count, dim, scores, kBlockKeys, values, count);
                for (int64_t r = 0; r < rows; ++r) {
                    const State s{states + r * state_size};
                    softmax_step(table, p, scores + r * kBlockKeys, count, s.max(), s.sum(), s.acc());
                }
                axpy_group(scores, kBlockKeys, group, heads, values, v.head_stride, v.position_stride, count, dim, State{states}.acc(),
                           state_size, next, next_count);
                first += count;
                continue;
            }
            for (int64_t r = 0; r < rows; ++r) {
                const State s{states + r * state_size};
                const int64_t h = r / group;
                table.kv_dot[kv_type](queries + r * dim, keys + h * k.head_stride, k.position_stride, count, dim, scores);
                softmax_step(table, p, scores, count, s.max(), s.sum(), s.acc());
                table.kv_axpy[kv_type](scores, values + h * v.head_stride, v.position_stride, count, dim, s.acc());
            }
            first += count;
        }
    }

    // kv_dot_rows / kv_axpy_rows, or the level's one-row kernels row by row where it has none.
    void score_rows(const float* queries, int64_t rows, const std::byte* keys, int64_t count, float* scores) const {
        const int64_t dim = p.head_dim;
        if (table.kv_dot_rows[kv_type]) return table.kv_dot_rows[kv_type](queries, dim, rows, keys, k.position_stride, count, dim, scores, kTileBlockKeys);
        for (int64_t r = 0; r < rows; ++r) table.kv_dot[kv_type](queries + r * dim, keys, k.position_stride, count, dim, scores + r * kTileBlockKeys);
    }
    void accumulate_rows(const float* weights, int64_t rows, const std::byte* values, int64_t count, float* acc) const {
        const int64_t dim = p.head_dim;
        if (table.kv_axpy_rows[kv_type]) return table.kv_axpy_rows[kv_type](weights, kTileBlockKeys, rows, values, v.position_stride, count, dim, acc, dim);
        for (int64_t r = 0; r < rows; ++r) table.kv_axpy[kv_type](weights + r * kTileBlockKeys, values, v.position_stride, count, dim, acc + r * dim);
    }

    // Tokens [t0, t1) for kv head `kv_head`: row r is token t0 + r / group, query head
    // kv_head·group + r % group. A block holds the keys any row sees; each row gives the others
    // weight 0, which adds exact zeros (all of them lie in the cached range; only a value that is
    // not finite, i.e. a model already producing Inf or NaN, would spread to rows that do not see it).
    void tile(int64_t t0, int64_t t1, int64_t kv_head, std::vector<float>& scratch, float* out) const {
        const int64_t dim = p.head_dim;
        const int64_t rows = (t1 - t0) * group;
        scratch.resize(static_cast<size_t>(rows * (2 * dim + kTileBlockKeys + 2)));
        float* queries = scratch.data();
        float* acc = queries + rows * dim;
        float* scores = acc + rows * dim;
        float* max = scores + rows * kTileBlockKeys;
        float* sum = max + rows;
        int64_t lo = kv_end, hi = kv_begin;
        for (int64_t t = t0; t < t1; ++t) {
            const Range range = visible(t);
            if (range.hi > range.lo) {
                lo = std::min(lo, range.lo);
                hi = std::max(hi, range.hi);
            }
            const float* query = q + (t * p.heads + kv_head * group) * dim;
            std::copy(query, query + group * dim, queries + (t - t0) * group * dim);
        }
        std::fill(acc, acc + rows * dim, 0.0f);
        std::fill(max, max + rows, -INFINITY);
        std::fill(sum, sum + rows, 0.0f);
        if (lo >= hi) lo = hi = kv_begin;
        for (int64_t first = lo - (lo - kv_begin) % kTileBlockKeys; first < hi;) {
            int64_t count = std::min(kTileBlockKeys - (first - kv_begin) % kTileBlockKeys, hi - first);
            if (k.ring_size > 0) count = std::min(count, k.ring_size - first % k.ring_size);
            score_rows(queries, rows, row(k, kv_head, first), count, scores);
            for (int64_t r = 0; r < rows; ++r) {
                const Range range = visible(t0 + r / group);
                float* s = scores + r * kTileBlockKeys;
                const int64_t a = std::clamp(range.lo - first, int64_t{0}, count), b = std::clamp(range.hi - first, int64_t{0}, count);
                std::fill(s, s + a, 0.0f);
                std::fill(s + std::max(a, b), s + count, 0.0f);
                if (a < b) softmax_step(table, p, s + a, b - a, max[r], sum[r], acc + r * dim);
            }
            accumulate_rows(scores, rows, row(v, kv_head, first), count, acc);
            first += count;
        }
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t t = t0 + r / group, g = r % group;
            finish(table, acc + r * dim, sum[r], out + (t * p.heads + kv_head * group + g) * dim, dim);
        }
    }
};

// into = merge(into, other): both rescaled to the larger max.
void merge(const State& into, const State& other, int64_t dim) {
    const float max = std::max(into.max(), other.max());
    const float a = std::exp(into.max() - max), b = std::exp(other.max() - max);
    into.sum() = into.sum() * a + other.sum() * b;
    for (int64_t i = 0; i < dim; ++i) into.acc()[i] = into.acc()[i] * a + other.acc()[i] * b;
    into.max() = max;
}

void finish(const OpsTable& table, const State& state, float* out, int64_t dim) { finish(table, state.acc(), state.sum(), out, dim); }

void check(const AttentionParams& p, const KvCacheView& k, const KvCacheView& v, int64_t kv_begin, int64_t kv_end) {
    const auto fail = [](const std::string& problem) { throw Error("attention", problem); };
    if (p.heads <= 0 || p.kv_heads <= 0 || p.head_dim <= 0 || p.heads % p.kv_heads != 0)
        fail("heads " + std::to_string(p.heads) + " must be a positive multiple of kv_heads " + std::to_string(p.kv_heads) +
             " and head_dim " + std::to_string(p.head_dim) + " positive");
    if (p.window < 0 || (!p.causal && p.window > 0)) fail("a sliding window needs causal attention");
    if (kv_begin < 0 || kv_end < kv_begin) fail("bad cached range");
    for (const KvCacheView* cache : {&k, &v}) {
        if (cache->dtype != DType::F32 && cache->dtype != DType::F16 && cache->dtype != DType::BF16)
            fail("the KV cache must be f32, f16 or bf16, not " + std::string(dtype_name(cache->dtype)));
        if (cache->ring_size < 0 || (cache->ring_size > 0 && kv_end - kv_begin > cache->ring_size))
            fail("the cached range [" + std::to_string(kv_begin) + ", " + std::to_string(kv_end) +
                 ") does not fit a ring of " + std::to_string(cache->ring_size));
    }
    if (k.dtype != v.dtype || k.ring_size != v.ring_size) fail("K and V caches must have the same type and ring size");
}

int kv_type_of(DType type) { return type == DType::F32 ? KvF32 : type == DType::F16 ? KvF16 : KvBf16; }

}  // namespace

void attention_with(const OpsTable& table, const AttentionParams& params, const float* q, int64_t tokens,
                    const int64_t* query_positions, const KvCacheView& k, const KvCacheView& v, int64_t kv_begin,
                    int64_t kv_end, float* out, ThreadPool& pool, const RangeCallback* prepare) {
    check(params, k, v, kv_begin, kv_end);
    if (tokens <= 0) return;
    const int64_t dim = params.head_dim;
    const int64_t group = params.heads / params.kv_heads;
    const Job job{table, params, q, query_positions, k, v, kv_begin, kv_end, kv_type_of(k.dtype), group, dim + 2};
    const int64_t items = tokens * params.kv_heads;  // (token, kv head), each with `group` query heads
    int64_t max_partitions = 0;
    for (int64_t t = 0; t < tokens; ++t) max_partitions = std::max(max_partitions, job.visible(t).partitions());
    // Items in a static split over the threads (below), each thread its contiguous share.
    const bool static_split = tokens < kTileMinTokens && (items >= 2 * pool.size() || max_partitions <= 1);
    // One token in that split: each thread prepares the kv heads it attends.
    const bool prepare_per_thread = static_split && tokens == 1;
    if (prepare && !prepare_per_thread) (*prepare)(0, params.kv_heads);
    if (tokens >= kTileMinTokens) {
        // Smaller tiles where there are few kv heads: about four per thread. Tiles are handed out
        // last first, since causal tiles grow with the token index.
        int64_t tile_tokens = kTileTokens;
        const auto tiles = [&] { return (tokens + tile_tokens - 1) / tile_tokens; };
        while (tile_tokens > 1 && tiles() * params.kv_heads < 4 * pool.size()) tile_tokens /= 2;
        const int64_t units = tiles() * params.kv_heads;
        std::atomic<int64_t> next{0};
        pool.run([&](int, int) {
            std::vector<float> scratch;
            for (int64_t unit; (unit = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
                const int64_t tile = tiles() - 1 - unit / params.kv_heads, kv_head = unit % params.kv_heads;
                job.tile(tile * tile_tokens, std::min(tokens, (tile + 1) * tile_tokens), kv_head, scratch, out);
            }
        });
        return;
    }

    const int64_t group_size = group * job.state_size;

    // The output of item `item`'s query head g.
    const auto output = [&](int64_t item, int64_t g) {
        const int64_t t = item / params.kv_heads, kv_head = item % params.kv_heads;
        return out + (t * params.heads + kv_head * group + g) * dim;
    };

    if (static_split) {
        // Enough items to keep every thread busy: each unit of kSideBySideHeads kv heads of one
        // token merges its partitions in sequence. Each thread takes a contiguous share of the
        // units (their tokens differ by at most the kTileMinTokens keys of a short call) and asks
        // for each unit's first keys while it ends the one before, so that its rows come from
        // memory as kSideBySideHeads streams without a pause.
        const int64_t units_per_token = (params.kv_heads + kSideBySideHeads - 1) / kSideBySideHeads, units = tokens * units_per_token;
        const auto unit_heads = [&](int64_t unit) {
            const int64_t first = unit % units_per_token * kSideBySideHeads;
            return std::pair{first, std::min(kSideBySideHeads, params.kv_heads - first)};
        };
        pool.run([&](int thread, int threads) {
            const int64_t unit_size = kSideBySideHeads * group_size;
            std::vector<float> scratch(static_cast<size_t>(2 * unit_size + kSideBySideHeads * group * kBlockKeys));
            float* total = scratch.data();
            float* part = scratch.data() + unit_size;
            float* scores = part + unit_size;
            const int64_t end = units * (thread + 1) / threads;
            if (tokens == 1 && units * thread / threads < end) {
                // One token: unit u holds kv heads [u * kSideBySideHeads, ...). Their cache pages
                // are translated while the thread prepares them.
                const int64_t first_head = units * thread / threads * kSideBySideHeads, end_head = std::min(params.kv_heads, end * kSideBySideHeads);
                const Range range = job.visible(0);
                job.translate_ahead(first_head, end_head, range.lo, range.hi);
                if (prepare) (*prepare)(first_head, end_head);
            }
            for (int64_t unit = units * thread / threads; unit < end; ++unit) {
                const int64_t t = unit / units_per_token;
                const auto [kv_head, heads] = unit_heads(unit);
                const Range range = job.visible(t);
                for (int64_t index = 0; index < range.partitions(); ++index) {
                    const int64_t lo = range.lo + index * kPartitionKeys, hi = std::min(range.hi, lo + kPartitionKeys);
                    Rows following;  // the partition after this one, or the next unit's first (as many heads)
                    if (hi < range.hi)
                        following = job.first_block(t, kv_head, hi);
                    else if (unit + 1 < end && unit_heads(unit + 1).second == heads)
                        following = job.first_block((unit + 1) / units_per_token, unit_heads(unit + 1).first);
                    job.partial(t, kv_head, heads, lo, hi, index == 0 ? total : part, scores, following.data, following.count);
                    if (index > 0)
                        for (int64_t r = 0; r < heads * group; ++r)
                            merge(State{total + r * job.state_size}, State{part + r * job.state_size}, dim);
                }
                for (int64_t r = 0; r < heads * group; ++r) {
                    if (range.partitions() == 0) total[r * job.state_size + 1] = 0;  // sum 0: zeros
                    finish(table, State{total + r * job.state_size}, output(t * params.kv_heads + kv_head + r / group, r % group), dim);
                }
            }
        });
        return;
    }

    // Few items (decoding): every partition of every item is a unit of work with its own states.
    std::vector<float> states(static_cast<size_t>(items * max_partitions * group_size));
    const auto states_at = [&](int64_t item, int64_t index) { return states.data() + (item * max_partitions + index) * group_size; };
    const int64_t units = items * max_partitions;
    std::atomic<int64_t> next{0};
    pool.run([&](int, int) {
        std::vector<float> scores(static_cast<size_t>(group * kBlockKeys));
        for (int64_t unit; (unit = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
            const int64_t item = unit / max_partitions, index = unit % max_partitions;
            const int64_t t = item / params.kv_heads, kv_head = item % params.kv_heads;
            const Range range = job.visible(t);
            if (index >= range.partitions()) continue;
            const int64_t lo = range.lo + index * kPartitionKeys;
            job.partial(t, kv_head, 1, lo, std::min(range.hi, lo + kPartitionKeys), states_at(item, index), scores.data());
        }
    });
    pool.parallel_for(items, 1, [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
            const Range range = job.visible(item / params.kv_heads);
            float* total = states_at(item, 0);
            for (int64_t index = 1; index < range.partitions(); ++index)
                for (int64_t g = 0; g < group; ++g)
                    merge(State{total + g * job.state_size}, State{states_at(item, index) + g * job.state_size}, dim);
            for (int64_t g = 0; g < group; ++g) {
                if (range.partitions() == 0) total[g * job.state_size + 1] = 0;  // sum 0: zeros
                finish(table, State{total + g * job.state_size}, output(item, g), dim);
            }
        }
    });
}

void attention(const AttentionParams& params, const float* q, int64_t tokens, const int64_t* query_positions,
               const KvCacheView& k, const KvCacheView& v, int64_t kv_begin, int64_t kv_end, float* out, ThreadPool& pool,
               const RangeCallback* prepare) {
    attention_with(ops_table(active_isa()), params, q, tokens, query_positions, k, v, kv_begin, kv_end, out, pool, prepare);
}

}  // namespace oxinfer::kernels
