"""One check for every layer and model: config round trip, `.keras` round trip, mixed precision, shapes.

    run_layer_test(TransformerBlock, {"hidden_size": 8, ...}, (hidden, bias), (2, 5, 8), tmp_path)
    run_model_test(lambda: BertClassifier(BertEncoder(config), 3), inputs, (2, 3), tmp_path, "float32")

Inputs are numpy arrays (positional call arguments of a layer, the input dict of a model); outputs are
compared in inference mode. Mixed precision means the "mixed_bfloat16" policy: variables float32, compute
bfloat16, outputs in the dtype each class documents.
"""

import json

import keras
import numpy as np

MIXED = "mixed_bfloat16"


def _numpy(outputs):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, outputs)


def assert_same_outputs(got, want, atol=0.0):
    """Equal structure and values (exactly, or within `atol` after a cast to float32)."""
    got, want = keras.tree.flatten(_numpy(got)), keras.tree.flatten(_numpy(want))
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.shape == b.shape
        if atol:
            np.testing.assert_allclose(a.astype("float32"), b.astype("float32"), atol=atol, rtol=0)
        else:
            np.testing.assert_array_equal(a, b)


def assert_output_shapes(outputs, expected):
    """`expected`: the outputs' structure with a shape tuple in place of each tensor."""
    assert keras.tree.map_structure(lambda t: tuple(t.shape), outputs) == expected


def check_config_round_trip(obj, inputs, call, rebuild_kwargs=None):
    """`type(obj).from_config(obj.get_config())` has the same (JSON-able) config and, given obj's weights,
    the same outputs. `rebuild_kwargs`: constructor arguments a config does not carry (a tied layer)."""
    config = obj.get_config()
    json.dumps(config)
    restored = type(obj).from_config({**config, **(rebuild_kwargs or {})})
    assert restored.get_config() == config
    call(restored, inputs)  # builds the weights
    restored.set_weights(obj.get_weights())
    assert_same_outputs(call(restored, inputs), call(obj, inputs))


