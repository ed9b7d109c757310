"""Every private Keras, TF and tf-text internal keras_bert relies on, each behind one named function or class.

Nothing else in the package imports `keras.src` or reads a private attribute of a Keras or TF object; each
entry names the versions it was written for, and tests/test_compat.py checks every internal it touches on
the installed Keras, so a Keras that moves one fails there, naming it. This module imports only Keras,
TensorFlow, tf-text (in the one function that wraps its builder) and the standard library (any floor of
keras_bert may import it).
"""

import contextlib

import keras
import tensorflow as tf

# Keras minors whose private trainer code `fix_keras_multi_worker` was written and tested against;
# tests/test_compat.py fails on any other Keras until the fix is re-checked there.
PATCHED_KERAS_MINORS = ("3.15",)


# Keras 3.15.x: keras/src/layers/layer.py Layer.__call__ (_convert_input_args,
# _allow_non_tensor_positional_args).
def accept_raw_inputs(layer):
    """Lets `layer` take strings, lists and ragged tensors as they are: Keras would otherwise convert or cast
    its call arguments to tensors of its dtype and refuse non-tensor positional arguments."""
    layer._convert_input_args = False
    layer._allow_non_tensor_positional_args = True


# TF 2.21: tf.__internal__.tracking.AutoTrackable, the root Keras' ExportArchive writes too (tf.Module would
# do, but reserves `variables` as a read-only property, which TF Hub's encoder API sets).
def saved_model_root():
    """An empty trackable object: its attributes (tf.functions, variables, assets) are what
    `tf.saved_model.save(root, ...)` writes."""
    return tf.__internal__.tracking.AutoTrackable()


# TF 2.21: tensorflow/python/saved_model/save_context.py. tf.saved_model.save lists each tracked
# tf.function's concrete functions inside a save context, whose variable policy is part of the function
# cache key (polymorphic_function/function_context.py): a function traced outside it is traced again there.
def save_tracing():
    """A context in which tf.functions trace as `tf.saved_model.save` (default SaveOptions) will look them
    up, so saving reuses the traces instead of tracing every endpoint a second time (a no-op inside one)."""
    from tensorflow.python.saved_model import save_context

    if save_context.in_save_context():
        return contextlib.nullcontext()
    return save_context.save_context(tf.saved_model.SaveOptions())


# TF 2.21: tensorflow/python/framework/func_graph.py FuncGraph._add_control_dependencies, read by
# while_v2.while_loop (ops/while_v2.py) for its body: automatic control dependencies make a body's outputs
# wait for its stateful ops (a function call that reads variables is one), so no iteration starts before
# the previous one's call has finished.
@contextlib.contextmanager
def unordered_loop_bodies():
    """A context in which a `tf.while_loop` built in the current graph gets a body without automatic control
    dependencies: iterations overlap (up to `parallel_iterations`) where their ops do not depend on each
    other. Only for bodies whose stateful ops need no order (they read variables, write nothing)."""
    graph = tf.compat.v1.get_default_graph()
    ordered = graph._add_control_dependencies
    graph._add_control_dependencies = False
    try:
        yield
    finally:
        graph._add_control_dependencies = ordered


# Keras 3.15.x: keras/src/export/saved_model_export_archive.py ExportArchive._get_concrete_fn, which
# write_out (signatures, resource tracking) calls outside tf.saved_model.save's save context.
def save_traced_archive():
    """A `keras.export.ExportArchive` that looks its endpoints' concrete functions up in the save context
    (`save_tracing`): endpoints traced there are written from that one trace, where the stock archive
    traces each again and writes both copies of its graph. (`ExportArchive()` returns an instance of a
    backend class, so the lookup is replaced on the instance.)"""
    archive = keras.export.ExportArchive()
    lookup = archive._get_concrete_fn

    def concrete_function(endpoint):
        with save_tracing():
            return lookup(endpoint)

    archive._get_concrete_fn = concrete_function
    return archive


# Keras 3.15.x: keras/src/layers/layer.py Layer._flatten_layers (no public recursive walk).
def sublayers(layer, include_self=True):
    """Every layer nested in `layer` (models included), depth-first; `layer` itself first if
    `include_self`."""
    return list(layer._flatten_layers(include_self=include_self, recursive=True))


# Keras 3.15.x: keras/src/layers/core/dense.py Dense._kernel (`kernel` adds the LoRA update to it).
def dense_kernel_variable(layer):
    """The Dense `layer`'s stored kernel variable (int8 once quantized; without its LoRA update)."""
    return layer._kernel


