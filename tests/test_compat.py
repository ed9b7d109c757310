"""Every private Keras / TF internal keras_bert/compat.py relies on exists and behaves as compat.py assumes on
the installed Keras: a Keras that moves or changes one fails here, the message naming it. The multi-worker
run itself is tests/recipes/test_pretrain.py::test_multi_worker_equals_single_process (slow)."""

import contextlib
import inspect

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras.src.backend.tensorflow import trainer as tf_trainer

from keras_bert import compat


def _params(fn):
    return list(inspect.signature(fn).parameters)


def test_installed_keras_is_one_compat_was_written_for():
    minor = ".".join(keras.__version__.split(".")[:2])
    assert minor in compat.PATCHED_KERAS_MINORS, (
        f"Keras {keras.__version__}: re-read every internal named in keras_bert/compat.py (keras/src/...), "
        "then add this minor to PATCHED_KERAS_MINORS")


class _TypeOfInput(keras.layers.Layer):
    def call(self, inputs):
        return type(inputs).__name__


def test_accept_raw_inputs_passes_lists_and_string_arrays_through():
    strings = np.array(["a b", "c"], dtype=object)
    plain = _TypeOfInput()
    with pytest.raises(ValueError, match="positional"):
        plain(["a b", "c"])
    raw = _TypeOfInput()
    compat.accept_raw_inputs(raw)
    assert raw(["a b", "c"]) == "list", "Layer._allow_non_tensor_positional_args no longer honoured"
    assert raw(strings) == "ndarray", "Layer._convert_input_args no longer honoured"


def test_sublayers_walks_nested_models_self_first():
    inner = keras.Sequential([keras.layers.Dense(2, name="inner_dense")], name="inner")
    inputs = keras.Input((3,))
    outer = keras.Model(inputs, keras.layers.Dense(1, name="head")(inner(inputs)), name="outer")
    names = [layer.name for layer in compat.sublayers(outer)]
    assert names[0] == "outer" and {"inner", "inner_dense", "head"} <= set(names), (
        f"Layer._flatten_layers: {names}")
    assert "outer" not in [layer.name for layer in compat.sublayers(outer, include_self=False)]


def test_dense_kernel_variable_is_the_stored_kernel_without_lora():
    layer = keras.layers.Dense(3)
    layer.build((None, 2))
    stored = compat.dense_kernel_variable(layer)
    assert isinstance(stored, keras.Variable) and stored.path.endswith("kernel"), f"Dense._kernel: {stored!r}"
    layer.enable_lora(1)
    layer.lora_kernel_b.assign(np.ones((1, 3), "float32"))
    layer.lora_kernel_a.assign(np.ones((2, 1), "float32"))
    assert np.allclose(keras.ops.convert_to_numpy(layer.kernel),
                       keras.ops.convert_to_numpy(stored) + layer.lora_alpha / layer.lora_rank)


def test_float_kernel_and_embeddings_undo_int8_and_add_lora():
    """Dense `_kernel` / Embedding `_embeddings` int8 codes with per-unit / per-row scales, LoRA factors
    beside."""
    dense, embedding = keras.layers.Dense(4), keras.layers.Embedding(6, 4)
    dense.build((None, 3))
    embedding.build(None)
    kernel, table = (keras.ops.convert_to_numpy(v) for v in (dense.kernel, embedding.embeddings))
    dense.quantize("int8")
    embedding.quantize("int8")
    assert compat.dense_kernel_variable(dense).dtype == compat.embeddings_variable(embedding).dtype == "int8"
    # abs-max int8: each value within half a step (max |column| / 127 / 2) of the float one
    np.testing.assert_allclose(compat.float_kernel(dense), kernel, atol=np.abs(kernel).max() / 127)
    np.testing.assert_allclose(compat.float_embeddings(embedding), table, atol=np.abs(table).max() / 127)
    dense.enable_lora(2)
    dense.lora_kernel_b.assign(np.ones((2, 4), "float32"))
    update = keras.ops.convert_to_numpy(dense.lora_kernel_a) @ np.ones((2, 4), "float32")
    np.testing.assert_allclose(compat.float_kernel(dense), kernel + update, atol=np.abs(kernel).max() / 127)
    int4_dense = keras.layers.Dense(4)
    int4_dense.build((None, 3))
    int4_dense.quantize("int4")
    with pytest.raises(ValueError, match="is quantized as 'int4'; only int8 weights"):
        compat.float_kernel(int4_dense)


