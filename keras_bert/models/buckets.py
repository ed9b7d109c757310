"""Length buckets: a served batch of texts of very different lengths costs about the sum of its texts.

A raw-text batch is packed to its longest row, so every row pays for the longest. `bucketed` runs a model
function on rows grouped by length instead: it sorts the rows by their number of real tokens, splits them
into at most `MAX_BUCKETS` consecutive groups, cuts each group's padding down to its own longest row
rounded up to `LENGTH_MULTIPLE`, runs the function on each group, pads outputs with a sequence axis back
to the batch's length and restores the input order. Padding never changes a real token's output, so the
answers are those of one text at a time (floats within 1e-5).

Every group is one more run of the model, and a run has a fixed cost (TF's per-op cost, the weight reads
of small matmuls) as well as one per token, so the split is the cheapest under that cost
(`group_bounds`: rows x cut tokens per group plus `RUN_COST` tokens a run): a batch of alike texts runs as
one group, a batch with a long tail splits where the padding saved pays for another run (a float32
model's matmuls run on real tokens only, `layers.transformer.real_rows`: there the padding a split saves
is attention's). The constants are measured (docs/serving_measurements.md, "Length buckets", "Real
rows"). The non-empty groups run in one tf.while_loop of one graph function (its gathers, answers and
padding traced once), which calls the model's one graph function (`Serving.served_call`: the model's graph
and weights once per export, the served fusions of docs/serving.md inside it).
"""

import contextvars

import tensorflow as tf

from keras_bert import compat
from keras_bert.contexts import setting
from keras_bert.layers.transformer import real_rows

# Served text is packed to a multiple of this (fewer distinct shapes); keras_bert.models.serving uses it.
LENGTH_MULTIPLE = 8
MAX_BUCKETS = 8
# The fixed cost of one run of the model in tokens of a batch: 30-60 measured (MiniLM-L6, float32, AVX2);
# 32 and 64 cost the same per text within 3% at batch 8, 32 and 64 (docs/serving_measurements.md,
# "Length buckets").
RUN_COST = 32
# Set while a served function is traced as one flat graph (`one_graph`).
_ONE_GRAPH = contextvars.ContextVar("one_graph", default=False)


def one_graph():
    """Within this context, a served function is traced as one graph for a converter that takes neither
    function calls nor the buckets' sort and search ops (LiteRT): the model inline (`Serving.served_call`)
    on the whole batch (`model_outputs`)."""
    return setting(_ONE_GRAPH)


def in_one_graph():
    """True within `one_graph`."""
    return _ONE_GRAPH.get()


def _alone(function, inputs):
    """`function(inputs)` traced for a lone row: in `real_rows(gather=False)`, where `Serving.served_call`
    calls the model's lone-row graph function (float32 blocks on padded rows)."""
    with real_rows(gather=False):
        return function(inputs)


def row_lengths(inputs):
    """int32 [b]: the real tokens of each row of encoder inputs ([b, seq] or [b, choices, seq]: the most
    over a row's choices)."""
    mask = tf.cast(inputs["input_mask"], tf.int32)
    lengths = tf.reduce_sum(mask, axis=-1)
    return tf.reduce_max(lengths, axis=list(range(1, mask.shape.rank - 1))) if mask.shape.rank > 2 \
        else lengths


def model_outputs(model, inputs, preprocessor, function=None):
    """`function(inputs)` (default: `model.served_call`, the model in inference mode) on length buckets
    (`bucketed`) where `preprocessor` pads each batch to its longest row (the served graph's), else on the
    whole batch (a fixed length: one shape); a batch of one row runs once, as it is. Outputs padded back
    take `model.serving_pad_values` ({name: fill})."""
    function = function or model.served_call
    if getattr(preprocessor, "pad_to_multiple_of", None) is None or in_one_graph():
        return function(inputs)
    if inputs["input_mask"].shape[0] == 1:  # traced for one row (`Serving.serve` of one text): no branch
        return _alone(function, inputs)
    # A lone text (a single request) is one run: no split to compute, no groups to route (4% of a call), on
    # its padded rows (`_alone`: 5% of a float32 call).
    return tf.cond(tf.equal(tf.shape(inputs["input_mask"])[0], 1), lambda: _alone(function, inputs),
                   lambda: bucketed(function, inputs, getattr(model, "serving_pad_values", None)))


