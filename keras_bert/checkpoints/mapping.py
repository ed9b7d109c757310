"""Our variables under the original Google names: the one table every checkpoint format goes through.

Readers turn a checkpoint into `CheckpointWeights` keyed by Google's TF1 names (`bert/encoder/layer_0/...`,
`cls/predictions/...`); `assign_encoder` / `assign_heads` copy them into a model, checking every shape.
Writers start from `collect_weights`, which returns the model's weights under the same names.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable

import keras
import numpy as np

from keras_bert import compat
from keras_bert.errors import UserInputError

logger = logging.getLogger("keras_bert")


class CheckpointError(UserInputError, ValueError):
    """A checkpoint that does not fit the model: missing variable, wrong shape, unknown format."""


@dataclasses.dataclass
class CheckpointWeights:
    """Arrays keyed by Google TF1 name, and how the file names them (for error messages).

    Heads are optional: `has(name)` tells whether the checkpoint carries a variable.
    """

    path: str
    arrays: dict[str, np.ndarray]
    # Google name -> the name the file uses (for a format that renames); identity by default.
    rename: Callable[[str], str] | None = None
    ignored: list[str] = dataclasses.field(default_factory=list)

    def file_name(self, name: str) -> str:
        return self.rename(name) if self.rename else name

    def has(self, name: str) -> bool:
        return name in self.arrays


@dataclasses.dataclass
class Slot:
    """One model variable and the checkpoint names it is made of.

    Several names are concatenated on the last axis (the fused q|k|v kernel); `transpose` marks a variable
    stored as [out, in] under its Google name (`cls/seq_relationship/output_weights`).
    """

    names: tuple[str, ...]
    variable: keras.Variable
    transpose: bool = False
    # The Dense / Embedding layer whose kernel / table `variable` stores: read through it as float.
    layer: keras.layers.Layer | None = None

    def float_value(self):
        """The value the model computes with, float32: LoRA merged, int8 dequantized (`compat`)."""
        if isinstance(self.layer, keras.layers.Dense):
            return compat.float_kernel(self.layer)
        if isinstance(self.layer, keras.layers.Embedding):
            return compat.float_embeddings(self.layer)
        return self.variable.value

    def part_shape(self) -> tuple[int, ...]:
        shape = tuple(self.variable.shape)
        shape = shape[:-1] + (shape[-1] // len(self.names),)
        return shape[::-1] if self.transpose else shape


def _dense(prefix, layer):
    return [Slot((f"{prefix}/kernel",), compat.dense_kernel_variable(layer), layer=layer),
            Slot((f"{prefix}/bias",), layer.bias)]


def _embedding(name, layer):
    return Slot((name,), compat.embeddings_variable(layer), layer=layer)


def _layer_norm(prefix, layer):
    return [Slot((f"{prefix}/gamma",), layer.gamma), Slot((f"{prefix}/beta",), layer.beta)]


def encoder_slots(encoder) -> list[Slot]:
    """Every variable of a `BertEncoder`, in Google's order and naming."""
    emb = encoder.embeddings
    slots = [
        _embedding("bert/embeddings/word_embeddings", emb.word_embeddings),
        _embedding("bert/embeddings/token_type_embeddings", emb.token_type_embeddings),
        _embedding("bert/embeddings/position_embeddings", emb.position_embeddings),
        *_layer_norm("bert/embeddings/LayerNorm", emb.layer_norm),
    ]
    for i, block in enumerate(encoder.transformer_layers):
        prefix = f"bert/encoder/layer_{i}"
        qkv = [f"{prefix}/attention/self/{part}" for part in ("query", "key", "value")]
        slots += [
            Slot(tuple(f"{name}/kernel" for name in qkv), compat.dense_kernel_variable(block.qkv),
                 layer=block.qkv),
            Slot(tuple(f"{name}/bias" for name in qkv), block.qkv.bias),
            *_dense(f"{prefix}/attention/output/dense", block.attention_output),
            *_layer_norm(f"{prefix}/attention/output/LayerNorm", block.attention_layer_norm),
            *_dense(f"{prefix}/intermediate/dense", block.intermediate),
            *_dense(f"{prefix}/output/dense", block.output_dense),
            *_layer_norm(f"{prefix}/output/LayerNorm", block.output_layer_norm),
        ]
    return slots + _dense("bert/pooler/dense", encoder.pooler)


def head_slots(pretrainer) -> dict[str, list[Slot]]:
    """The pre-training heads' variables by head; each head is loaded whole or initialised whole."""
    mlm, nsp = pretrainer.masked_lm, pretrainer.next_sentence
    return {
        "masked_lm": [
            *_dense("cls/predictions/transform/dense", mlm.transform),
            *_layer_norm("cls/predictions/transform/LayerNorm", mlm.layer_norm),
            Slot(("cls/predictions/output_bias",), mlm.output_bias),
        ],
        "next_sentence": [
            Slot(("cls/seq_relationship/output_weights",), compat.dense_kernel_variable(nsp), transpose=True,
                 layer=nsp),
            Slot(("cls/seq_relationship/output_bias",), nsp.bias),
        ],
    }


def _layer_count(arrays):
    indexes = {int(match.group(1)) for name in arrays
               if (match := re.match(r"bert/encoder/layer_(\d+)/", name)) is not None}
    return max(indexes) + 1 if indexes else 0