# Keras 3.15.x: keras/src/layers/core/embedding.py Embedding._embeddings (`embeddings` adds the LoRA update).
def embeddings_variable(layer):
    """The Embedding `layer`'s stored table variable (int8 once quantized; without its LoRA update)."""
    return layer._embeddings


# Keras 3.15.x: keras/src/layers/core/{dense,embedding}.py: int8 codes in `_kernel` / `_embeddings`, one
# scale per output unit (Dense `kernel_scale`) or per row (Embedding `embeddings_scale`); the LoRA factors
# beside them.
FLOAT_QUANTIZATION_MODES = (None, "float8")  # kernels stay float in these modes


def float_kernel(layer):
    """The Dense `layer`'s kernel as the float matrix it computes with: int8 codes divided by their scales,
    the LoRA update added. Raises ValueError naming the layer for another quantization mode."""
    return _dequantized(layer, layer._kernel if layer.quantization_mode == "int8" else None, "kernel",
                        lambda codes: keras.ops.divide(codes, layer.kernel_scale))


def float_embeddings(layer):
    """The Embedding `layer`'s table as float [input_dim, output_dim], as `float_kernel`."""
    return _dequantized(layer, layer._embeddings if layer.quantization_mode == "int8" else None, "embeddings",
                        lambda codes: keras.ops.divide(codes,
                                                       keras.ops.expand_dims(layer.embeddings_scale, -1)))


def _dequantized(layer, codes, name, descale):
    mode = layer.quantization_mode
    if mode in FLOAT_QUANTIZATION_MODES:
        return getattr(layer, name)  # float, the LoRA update added by Keras
    if mode != "int8":
        raise ValueError(f"layer {layer.path!r} is quantized as {mode!r}; only int8 weights can be written "
                         "as float weights: quantize with 'int8', or write the model before quantizing it")
    value = descale(keras.ops.cast(codes, "float32"))
    if layer.lora_enabled:
        a, b = (layer.lora_kernel_a, layer.lora_kernel_b) if name == "kernel" else (
            layer.lora_embeddings_a, layer.lora_embeddings_b)
        value = value + (layer.lora_alpha / layer.lora_rank) * keras.ops.matmul(a, b)
    return value


# Keras 3.15.x: keras/src/layers/layer.py Layer.quantized_call dispatches int8 layers to `self._int8_call`.
def set_int8_call(layer, call):
    """Makes the int8-quantized `layer` compute `call(inputs, training=None)` instead of Dense's int8 call."""
    layer._int8_call = call


def restore_int8_call(layer):
    """Undoes `set_int8_call`: `layer` computes with its class's int8 call again."""
    del layer._int8_call


# TF 2.21: tensorflow/python/framework/op_def_library._apply_op_helper and op_def_registry (ops that are
# registered in the runtime but have no Python wrapper, such as oneDNN's `_QuantizedMatMul`).
def has_op(op_type):
    """True where this TensorFlow build registers the op `op_type` (a oneDNN op exists only in x86 builds
    with oneDNN)."""
    from tensorflow.python.framework import op_def_registry

    return op_def_registry.get(op_type) is not None


def graph_op(op_type, name, **arguments):
    """The output tensors of one `op_type` op made in the graph being traced (inputs and attrs by their op
    definition's names, as `tf.raw_ops` takes them; every attr, those with defaults too)."""
    from tensorflow.python.framework import op_def_library

    _, _, op, _ = op_def_library._apply_op_helper(op_type, name=name, **arguments)
    return op.outputs


# Keras 3.15.x: keras/src/utils/tracking.py Tracker (Layer._tracker); Model.quantize locks it afterwards.
class tracking_unlocked:  # lower case: used as a function, `with compat.tracking_unlocked(layer):`
    """Lets `layer` take a new attribute that Keras tracks (a sub-layer) although its tracker is locked, as
    it is after `quantize`; locked again afterwards."""

    def __init__(self, layer):
        self.tracker = getattr(layer, "_tracker", None)
        self.was_locked = self.tracker is not None and self.tracker.locked

    def __enter__(self):
        if self.was_locked:
            self.tracker.unlock()

    def __exit__(self, *exc):
        if self.was_locked:
            self.tracker.lock()
        return False