def bucketed(function, inputs, pad_values=None, max_buckets=MAX_BUCKETS, run_cost=None):
    """`function(inputs)` (encoder inputs -> a tensor or dict of tensors, batch first) run on length
    buckets of the rows of `inputs` (dict of int32 [b, seq] or [b, choices, seq], padded to the batch's
    longest), answers in input order: the groups of `group_bounds` (at most `max_buckets`, `run_cost` the
    fixed cost of a run in tokens, default `RUN_COST`). An output with a sequence axis where the inputs have
    theirs (static size None there) is padded back to the batch's length with `pad_values[name]` (default 0
    or b"").
    `max_buckets` 1 runs `function` once on `inputs`."""
    if max_buckets <= 1:
        return function(inputs)
    mask = inputs["input_mask"]
    seq_axis = mask.shape.rank - 1
    width = tf.shape(mask)[-1]
    lengths = row_lengths(inputs)
    order = tf.argsort(lengths, stable=True)
    # A row of a multiple-choice batch is `choices` sequences of the group's length.
    sequences_per_row = tf.reduce_prod(tf.shape(mask)[1:-1])
    bounds = group_bounds(tf.gather(lengths, order), max_buckets,
                          RUN_COST if run_cost is None else run_cost, sequences_per_row)
    pad_values = pad_values or {}

    # The groups' one graph function (the gathers, the answers and the padding), traced once.
    @tf.function(autograph=False)
    def run_group(inputs, rows, cut):
        group = {name: tf.gather(value, rows)[..., :cut] for name, value in inputs.items()}
        out = function(group)
        flat = out if isinstance(out, dict) else {"": out}
        return {name: _padded(value, seq_axis, cut, width, pad_values.get(name))
                for name, value in flat.items()}

    run_group = run_group.get_concrete_function(inputs, tf.TensorSpec([None], order.dtype),
                                                tf.TensorSpec([], tf.int32))
    # The non-empty groups run in one loop: one call of `run_group` in the graph (a tf.cond per group would
    # build max_buckets branches, each passing the model's variables through: 1 s more of a first serve,
    # benchmarks/README.md, "First answer"). An empty batch runs no group and answers the empty outputs the
    # loop starts from.
    ends = bounds[1 : max_buckets + 1]
    groups = tf.boolean_mask(tf.range(max_buckets), ends > bounds[:max_buckets])
    cuts = tf.minimum(width, tf.maximum(bounds[max_buckets + 1 :], LENGTH_MULTIPLE))

    def run_next(step, outputs):
        group = groups[step]
        out = run_group(inputs, order[bounds[group] : ends[group]], cuts[group])
        return step + 1, {name: tf.concat([outputs[name], out[name]], 0) for name in outputs}

    empty = {name: tf.zeros([0] + [width if size is None else size for size in value.shape[1:]], value.dtype)
             for name, value in run_group.structured_outputs.items()}
    # Groups run at once where the CPUs allow: the body's one stateful op is the call of `run_group`, which
    # only reads variables (its own ops keep their order inside it).
    with compat.unordered_loop_bodies():
        _, outputs = tf.while_loop(lambda step, _: step < tf.size(groups), run_next, (0, empty),
                                   shape_invariants=(tf.TensorShape([]), {
                                       name: tf.TensorShape([None, *value.shape[1:]])
                                       for name, value in empty.items()}))
    back = tf.math.invert_permutation(order)
    outputs = {name: tf.gather(value, back) for name, value in outputs.items()}
    return outputs[""] if list(outputs) == [""] else outputs


def group_bounds(sorted_lengths, max_groups, run_cost, sequences_per_row=1):
    """The cheapest split of rows sorted by length into at most `max_groups` consecutive groups, where a
    group of n rows cut to its longest row rounded up to LENGTH_MULTIPLE costs n x sequences_per_row x cut
    tokens + `run_cost` (an empty group costs nothing).

    Rows of one cut are alike, so groups split only between cuts: a dynamic programme over the distinct cuts
    (at most the batch's width / LENGTH_MULTIPLE + 1 of them, whatever the batch size), in graph ops on a
    [cuts + 1, cuts + 1] cost matrix: best[k][j], the least cost of the rows cut to at most j x
    LENGTH_MULTIPLE in k groups, is the least over i of best[k-1][i] plus the cost of the rows cut to
    (i, j] x LENGTH_MULTIPLE as one group (i = j: no group). int32 [2 * max_groups + 1]: the groups' start
    rows and the end (group g is rows bounds[g]:bounds[g + 1], empty groups first), then each group's cut
    (0 for an empty group)."""
    # Each row's cut in units of LENGTH_MULTIPLE (at least one), ascending as the rows are.
    row_units = tf.maximum(-(-tf.cast(sorted_lengths, tf.int32) // LENGTH_MULTIPLE), 1)
    units = tf.reduce_max(tf.concat([[1], row_units], 0))
    # rows_within[j]: the rows cut to at most j x LENGTH_MULTIPLE.
    rows_within = tf.searchsorted(row_units, tf.range(units + 1), side="right", out_type=tf.int32)
    low, high = tf.range(units + 1)[:, None], tf.range(units + 1)[None, :]
    rows = tf.gather(rows_within, high) - tf.gather(rows_within, low)
    tokens = tf.cast(rows * sequences_per_row * high * LENGTH_MULTIPLE, tf.float32)
    inf = tf.constant(float("inf"))
    cost = tf.where(high < low, inf, tf.where(rows > 0, tokens + run_cost, 0.0))
    best = tf.where(tf.range(units + 1) == 0, 0.0, inf)
    starts = []  # per step k: for each j, the i of the cheapest last group (i, j]
    for _ in range(max_groups):
        total = best[:, None] + cost
        starts.append(tf.argmin(total, axis=0, output_type=tf.int32))
        best = tf.reduce_min(total, axis=0)
    unit_bounds = [units]
    for start in reversed(starts):
        unit_bounds.append(tf.gather(start, unit_bounds[-1]))
    bounds = tf.gather(rows_within, tf.stack(unit_bounds[::-1]))
    cuts = tf.concat([[0], row_units * LENGTH_MULTIPLE], 0)  # cuts[r]: row r - 1's, a group's last
    group_cuts = tf.where(bounds[1:] > bounds[:-1], tf.gather(cuts, bounds[1:]), 0)
    return tf.concat([bounds, group_cuts], 0)


def _padded(value, seq_axis, cut, width, fill):
    """`value` padded on `seq_axis` from `cut` to `width` (with `fill`) where that axis is a sequence axis."""
    if value.shape.rank is None or value.shape.rank <= seq_axis or value.shape[seq_axis] is not None:
        return value
    paddings = [[0, 0]] * value.shape.rank
    paddings[seq_axis] = [0, width - cut]
    if fill is None:
        fill = "" if value.dtype == tf.string else 0
    return tf.pad(value, paddings, constant_values=tf.constant(fill, value.dtype))