def test_int8_call_is_replaced_and_restored():
    layer = keras.layers.Dense(2, use_bias=False)
    layer.build((None, 2))
    layer.kernel.assign(np.eye(2, dtype="float32"))
    layer.quantize("int8")
    x = np.array([[1.0, -2.0]], "float32")
    own = keras.ops.convert_to_numpy(layer(x))
    assert np.allclose(own, x, atol=0.05)
    compat.set_int8_call(layer, lambda inputs, training=None: inputs * 10.0)
    assert np.allclose(keras.ops.convert_to_numpy(layer(x)), x * 10.0), "Layer.quantized_call -> _int8_call"
    compat.restore_int8_call(layer)
    assert np.array_equal(keras.ops.convert_to_numpy(layer(x)), own)
    assert compat.dense_kernel_variable(layer).dtype == "int8"


def test_loss_tracker_is_the_loss_fit_logs():
    model = keras.Sequential([keras.Input((1,)),
                              keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")])
    assert compat.loss_tracker(model) is None
    model.compile(optimizer="sgd", loss="mse")
    tracker = compat.loss_tracker(model)
    assert isinstance(tracker, keras.metrics.Mean) and model.metrics[0] is tracker, "Trainer._loss_tracker"
    model.evaluate(np.ones((4, 1)), np.full((4, 1), 3.0), verbose=0)
    assert float(tracker.result()) == pytest.approx(9.0)


def test_keras_array_dataset_batches_as_keras_does():
    x = {"a": np.arange(10, dtype="int32")}
    dataset = compat.keras_array_dataset(x, np.arange(10, dtype="float32") * 2, batch_size=4)
    assert dataset is not None, "keras.src.trainers.data_adapters.array_data_adapter is gone"
    batches = list(dataset.as_numpy_iterator())
    assert int(dataset.cardinality()) == 3 and [len(b[0]["a"]) for b in batches] == [4, 4, 2]
    assert np.array_equal(batches[2][1], [16.0, 18.0])
    assert compat.keras_array_dataset(tf.data.Dataset.range(3)) is None


class _ZeroSummed(compat.OptimizerHooks, keras.optimizers.SGD):
    def transform_summed_gradients(self, grads_and_vars):
        self.seen = [tuple(g.shape) for g, _ in grads_and_vars]
        return [(tf.zeros_like(g), v) for g, v in grads_and_vars]


def test_optimizer_hooks_see_the_summed_gradients_before_the_update():
    for name in ("_backend_update_step", "_all_reduce_sum_gradients", "_distributed_tf_update_step",
                 "_apply_weight_decay"):
        assert hasattr(keras.optimizers.SGD, name), f"Keras' TF optimizer has no {name}"
    assert _params(keras.optimizers.SGD._backend_update_step) == ["self", "grads", "trainable_variables",
                                                                   "learning_rate"]
    assert callable(tf.__internal__.distribute.interim.maybe_merge_call)
    variable = keras.Variable(np.ones(3, "float32"))
    optimizer = _ZeroSummed(learning_rate=1.0, weight_decay=0.5)
    optimizer.apply_gradients([(tf.ones(3), variable)])
    assert optimizer.seen == [(3,)]
    # Zeroed gradient: only the decay (var *= 1 - lr * wd) moved the variable, through Keras' own decay.
    assert np.allclose(keras.ops.convert_to_numpy(variable), 0.5)


def test_weight_decay_exclusion_and_adam_slots():
    decayed, excluded = keras.Variable(np.ones(2, "float32"), name="w"), keras.Variable(np.ones(2, "float32"),
                                                                                         name="bias")
    optimizer = keras.optimizers.AdamW(learning_rate=0.1, weight_decay=0.01, beta_1=0.9)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    optimizer.apply_gradients([(tf.constant([2.0, 4.0]), decayed), (tf.zeros(2), excluded)])
    assert compat.uses_weight_decay(optimizer, decayed) and not compat.uses_weight_decay(optimizer, excluded)
    momentum, velocity = compat.adam_slots(optimizer, decayed)
    assert np.allclose(keras.ops.convert_to_numpy(momentum), [0.2, 0.4]), "Adam._momentums"
    assert np.allclose(keras.ops.convert_to_numpy(velocity), [0.004, 0.016]), "Adam._velocities"


def _unpatched():
    return (inspect.unwrap(tf_trainer.reduce_per_replica),
            inspect.unwrap(tf_trainer.TensorFlowTrainer._maybe_symbolic_build))


def test_patched_trainer_internals_exist_and_still_have_the_bugs():
    reduce_per_replica, symbolic_build = _unpatched()
    assert _params(reduce_per_replica) == ["values", "strategy", "reduction"]
    assert _params(symbolic_build) == ["self", "iterator", "data_batch"]
    # Scalar logs are averaged over workers along axis 0, which they lack.
    assert 'strategy.reduce("MEAN", v, axis=0)' in inspect.getsource(reduce_per_replica)
    # The first batch, a structure of per-replica values, is passed to strategy.reduce whole.
    source = inspect.getsource(symbolic_build)
    assert "self.distribute_strategy.reduce(" in source and "maybe_distributed_data_batch," in source


@pytest.fixture
def restore_keras(monkeypatch):
    # Keras' own functions for the test (a recipe run earlier in this process may have applied the fix);
    # monkeypatch puts back whatever was there after it.
    original_reduce, original_build = _unpatched()
    monkeypatch.setattr(tf_trainer, "reduce_per_replica", original_reduce)
    monkeypatch.setattr(tf_trainer.TensorFlowTrainer, "_maybe_symbolic_build", original_build)
    return monkeypatch


def test_multi_worker_fix_applied_once_on_its_keras_and_not_on_another(restore_keras):
    originals = _unpatched()
    restore_keras.setattr(keras, "__version__", "3.99.0")
    assert compat.fix_keras_multi_worker() is False
    assert (tf_trainer.reduce_per_replica, tf_trainer.TensorFlowTrainer._maybe_symbolic_build) == originals

    restore_keras.setattr(keras, "__version__", f"{compat.PATCHED_KERAS_MINORS[-1]}.0")
    assert compat.fix_keras_multi_worker() is True
    patched = (tf_trainer.reduce_per_replica, tf_trainer.TensorFlowTrainer._maybe_symbolic_build)
    assert all(fn._keras_bert_fixed for fn in patched) and patched != originals
    assert _unpatched() == originals
    assert compat.fix_keras_multi_worker() is True  # idempotent: nothing wrapped twice
    assert (tf_trainer.reduce_per_replica, tf_trainer.TensorFlowTrainer._maybe_symbolic_build) == patched


def test_saved_model_root_takes_variables_and_functions(tmp_path):
    root = compat.saved_model_root()
    root.variables = [tf.Variable(2.0)]
    root.double = tf.function(lambda x: x * root.variables[0],
                              input_signature=[tf.TensorSpec([], tf.float32)])
    tf.saved_model.save(root, str(tmp_path / "root"))
    assert float(tf.saved_model.load(str(tmp_path / "root")).double(tf.constant(3.0))) == 6.0


def test_an_endpoint_traced_in_the_save_context_is_written_from_that_trace(tmp_path):
    traces = []
    variable = tf.Variable(2.0)

    def double(inputs):
        traces.append(1)
        return {"y": inputs["x"] * variable}

    spec = {"x": tf.TensorSpec([None], tf.float32, name="x")}
    archive = compat.save_traced_archive()
    with compat.save_tracing():
        function = tf.function(double, input_signature=[spec], autograph=False)
        function.get_concrete_function()
        archive.add_endpoint("serve", function)
    archive.write_out(str(tmp_path / "model"), verbose=False)
    assert len(traces) == 1, "ExportArchive or tf.saved_model.save traced the endpoint again (its key moved)"
    loaded = tf.saved_model.load(str(tmp_path / "model"))
    assert loaded.signatures["serving_default"](x=tf.constant([1.5]))["y"].numpy().tolist() == [3.0]
    stock = keras.export.ExportArchive()
    stock.add_endpoint("serve", tf.function(double, input_signature=[spec], autograph=False))
    stock.write_out(str(tmp_path / "stock"), verbose=False)
    assert len(traces) > 2, "the stock archive no longer traces twice: save_traced_archive may be dropped"


def _loop_body_control_outputs(unordered):
    """The control outputs of a tf.while_loop body whose step calls a function reading a variable."""
    variable = tf.Variable(2.0)
    scale = tf.function(lambda x: x * variable, autograph=False)

    def loop(x):
        context = compat.unordered_loop_bodies() if unordered else contextlib.nullcontext()
        with context:
            return tf.while_loop(lambda i, _: i < 3, lambda i, y: (i + 1, scale(y)), (0, x))[1]

    graph = tf.function(loop, autograph=False).get_concrete_function(tf.TensorSpec([], tf.float32)).graph
    bodies = [f for f in graph.as_graph_def().library.function if "body" in f.signature.name]
    assert len(bodies) == 1, [f.signature.name for f in graph.as_graph_def().library.function]
    return dict(bodies[0].control_ret)


def test_unordered_loop_bodies_drop_the_wait_for_a_stateful_call():
    assert _loop_body_control_outputs(False), "TF no longer orders a loop body's variable-reading call"
    assert _loop_body_control_outputs(True) == {}


def test_graph_op_builds_a_registered_op_without_a_python_wrapper():
    assert compat.has_op("MatMul") and not compat.has_op("NoSuchOpAnywhere")
    a, b = tf.constant([[1.0, 2.0]]), tf.constant([[3.0], [4.0]])
    product = tf.function(lambda: compat.graph_op("MatMul", "product", a=a, b=b, transpose_a=False,
                                                  transpose_b=False, grad_a=False, grad_b=False)[0])()
    np.testing.assert_allclose(product.numpy(), [[11.0]])


def test_in_keras_file_only_while_saving_lib_serializes(tmp_path):
    seen = []

    class Probe(keras.layers.Layer):
        def get_config(self):
            seen.append(compat.in_keras_file())
            return super().get_config()

    model = keras.Sequential([keras.Input((1,)), Probe()])
    model.get_config()
    model.save(str(tmp_path / "m.keras"))
    assert seen == [False, True] and not compat.in_keras_file()


def test_in_keras_file_while_load_model_rebuilds_and_the_initializer_draws_zeros_there(tmp_path):
    from keras_bert.layers.initializers import truncated_normal

    init, seen = truncated_normal(1.0), []

    @keras.saving.register_keras_serializable(package="test_compat")
    class Probe(keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(64, 8), initializer=init)
            seen.append((compat.in_keras_file(), float(np.abs(self.w.numpy()).sum())))

    model = keras.Sequential([keras.Input((1,)), Probe()])
    model.save(str(tmp_path / "m.keras"))
    loaded = keras.saving.load_model(str(tmp_path / "m.keras"))
    # Drawn at random when made, zeros while load_model rebuilds (its file then fills the values in).
    assert seen[0][0] is False and seen[0][1] > 0 and seen[1] == (True, 0.0)
    np.testing.assert_array_equal(loaded.layers[0].w.numpy(), model.layers[0].w.numpy())
    assert not compat.in_keras_file() and float(np.abs(init((4, 4))).sum()) > 0


def test_fast_wordpiece_tokenizer_is_tf_texts_of_the_vocabulary():
    import tensorflow_text as tf_text

    vocab = ["[UNK]", "hello", "world", "##s", "##ing", "jump", "!"]
    words = tf.constant(["hello worlds!", "jumping", "xyz"])
    for no_pretokenization in (False, True):
        ours = compat.fast_wordpiece_tokenizer(vocab, "##", 100, "[UNK]", no_pretokenization, tf.int32)
        theirs = tf_text.FastWordpieceTokenizer(vocab, "##", 100, tf.int32, "[UNK]", no_pretokenization)
        for a, b in zip(ours.tokenize_with_offsets(words), theirs.tokenize_with_offsets(words), strict=True):
            assert a.to_list() == b.to_list()
