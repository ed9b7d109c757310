"""The form a model is served in: LoRA adapters merged into the kernels, and optionally int8 weights.

`quantize="int8"` is Keras' post-training int8 quantization of every `Dense` layer (the projections, the
pooler and the heads; embeddings and LayerNorm stay float): each kernel is stored as int8 with one float
scale per output unit, and each call quantizes its input per row and runs an int8 x int8 -> int32 matmul.
The exported graph uses only core TensorFlow ops, so TF Serving runs it.
"""

import keras

QUANTIZE_MODES = ("int8",)


def serving_form(model, quantize=None):
    """`model` as it is exported: `model.merged_lora()` when it has LoRA adapters, then, for
    `quantize="int8"`, a copy whose Dense layers hold int8 kernels (`model` itself is not changed).
    `quantize=None` and no LoRA: `model` itself."""
    if quantize is not None and quantize not in QUANTIZE_MODES:
        raise ValueError(f"quantize must be one of {QUANTIZE_MODES} or None, got {quantize!r}")
    merged = model.merged_lora() if getattr(model, "lora_rank", None) is not None else model
    if quantize is None:
        return merged
    if merged is model:  # quantize a copy, not the caller's model
        merged = type(model).from_config(model.get_config())
        merged.set_weights(model.get_weights())
    for layer in merged._flatten_layers(include_self=False):
        if isinstance(layer, keras.layers.Dense):
            layer.quantize(quantize)
    return merged