def check_config_fits(config, weights: CheckpointWeights, config_file: str) -> None:
    """Raises CheckpointError naming `config_file` and `weights.path` (and both values) when the config
    states another number of transformer layers (more or fewer), hidden size or vocab size than the
    weights hold: a config that disagrees with its weights never loads as another model."""
    layers = _layer_count(weights.arrays)
    if layers != config.num_hidden_layers:
        raise CheckpointError(f"{config_file} states num_hidden_layers={config.num_hidden_layers} but "
                              f"{weights.path} holds {layers} transformer layers")
    table = weights.arrays.get("bert/embeddings/word_embeddings")
    if table is None:
        return  # named as missing when the encoder is assigned
    for key, value, axis in (("vocab_size", config.vocab_size, 0), ("hidden_size", config.hidden_size, 1)):
        if table.ndim == 2 and table.shape[axis] != value:
            raise CheckpointError(
                f"{config_file} states {key}={value} but {weights.path} holds word embeddings of "
                f"{table.shape[axis]} (variable {weights.file_name('bert/embeddings/word_embeddings')!r}, "
                f"shape {tuple(table.shape)})")


def _slot_value(slot: Slot, weights: CheckpointWeights) -> np.ndarray:
    parts = []
    for name in slot.names:
        if not weights.has(name):
            raise CheckpointError(
                f"{weights.path}: variable {weights.file_name(name)!r} is missing from the checkpoint "
                f"(needed for {slot.variable.path})")
        array = weights.arrays[name]
        if tuple(array.shape) != slot.part_shape():
            raise CheckpointError(
                f"{weights.path}: variable {weights.file_name(name)!r} has shape {tuple(array.shape)}, "
                f"expected {slot.part_shape()} for {slot.variable.path} (does the config match the weights?)")
        parts.append(array.T if slot.transpose else array)
    return np.concatenate(parts, axis=-1) if len(parts) > 1 else parts[0]


def _assign(slots: list[Slot], weights: CheckpointWeights) -> set[str]:
    # Every value is read and checked before the first assign, so a bad checkpoint changes nothing.
    values = [_slot_value(slot, weights) for slot in slots]
    for slot, value in zip(slots, values, strict=True):
        slot.variable.assign(keras.ops.cast(value, slot.variable.dtype))
    return {name for slot in slots for name in slot.names}


def assign_encoder(encoder, weights: CheckpointWeights) -> set[str]:
    """Copies every encoder variable from `weights`; raises `CheckpointError` on a missing or misshapen
    variable, or on an unused `bert/...` variable (a checkpoint larger than the config). A pooler absent
    whole (transformers' BertForQuestionAnswering / BertForTokenClassification have none) keeps its
    initialisation, logged. Returns the names used."""
    slots = encoder_slots(encoder)
    if not any(weights.has(name) for slot in slots[-2:] for name in slot.names):
        logger.info("%s: no pooler in the checkpoint; pooled_output comes from an initialised pooler",
                    weights.path)
        slots = slots[:-2]
    # Checked before `_assign`, so a checkpoint larger than the config leaves the encoder unchanged.
    needed = {name for slot in slots for name in slot.names}
    extra = sorted(name for name in weights.arrays if name.startswith("bert/") and name not in needed)
    if extra:
        raise CheckpointError(
            f"{weights.path}: encoder variable {weights.file_name(extra[0])!r} (and {len(extra) - 1} more) "
            f"has no place in a model with num_hidden_layers={len(encoder.transformer_layers)}")
    return _assign(slots, weights)


def assign_heads(pretrainer, weights: CheckpointWeights) -> tuple[set[str], list[str]]:
    """Copies the heads present in `weights` into a `BertPretrainer`. A head the checkpoint lacks entirely
    keeps its initialisation; a head found in part raises. Returns (names used, heads initialised)."""
    used, missing = set(), []
    for head, slots in head_slots(pretrainer).items():
        names = [name for slot in slots for name in slot.names]
        if not any(weights.has(name) for name in names):
            missing.append(head)
            continue
        used |= _assign(slots, weights)
    return used, missing


def collect_weights(encoder, pretrainer=None) -> dict[str, np.ndarray]:
    """The model's weights as float32 numpy arrays under Google's names (heads too, given a pretrainer):
    the values it computes with (LoRA updates merged, int8 weights dequantized)."""
    slots = encoder_slots(encoder)
    if pretrainer is not None:
        slots += [slot for head in head_slots(pretrainer).values() for slot in head]
    arrays = {}
    for slot in slots:
        value = keras.ops.convert_to_numpy(keras.ops.cast(slot.float_value(), "float32"))
        for name, part in zip(slot.names, np.split(value, len(slot.names), axis=-1), strict=True):
            arrays[name] = np.ascontiguousarray(part.T if slot.transpose else part)
    return arrays


def split_model(model):
    """(encoder, pretrainer or None) of a keras_bert model, told apart by its `task_kind` class attribute
    ("encoder", "pretrainer", or a task's), or of any model whose `.encoder` is a BertEncoder; raises
    TypeError for anything else."""
    kind = getattr(model, "task_kind", None)
    if kind == "encoder":
        return model, None
    encoder = getattr(model, "encoder", None)
    if kind is None and getattr(encoder, "task_kind", None) != "encoder":
        raise TypeError(f"Expected a BertEncoder, a BertPretrainer or a task model with .encoder, got "
                        f"{type(model).__name__}")
    return encoder, model if kind == "pretrainer" else None
