"""Length buckets: a served batch of texts of very different lengths costs about the sum of its texts.

A raw-text batch is packed to its longest row, so every row pays for the longest. `bucketed` runs a model
function on rows grouped by length instead: it sorts the rows by their number of real tokens, splits them
into up to `MAX_BUCKETS` consecutive groups of at least `MIN_ROWS` rows, cuts each group's padding down
to its own longest row rounded up to `LENGTH_MULTIPLE`, runs the function on each group, pads outputs
with a sequence axis back to the batch's length and restores the input order. Padding never changes a
real token's output, so the answers are those of one text at a time (floats within 1e-5).

Every group is one more run of the model in the graph, and a run has a fixed cost (TF's per-op cost, the
weight reads of small matmuls), so groups are only formed where each has `MIN_ROWS` rows; a batch below
2 * MIN_ROWS runs as one group (as without buckets). The counts are chosen by measurement
(benchmarks/README.md, "Length buckets"). The groups are unrolled in the graph (no control flow: the
served fusions of docs/serving.md hold in each), and a group left empty by a small batch skips its run.
"""

import tensorflow as tf

# Served text is packed to a multiple of this (fewer distinct shapes); keras_bert.models.serving uses it.
LENGTH_MULTIPLE = 8
MAX_BUCKETS = 4
MIN_ROWS = 4


def row_lengths(inputs):
    """int32 [b]: the real tokens of each row of encoder inputs ([b, seq] or [b, choices, seq]: the most
    over a row's choices)."""
    mask = tf.cast(inputs["input_mask"], tf.int32)
    lengths = tf.reduce_sum(mask, axis=-1)
    return tf.reduce_max(lengths, axis=list(range(1, mask.shape.rank - 1))) if mask.shape.rank > 2 \
        else lengths


def model_outputs(model, inputs, preprocessor, function=None):
    """`function(inputs)` (default: `model` in inference mode) on length buckets (`bucketed`) where
    `preprocessor` pads each batch to its longest row (the served graph's), else on the whole batch (a
    fixed length: one shape). Outputs padded back take `model.serving_pad_values` ({name: fill})."""
    function = function or (lambda x: model(x, training=False))
    if getattr(preprocessor, "pad_to_multiple_of", None) is None:
        return function(inputs)
    return bucketed(function, inputs, getattr(model, "serving_pad_values", None))


def bucketed(function, inputs, pad_values=None, max_buckets=MAX_BUCKETS, min_rows=MIN_ROWS):
    """`function(inputs)` (encoder inputs -> a tensor or dict of tensors, batch first) run on length
    buckets of the rows of `inputs` (dict of int32 [b, seq] or [b, choices, seq], padded to the batch's
    longest), answers in input order. An output with a sequence axis where the inputs have theirs
    (static size None there) is padded back to the batch's length with `pad_values[name]` (default 0 or
    b""). `max_buckets` 1 runs `function` once on `inputs`."""
    if max_buckets <= 1:
        return function(inputs)
    seq_axis = inputs["input_mask"].shape.rank - 1
    width = tf.shape(inputs["input_mask"])[-1]
    lengths = row_lengths(inputs)
    num_rows = tf.shape(lengths)[0]
    order = tf.argsort(lengths, stable=True)
    sorted_lengths = tf.gather(lengths, order)
    # Equal groups of the sorted rows, at least `min_rows` each: fewer (down to one) for a small batch.
    groups = tf.clip_by_value(num_rows // min_rows, 1, max_buckets)
    per_group = -(-num_rows // groups)
    outputs = []
    for group in range(max_buckets):
        start = tf.minimum(group * per_group, num_rows)
        end = tf.minimum(start + per_group, num_rows)
        # The group's longest row (0 for an empty group: a gather would fail on an empty batch).
        longest = tf.reduce_max(tf.concat([[0], sorted_lengths[start:end]], 0))
        outputs.append(_group_outputs(function, inputs, order[start:end], longest, width, seq_axis,
                                      pad_values or {}))
    back = tf.math.invert_permutation(order)
    if isinstance(outputs[0], dict):
        return {name: tf.gather(tf.concat([out[name] for out in outputs], 0), back) for name in outputs[0]}
    return tf.gather(tf.concat(outputs, 0), back)


def _group_outputs(function, inputs, rows, longest, width, seq_axis, pad_values):
    """`function` on `rows` of `inputs` cut to `longest` rounded up to LENGTH_MULTIPLE, outputs padded back
    to `width`; an empty group skips the run (a tf.cond: an encoder run on no rows still costs a fifth of
    one on a row)."""
    cut = tf.minimum(width, tf.maximum(1, -(-longest // LENGTH_MULTIPLE)) * LENGTH_MULTIPLE)
    traced = {}

    def run():
        group = {name: tf.gather(value, rows)[..., :cut] for name, value in inputs.items()}
        out = function(group)
        flat = out if isinstance(out, dict) else {"": out}
        flat = {name: _padded(value, seq_axis, cut, width, pad_values.get(name))
                for name, value in flat.items()}
        traced.update({name: (value.dtype, value.shape) for name, value in flat.items()})
        return flat

    def skip():  # no rows: empty outputs of the run's dtypes and shapes (cond traces `run` first)
        return {name: tf.zeros([0] + [width if size is None else size for size in shape[1:]], dtype)
                for name, (dtype, shape) in traced.items()}

    flat = run() if tf.executing_eagerly() else tf.cond(tf.size(rows) > 0, run, skip)
    return flat[""] if list(flat) == [""] else flat


def _padded(value, seq_axis, cut, width, fill):
    """`value` padded on `seq_axis` from `cut` to `width` (with `fill`) where that axis is a sequence axis."""
    if value.shape.rank is None or value.shape.rank <= seq_axis or value.shape[seq_axis] is not None:
        return value
    paddings = [[0, 0]] * value.shape.rank
    paddings[seq_axis] = [0, width - cut]
    if fill is None:
        fill = "" if value.dtype == tf.string else 0
    return tf.pad(value, paddings, constant_values=tf.constant(fill, value.dtype))
