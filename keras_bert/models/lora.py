"""LoRA fine-tuning (Hu et al. 2021): a frozen encoder whose projections learn rank-R updates.

`model.enable_lora(rank)` freezes every encoder weight and gives each transformer block's projections
(the fused query|key|value kernel, the attention output, and the feed-forward `intermediate` and `output`
kernels) a trainable update `A @ B` (A [in, rank], B [rank, out], B starting at 0) through Keras'
`Dense.enable_lora`; the task head (layers outside the encoder) trains fully. The fused QKV kernel gets
one rank-R update across its three parts (Hu et al. adapt query and value with one each).

`model.merged_lora()` returns the plain architecture with each kernel replaced by `kernel + A @ B *
alpha / rank`: no LoRA variables, the speed of the original. `model.save(...)` saves that merged model, so a
`.keras` file (and an export of it) is always the plain architecture.
"""

import logging

import numpy as np

from keras_bert.models import serving
from keras_bert.models.float_form import float_model

logger = logging.getLogger("keras_bert")

# The Dense layers of a TransformerBlock that LoRA adapts.
LORA_PROJECTIONS = ("qkv", "attention_output", "intermediate", "output_dense")


def count_parameters(variables):
    return int(sum(np.prod(v.shape) for v in variables))


class LoraAdaptation:
    """Mixin of the encoder task models (before `keras.Model` in the bases): `enable_lora`, `merged_lora`,
    and a `save` that merges."""

    lora_rank = None

    def enable_lora(self, rank, alpha=None):
        """Freezes the encoder and adapts its attention and feed-forward projections with rank-`rank`
        updates scaled by `alpha / rank` (default alpha = rank). Logs and returns the number of trainable
        parameters (int). Call before `compile`.

        Args:
            rank: the rank R of each update (an int >= 1): A [in, R] and B [R, out] beside each frozen
                kernel of the fused query-key-value, attention output and both feed-forward projections.
            alpha: the updates' scale numerator (default: `rank`, a scale of 1).

        Returns:
            The number of trainable parameters (int): the LoRA factors and the task head.

        Raises:
            ValueError: LoRA is already enabled on this model, or `rank` is not an integer >= 1.
        """
        if self.lora_rank is not None:
            raise ValueError(f"LoRA is already enabled on {self.name!r} (rank {self.lora_rank})")
        if int(rank) != rank or rank < 1:
            raise ValueError(f"LoRA rank must be an integer >= 1, got {rank!r}")
        for variable in self.encoder.weights:
            variable.trainable = False
        for block in self.encoder.transformer_layers:
            for name in LORA_PROJECTIONS:
                getattr(block, name).enable_lora(int(rank), lora_alpha=alpha)
        self.lora_rank = int(rank)
        serving.forget_traces(self)
        trainable, total = count_parameters(self.trainable_weights), count_parameters(self.weights)
        logger.info("LoRA rank %d: %d trainable parameters of %d (%.2f%%)", rank, trainable, total,
                    100.0 * trainable / total)
        return trainable

    def merged_lora(self):
        """This model as its plain architecture (a new model, same config) with the LoRA updates added into
        the kernels (and int8 weights dequantized: `float_model`); `self` when LoRA is not enabled."""
        if self.lora_rank is None:
            return self
        return float_model(self)

    def save(self, filepath, *args, **kwargs):
        """`keras.Model.save` of `merged_lora()`: the plain architecture, without LoRA variables.

        Args:
            filepath: the `.keras` file to write (str or pathlib.Path).
            *args: `keras.Model.save`'s other arguments (`overwrite=True`, `zipped`).
            **kwargs: `keras.Model.save`'s keyword arguments.

        Returns:
            None.
        """
        if self.lora_rank is None:
            return super().save(filepath, *args, **kwargs)
        return self.merged_lora().save(filepath, *args, **kwargs)
