"""A model's float form: the plain architecture, its LoRA updates merged and its int8 weights dequantized.

Every writer of weights (`save_keras_hub`, `save_huggingface`, `save_google_checkpoint`, the exports)
writes a model in this form, so a model quantized by Keras' `model.quantize("int8")` or adapted by
`enable_lora` writes the float weights it computes with (`compat.float_kernel`), never int8 codes.
"""

import keras

from keras_bert import compat

# The key of a task model's or encoder's config recording Keras' quantization of its layers.
QUANTIZED_KEY = "quantized_layers"


def leaf_layers(model):
    """The layers of `model` without sublayers, in a fixed order (the same for a model rebuilt from its
    config)."""
    return [layer for layer in compat.sublayers(model, include_self=False) if not compat.sublayers(layer)[1:]]


def quantized_layers(model):
    """[[index in `leaf_layers(model)`, mode], ...] of the layers Keras' `quantize` changed; [] for none."""
    return [[index, layer.quantization_mode] for index, layer in enumerate(leaf_layers(model))
            if getattr(layer, "quantization_mode", None) is not None]


def quantization_config(model):
    """{QUANTIZED_KEY: `quantized_layers(model)`} for a `get_config` to add; {} when nothing is quantized."""
    recorded = quantized_layers(model)
    return {QUANTIZED_KEY: recorded} if recorded else {}


def from_quantized_config(build, config):
    """`build(config)` (a model's constructor call) without the QUANTIZED_KEY entry, then `requantize`d as it
    records: what a `from_config` returns, so `keras.saving.load_model` reads a quantized save."""
    config = dict(config)
    recorded = config.pop(QUANTIZED_KEY, None)
    model = build(config)
    return requantize(model, recorded) if recorded else model


def requantize(model, recorded):
    """Quantizes the leaf layers `recorded` (`quantized_layers` of the saved model) of `model`, rebuilt from
    its config, as they were, so a saved quantized model's weights load into it. Returns `model`."""
    layers = leaf_layers(model)
    for mode in sorted({mode for _, mode in recorded}):
        chosen = {id(layers[index]) for index, layer_mode in recorded if layer_mode == mode}
        model.quantize(mode, filters=lambda layer, chosen=chosen: id(layer) in chosen
                       and getattr(layer, "quantization_mode", None) is None)
    return model


def _is_adapted(layer):
    return getattr(layer, "lora_enabled", False) or getattr(layer, "quantization_mode", None) is not None


def float_model(model):
    """`model` itself when no layer has a LoRA update or Keras quantization; else a new model of the same
    class and config, float, with the weights `model` computes with (LoRA merged, int8 dequantized).
    Raises ValueError naming a layer quantized in a mode other than int8."""
    if not any(_is_adapted(layer) for layer in compat.sublayers(model)):
        return model
    values = {variable.path: variable for variable in model.weights}
    for layer in compat.sublayers(model):
        if isinstance(layer, keras.layers.Dense) and _is_adapted(layer):
            values[compat.dense_kernel_variable(layer).path] = compat.float_kernel(layer)
        elif isinstance(layer, keras.layers.Embedding) and _is_adapted(layer):
            values[compat.embeddings_variable(layer).path] = compat.float_embeddings(layer)
    plain = type(model).from_config(_unquantized(model.get_config()))
    for variable in plain.weights:
        if variable.path not in values:
            raise ValueError(f"the float form of {model.name!r} has weight {variable.path}, "
                             f"which {model.name!r} lacks")
        variable.assign(keras.ops.cast(values[variable.path], variable.dtype))
    return plain


def _unquantized(config):
    """`config` (a task model's, or an encoder's) without QUANTIZED_KEY, also in its nested encoder."""
    config = {key: value for key, value in config.items() if key != QUANTIZED_KEY}
    encoder = config.get("encoder")
    if isinstance(encoder, dict) and isinstance(encoder.get("config"), dict):
        config["encoder"] = {**encoder, "config": _unquantized(encoder["config"])}
    return config