# Keras 3.15.x: keras/src/models/functional.py (a Functional's `output` is its own graph's, not the one of a
# model that calls it; the call's node holds those, flat).
def called_outputs(layer):
    """The outputs of the last call of `layer` (a functional model used as a layer once, e.g. an encoder in
    a task model) in the caller's graph, in `layer`'s own output structure."""
    import keras

    return keras.tree.pack_sequence_as(layer._outputs_struct, layer._inbound_nodes[-1].outputs)


def functional_structure(model):
    """(inputs, outputs) of the functional `model` as it was built (dicts stay dicts; `model.inputs` is
    flat)."""
    return model._inputs_struct, model._outputs_struct


# Keras 3.15.x: keras/src/saving/saving_lib.py (de)serializes a .keras file's model inside
# serialization_lib.ObjectSharingScope, which sets this global attribute (None outside it).
def in_keras_file():
    """Whether `keras.saving.save_model` / `load_model` is (de)serializing a model now: what `get_config`
    returns then is the `.keras` file's config.json (bulk can go to the layer's assets instead)."""
    from keras.src.backend.common import global_state

    return global_state.get_global_attribute("shared_objects/id_to_config_map") is not None


# tensorflow-text 2.21.x: tensorflow_text/python/ops/fast_wordpiece_tokenizer.py builds its model with this
# module's pywrap builder, then copies the bytes into a constant through a Python list of ints (0.03-0.05 s
# of a 30k vocabulary, each of a BertTokenizer's two models); handed a uint8 tensor, it takes it as is.
def fast_wordpiece_tokenizer(vocab, suffix_indicator, max_bytes_per_word, unknown_token, no_pretokenization,
                             token_out_type):
    """`tf_text.FastWordpieceTokenizer` of `vocab` (list of str) without detokenization, its model buffer
    built by tf-text's builder and made a tensor in one copy."""
    import tensorflow_text as tf_text
    from tensorflow_text.python.ops import fast_wordpiece_tokenizer as module

    model = module.pywrap_fast_wordpiece_tokenizer_model_builder.build_fast_wordpiece_model(
        vocab, max_bytes_per_word, suffix_indicator, unknown_token, no_pretokenization, False)
    return tf_text.FastWordpieceTokenizer(model_buffer=tf.io.decode_raw(tf.constant(model), tf.uint8),
                                          token_out_type=token_out_type)


# Keras 3.15.x: keras/src/trainers/trainer.py Trainer._loss_tracker (the "loss" of fit's logs).
def loss_tracker(model):
    """The compiled `model`'s Mean metric behind the "loss" log, or None before `compile`."""
    return model._loss_tracker


# Keras 3.15.x: keras/src/trainers/data_adapters/array_data_adapter.py (no public array-to-dataset builder).
def keras_array_dataset(x, y=None, sample_weight=None, batch_size=None, steps=None, shuffle=False,
                        class_weight=None):
    """The tf.data.Dataset Keras' own fit builds from arrays `x`, `y`, `sample_weight` (numpy, tensors,
    dicts of them), its number of batches asserted; None where they are not arrays Keras' array adapter
    takes, or where this Keras lacks that adapter."""
    try:
        from keras.src.trainers.data_adapters import array_data_adapter
    except ImportError:  # a Keras without it: the caller takes Keras' own path
        return None
    if not array_data_adapter.can_convert_arrays((x, y, sample_weight)):
        return None
    adapter = array_data_adapter.ArrayDataAdapter(x, y, sample_weight=sample_weight, batch_size=batch_size,
                                                  steps=steps, shuffle=shuffle, class_weight=class_weight)
    return adapter.get_tf_dataset().apply(tf.data.experimental.assert_cardinality(adapter.num_batches))


# Keras 3.15.x: keras/src/backend/tensorflow/optimizer.py TFOptimizer._backend_update_step and
# _apply_weight_decay, keras/src/optimizers/base_optimizer.py; TF 2.21 tf.__internal__ maybe_merge_call.
class OptimizerHooks:
    """Mixin before a Keras optimizer in the bases (TF backend), turning two private steps into hooks:
    `transform_summed_gradients(grads_and_vars)` runs on the gradients after the cross-replica sum and
    before the update (default: as they are); `update_scope()` is a context around the step's
    per-variable updates (default: none); `apply_weight_decay(variables)` is the decoupled decay of one
    step (default: Keras')."""

    def transform_summed_gradients(self, grads_and_vars):
        return grads_and_vars

    def apply_weight_decay(self, variables):
        return super()._apply_weight_decay(variables)

    def _apply_weight_decay(self, variables):
        return self.apply_weight_decay(variables)

    def update_scope(self):
        """A context around one step's per-variable `update_step` calls (default: none); where the update's
        per-step values can be made once."""
        return contextlib.nullcontext()

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        trainable_variables = [v.value if isinstance(v, keras.Variable) else v for v in trainable_variables]
        grads_and_vars = self._all_reduce_sum_gradients(list(zip(grads, trainable_variables, strict=True)))
        grads_and_vars = self.transform_summed_gradients(grads_and_vars)
        with self.update_scope():
            tf.__internal__.distribute.interim.maybe_merge_call(
                self._distributed_tf_update_step, self._distribution_strategy, grads_and_vars, learning_rate)


