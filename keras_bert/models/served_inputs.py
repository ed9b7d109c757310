"""What a served input must be: its checks in the graph (`checked_inputs`, the InvalidArgument every
runtime gives) and in Python (`served_arrays`, the same lines as a ValueError before any work), each naming
the input at fault and its declared dtype and shape."""

import numpy as np
import tensorflow as tf


def shape_rule(name, spec):
    """What served input `name` of `spec` (a tf.TensorSpec) must be, as the one line every runtime gives:
    "serving input `text` must be tf.string of shape [batch]" (backticks: TF escapes quotes in a graph
    error)."""
    return f"serving input `{name}` must be {_declared(spec)}"


def _declared(spec):
    """"tf.string of shape [batch]": the dtype and shape a tf.TensorSpec declares."""
    dims = ["batch" if axis == 0 else "any" if size is None else str(size)
            for axis, size in enumerate(spec.shape.as_list())]
    return f"tf.{spec.dtype.name} of shape [{', '.join(dims)}]"


def batch_rule(first, name):
    """The rule that inputs `first` and `name` hold one row per example."""
    return f"serving inputs `{first}` and `{name}` must have the same batch size"


def checked_inputs(inputs, spec):
    """`inputs` (dict of tensors) behind run-time checks that fail with an InvalidArgument naming the input
    at fault: each has the rank and fixed sizes of its `spec` entry (`shape_rule`) and the batch size of
    the first (`batch_rule`). A loaded signature's shapes are enforced neither by `tf.saved_model.load` nor
    by TF Serving's session: a wrong rank would otherwise be served silently or fail deep in the tokenizer.
    `served_arrays` gives the same lines in Python."""
    names = list(spec)
    checks = []
    for name in names:
        shape, dims = _runtime_shape(inputs[name]), spec[name].shape.as_list()
        # Padded so that a wrong rank still indexes; the rank test decides then.
        padded = tf.concat([shape, tf.fill([len(dims)], -1)], 0)[: len(dims)]
        fits = tf.reduce_all([tf.equal(tf.size(shape), len(dims))]
                             + [tf.equal(padded[axis], size) for axis, size in enumerate(dims)
                                if size is not None])
        got = tf.strings.format("{}", shape, summarize=-1)
        checks.append(tf.debugging.Assert(
            fits, [tf.strings.join([shape_rule(name, spec[name]), "; got shape ", got])]))
    with tf.control_dependencies(checks):  # shapes first: a batch size of a wrong-rank input means nothing
        first = _runtime_shape(inputs[names[0]])[0]
        for name in names[1:]:
            size = _runtime_shape(inputs[name])[0]
            got = tf.strings.format("{} and {}", (first, size))
            checks.append(tf.debugging.Assert(tf.equal(first, size),
                                              [tf.strings.join([batch_rule(names[0], name), "; got ", got])]))
    with tf.control_dependencies(checks):
        return {name: tf.identity(inputs[name]) for name in names}


def _runtime_shape(value):
    """tf.shape of `value` as the graph runs it: through PlaceholderWithDefault of unknown shape, since
    grappler folds the shape of a function argument to its signature's (tf.saved_model.load would then
    drop the check)."""
    return tf.shape(tf.raw_ops.PlaceholderWithDefault(input=value, shape=None))


def served_arrays(inputs, spec):
    """`inputs` ({name: list, numpy array or tensor}) as tensors of `spec`'s dtypes, checked in Python with
    the lines `checked_inputs` gives in the graph, and beyond it: unknown or missing keys, values of another
    type. Raises ValueError naming the input and what it must be."""
    if not isinstance(inputs, dict):
        raise ValueError(f"serving inputs must be a dict {{name: batch}} of {list(spec)}; got a "
                         f"{type(inputs).__name__}")
    for name in inputs:
        if name not in spec:
            takes = ", ".join(f"`{n}` ({_declared(s)})" for n, s in spec.items())
            raise ValueError(f"serving input `{name}` is not in this signature; it takes {takes}")
    for name, input_spec in spec.items():
        if name not in inputs:
            raise ValueError(f"{shape_rule(name, input_spec)}; it is missing")
        _check_rows(name, inputs[name], input_spec)
    tensors = {name: _served_tensor(name, inputs[name], s) for name, s in spec.items()}
    names = list(spec)
    for name in names[1:]:
        first, size = tensors[names[0]].shape[0], tensors[name].shape[0]
        if first != size:
            raise ValueError(f"{batch_rule(names[0], name)}; got {first} and {size}")
    return tensors


def _check_rows(name, value, spec):
    """ValueError naming the first example of a [batch, k] input (k fixed: a multiple choice's endings) that
    holds another number of items than k, or one string in place of its row: checked before any work, where
    packing would fail late on a reshape, or reshape rows of k + 1 items into the wrong examples."""
    if spec.shape.rank != 2 or spec.shape[1] is None or isinstance(value, (str, bytes)):
        return
    width = spec.shape[1]
    shape = getattr(value, "shape", None)
    if shape is not None and (len(shape) != 2 or shape[1] == width):
        return  # a whole array: of the right shape, or of a rank that `_served_tensor` names
    for i, row in enumerate(value):
        count = None if np.ndim(row) == 0 else len(row)
        if count != width:
            got = ("one string, not a list of them" if count is None
                   else f"{count} item{'s' * (count != 1)}")
            raise ValueError(f"{shape_rule(name, spec)}: its example {i} has {got}")


def _served_tensor(name, value, spec):
    """One served input as a tensor of `spec.dtype` (ValueError with `shape_rule` where it is not one)."""
    rule = shape_rule(name, spec)
    if isinstance(value, (tf.RaggedTensor, tf.SparseTensor)):
        raise ValueError(f"{rule}; got a {type(value).__name__}")
    if not isinstance(value, tf.Tensor):
        value = np.asarray(value, dtype=object if spec.dtype == tf.string else None)
    kind = _value_kind(value)
    if kind != ("string" if spec.dtype == tf.string else "integer"):
        raise ValueError(f"{rule}; got {kind} values")
    if not spec.shape.is_compatible_with(value.shape):
        raise ValueError(f"{rule}; got shape [{' '.join(str(d) for d in value.shape)}]")
    return tf.cast(value, spec.dtype) if isinstance(value, tf.Tensor) else tf.convert_to_tensor(
        value if spec.dtype == tf.string else value.astype(spec.dtype.as_numpy_dtype), spec.dtype)


def _value_kind(value):
    """"string", "integer", or the type name of the values of `value` (a tensor or numpy array); an empty
    array is of any kind."""
    if isinstance(value, tf.Tensor):
        return ("string" if value.dtype == tf.string else "integer" if value.dtype.is_integer
                else value.dtype.name)
    if value.dtype == object:
        odd = [x for x in value.reshape(-1) if not isinstance(x, (str, bytes))]
        return type(odd[0]).__name__ if odd else "string"
    if value.size == 0 or value.dtype.kind in "iu":
        return "integer"
    return value.dtype.name