def check_keras_file_round_trip(model, inputs, tmp_path):
    """Saves `model` to a `.keras` file and loads it back: same class, same outputs. Returns the copy."""
    path = str(tmp_path / f"{model.name}.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is type(model)
    assert_same_outputs(restored(inputs, training=False), model(inputs, training=False))
    return restored


def check_mixed_precision(build, inputs, call, output_dtype, atol):
    """`build()` under the mixed_bfloat16 policy: float variables stay float32, outputs have `output_dtype`
    (one dtype name, or the outputs' structure of them), and with float32 weights copied in, the outputs are
    within `atol` of the float32 instance's. Returns the mixed instance."""
    previous = keras.mixed_precision.dtype_policy()
    reference = build()
    reference_outputs = call(reference, inputs)
    keras.mixed_precision.set_global_policy(MIXED)
    try:
        mixed = build()
        outputs = call(mixed, inputs)
    finally:
        keras.mixed_precision.set_global_policy(previous)
    assert mixed.dtype_policy.name == MIXED
    assert all(w.dtype == "float32" for w in mixed.weights if "float" in w.dtype)
    if isinstance(output_dtype, str):
        output_dtype = keras.tree.map_structure(lambda _: output_dtype, outputs)
    assert (keras.tree.map_structure(lambda t: keras.backend.standardize_dtype(t.dtype), outputs)
            == output_dtype)
    mixed.set_weights(reference.get_weights())
    assert_same_outputs(call(mixed, inputs), reference_outputs, atol=atol)
    return mixed


def _call_layer(layer, inputs):
    return layer(*inputs, training=False)


def run_layer_test(layer_cls, init_kwargs, inputs, expected_output_shape, tmp_path,
                   mixed_output_dtype="bfloat16", rebuild_kwargs=None, mixed_atol=0.1):
    """Checks a layer built from `init_kwargs` (+ `rebuild_kwargs`, arguments its config leaves out) and
    called on the tuple `inputs`: output shape, config round trip, a `.keras` round trip inside a functional
    model (skipped with `rebuild_kwargs`: such a layer is saved by the model that owns the tied layer),
    and mixed precision."""
    extra = rebuild_kwargs or {}
    layer = layer_cls(**init_kwargs, **extra)
    assert_output_shapes(_call_layer(layer, inputs), expected_output_shape)
    config = layer.get_config()
    assert {k: config[k] for k in init_kwargs} == init_kwargs
    check_config_round_trip(layer, inputs, _call_layer, extra)
    if not extra:
        symbolic = [keras.Input(shape=x.shape[1:], dtype=str(x.dtype)) for x in inputs]
        check_keras_file_round_trip(keras.Model(symbolic, layer(*symbolic), name=layer.name), list(inputs),
                                    tmp_path)
    mixed = check_mixed_precision(lambda: layer_cls(**init_kwargs, **extra), inputs, _call_layer,
                                  mixed_output_dtype, mixed_atol)
    assert mixed.compute_dtype == "bfloat16" and mixed.variable_dtype == "float32"


def _call_model(model, inputs):
    return model(inputs, training=False)


def run_model_test(build, inputs, expected_output_shape, tmp_path, mixed_output_dtype, model=None,
                   mixed_atol=0.1):
    """Checks `build()` (or `model`, an instance of it, e.g. trained) on the input dict `inputs`: output
    shapes, config round trip, `.keras` round trip, mixed precision. Returns the model loaded back from its
    `.keras` file."""
    model = model or build()
    assert_output_shapes(_call_model(model, inputs), expected_output_shape)
    check_config_round_trip(model, inputs, _call_model)
    restored = check_keras_file_round_trip(model, inputs, tmp_path)
    check_mixed_precision(build, inputs, _call_model, mixed_output_dtype, mixed_atol)
    return restored


def run_task_test(model, serve_inputs, tmp_path, fit=None, serve_options=None):
    """The whole life of a task model as a user has it: `fit` (when given: `fit(model)` runs compile() and
    fit on a few raw examples) -> `serve` -> `save` -> load -> `serve` and `predict` again (bit-identical)
    -> export. Returns (served, job): `serve(serve_inputs)`'s outputs and the C-API check job of the export
    (`servability.check_servable_subprocess([job], atol=0.0)` asserts the server answers exactly `served`).
    """
    from keras_bert.export import export_saved_model, servability

    if fit is not None:
        fit(model)
    options = serve_options or {}
    served = model.serve(serve_inputs, **options)
    assert served, f"{type(model).__name__}.serve returned nothing"
    path = str(tmp_path / f"{model.name}.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored) is type(model)
    assert_same_outputs(restored.serve(serve_inputs, **options), served)
    ids = model.text_inputs(_texts(serve_inputs), model.preprocessor) if "text" in serve_inputs else None
    if ids is not None:
        if model.compiled:
            restored.compile()  # the same execution (XLA or not) as the model's compile() and fit chose
            restored.execution, restored.jit_compile = model.execution, model.jit_compile
        assert_same_outputs(restored.predict(ids, verbose=0), model.predict(ids, verbose=0))
    version_dir = export_saved_model(restored, str(tmp_path / f"{model.name}-export"), **options)
    arrays = str(tmp_path / f"{model.name}-check.npz")
    servability.save_check_arrays(arrays, {k: np.asarray(v, dtype=object) if _is_text(v) else np.asarray(v)
                                           for k, v in serve_inputs.items()}, served)
    return served, {"export_dir": version_dir, "runs": [{"signature": "serving_default", "arrays": arrays}]}


def _is_text(value):
    return np.asarray(value).dtype.kind in "USO"


def _texts(inputs):
    import tensorflow as tf

    return {k: tf.constant(np.asarray(v, dtype=object).tolist(), tf.string) for k, v in inputs.items()}