# Keras 3.15.x: keras/src/optimizers/base_optimizer.py BaseOptimizer.learning_rate's setter, which untracks
# the learning-rate variable of an optimizer made with a float rate when given a schedule: a removal from
# the optimizer's tracked variable list, after which TF's checkpointing refuses to save the optimizer
# ("A list element was replaced ... tracking is exclusively for append-only data structures").
def set_learning_rate_schedule(optimizer, schedule):
    """Makes `optimizer` (a Keras optimizer built with a float rate) follow `schedule` (a
    LearningRateSchedule) from now on, its variables unchanged: tf.train.Checkpoint saves it as before."""
    optimizer._learning_rate = schedule


# Keras 3.15.x: keras/src/optimizers/base_optimizer.py _use_weight_decay.
def uses_weight_decay(optimizer, variable):
    """Whether `optimizer` decays `variable` (not excluded by `exclude_from_weight_decay`)."""
    return optimizer._use_weight_decay(variable)


# Keras 3.15.x: keras/src/optimizers/adam.py Adam._momentums / _velocities, indexed by _get_variable_index.
def adam_slots(optimizer, variable):
    """(first moment, second moment): the Keras variables Adam(W) keeps for `variable`."""
    index = optimizer._get_variable_index(variable)
    return optimizer._momentums[index], optimizer._velocities[index]


# Keras 3.15.x: keras/src/backend/tensorflow/trainer.py reduce_per_replica and
# TensorFlowTrainer._maybe_symbolic_build (replaced, only on PATCHED_KERAS_MINORS).
def fix_keras_multi_worker():
    """Works around two Keras 3.15 bugs under MultiWorkerMirroredStrategy (idempotent):
    before `fit`/`evaluate` it calls `strategy.reduce` on a whole dict batch (TF reduces one tensor at a
    time): the model is built from this process's first replica batch instead; and it averages the
    step's scalar logs over workers with axis=0, which scalars lack: they are averaged with axis=None.

    It replaces private `keras.src` functions, so it is applied only on the Keras minors in
    `PATCHED_KERAS_MINORS`. Returns True if the fix is in place, False on another Keras (nothing patched).
    """
    if ".".join(keras.__version__.split(".")[:2]) not in PATCHED_KERAS_MINORS:
        return False
    from keras.src.backend.tensorflow import trainer as tf_trainer

    original_reduce = tf_trainer.reduce_per_replica

    def reduce_per_replica(values, strategy, reduction):
        if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and reduction in ("auto", "mean"):
            return tf.nest.map_structure(
                lambda v: strategy.reduce("MEAN", v, axis=None if _rank(strategy, v) == 0 else 0), values)
        return original_reduce(values, strategy, reduction)

    if not getattr(original_reduce, "_keras_bert_fixed", False):
        reduce_per_replica._keras_bert_fixed = True
        reduce_per_replica.__wrapped__ = original_reduce
        tf_trainer.reduce_per_replica = reduce_per_replica

    trainer_class = tf_trainer.TensorFlowTrainer
    original = trainer_class._maybe_symbolic_build
    if getattr(original, "_keras_bert_fixed", False):
        return True

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        if iterator is not None and self._distribute_strategy is not None:
            for _, _, data_iterator in iterator:
                batch = next(data_iterator)
                break
            data_batch = tf.nest.map_structure(
                lambda v: self.distribute_strategy.experimental_local_results(v)[0]
                if isinstance(v, tf.distribute.DistributedValues) else v, batch)
        return original(self, iterator=None, data_batch=data_batch)

    _maybe_symbolic_build._keras_bert_fixed = True
    _maybe_symbolic_build.__wrapped__ = original
    trainer_class._maybe_symbolic_build = _maybe_symbolic_build
    return True


def _rank(strategy, value):
    return strategy.experimental_local_results(value)[0].shape.rank

