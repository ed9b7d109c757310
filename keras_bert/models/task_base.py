"""What every fine-tuning model shares: it wraps an encoder, may own its text preprocessing and label
names, and serializes as its constructor args."""

import keras

from keras_bert.execution import ChoosesExecution
from keras_bert.layers.initializers import truncated_normal
from keras_bert.models.accumulation import GradientAccumulation
from keras_bert.models.assembly import CHECKPOINT_HEAD, assemble
from keras_bert.models.float_form import from_quantized_config, quantization_config
from keras_bert.models.lora import LoraAdaptation
from keras_bert.models.pretrained import resolve_pretrained
from keras_bert.models.serving import Serving
from keras_bert.models.task_compile import TaskCompile
from keras_bert.models.text_task import TextTask

# Constructor arguments that define a head: a saved model of the same class must match those given.
HEAD_ARGS = ("num_classes", "labels")


class EncoderTaskModel(Serving, ChoosesExecution, GradientAccumulation, LoraAdaptation, TaskCompile,
                       TextTask, keras.Model):
    """Base of the task models (and the pretrainer): holds `encoder` (and `preprocessor`, `labels`), names
    its task in the class attribute `task_kind` (what checkpoint writers tell models apart by), serves
    through the hooks of `keras_bert.models.serving.Serving`, and
    round-trips through `.keras` by its constructor arguments (encoder and preprocessor nested as
    serialized objects). Its one `compile()` (`TaskCompile.compile`: optimizer, loss, metrics defaults) asks
    `ChoosesExecution` how to run (XLA or not, by dtype and CPU) and sets `gradient_accumulation_steps=K`
    for `GradientAccumulation`'s step in K micro-batches; `enable_lora(rank)` adapts a frozen encoder
    (`keras_bert.models.lora`)."""

    task_kind = None
    head_arg_names = HEAD_ARGS  # a task adds its own (a saved model must match those given)
    stated_head_args = ()  # the constructor arguments a checkpoint's head of this kind states

    trains_pooler = True  # False where the head reads sequence_output only (tags, spans)

    def _task_config(self):
        raise NotImplementedError

    # ------------------------------------------------------------------------- trained weights
    # A head that never reads pooled_output leaves the encoder's pooler out of training: no loss reaches it,
    # so it would have no gradient (Keras warned of that on every fit) and no use for optimizer slots. It
    # stays among `weights` (saved, exported, loaded), counted non-trainable; the encoder itself, which
    # another task model may share, is not changed.
    def _untrained(self):
        encoder = self.__dict__.get("encoder")  # None while keras.Model.__init__ runs
        if self.trains_pooler or encoder is None:
            return set()
        return {id(variable) for variable in encoder.pooler.variables}

    @property
    def trainable_weights(self):
        untrained = self._untrained()
        return [v for v in super().trainable_weights if id(v) not in untrained]

    @property
    def trainable_variables(self):
        untrained = self._untrained()
        return [v for v in super().trainable_variables if id(v) not in untrained]

    @property
    def non_trainable_weights(self):
        trained = {id(v) for v in self.trainable_weights}
        return [v for v in self.weights if id(v) not in trained]

    @property
    def non_trainable_variables(self):
        trained = {id(v) for v in self.trainable_variables}
        return [v for v in self.variables if id(v) not in trained]

    def distillation_mask(self, inputs):
        """Which positions of the outputs a distilled student imitates (`keras_bert.distillation`): None,
        every row; a task with per-token outputs returns its [batch, seq] mask of real tokens."""
        return None

    def get_config(self):
        config = {"encoder": keras.saving.serialize_keras_object(self.encoder), "name": self.name,
                  "trainable": self.trainable}
        config.update(self._task_config())
        config.update(self._text_config())
        config.update(quantization_config(self))
        return config

    @classmethod
    def from_config(cls, config):
        def build(config):
            config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
            return cls(**cls._text_from_config(config))

        return from_quantized_config(build, config)

    @classmethod
    def from_pretrained(cls, path, *, seq_length=None, lower_case=None, vocab_file=None, dtype=None,
                        lora_rank=None, head=CHECKPOINT_HEAD, **kwargs):
        """This task model on the encoder of the checkpoint at `path`, ready for raw text (`assemble`).

        Args:
            path: a Google TF1 checkpoint, a Hugging Face directory, a KerasHub preset or our own save
                (`.keras` or directory), or a hub name; a `.keras` of this same class loads as it is (head
                and labels included); the head of a KerasHub BertTextClassifier or of a Hugging Face BertFor*
                of this task (with its id2label names) is loaded.
            seq_length: packed length of the preprocessor (default: the length the checkpoint states:
                a saved model's own, a KerasHub preprocessor's, a sentence-transformers or Hugging Face
                tokenizer config's; else min(128, max_position_embeddings)).
            lower_case: casing when the checkpoint does not state it (a saved tokenizer, HF
                tokenizer_config.json `do_lower_case`, tokenizer.json; a contradicting value is a
                ValueError naming both); default True.
            vocab_file: a vocab.txt instead of the one beside `path` (a saved model's must agree).
            dtype: Keras dtype policy to build with (e.g. "mixed_bfloat16"); default float32.
            lora_rank: when given, `enable_lora(lora_rank)`: the encoder frozen, rank-R updates of its
                projections trained with the head (merged again by `save` and the export).
            head: "checkpoint": the checkpoint's trained head of this task where it holds one, and
                `labels=` / `num_classes=` of other classes are a ValueError naming both; "fresh": a fresh
                head on the checkpoint's encoder (`keras_bert.models.assembly.HEADS`).
            **kwargs: the head's constructor arguments, e.g. `labels=["neg", "pos"]` or `num_classes=3`.

        The preprocessor is a saved model's own, else the `vocab.txt` (or Hugging Face `tokenizer.json`)
        beside `path`; a checkpoint with none of them is a ValueError (a task model takes raw text), but
        for a `.keras` save, which loads as it was saved.

        Returns:
            A built model of this class (float32 weights unless `dtype`), its `preprocessor` set, ready
            for `compile` / `fit` / `predict` on raw text and for `serve`.

        Raises:
            FileNotFoundError: `path` (or `vocab_file`) does not exist.
            CheckpointError: (a ValueError) `path` is no checkpoint format keras_bert reads, cannot be
                read, or misses or misshapes an encoder variable (named), or its vocab disagrees with its
                tokenizer files.
            ValueError: no vocab beside `path`; `lower_case` against the casing the checkpoint states;
                `seq_length` outside [3, max_position_embeddings]; a vocab of another size than the
                model's; `head` not "checkpoint" / "fresh"; `labels=` / `num_classes=` other than the
                trained head's; a negative or non-integer `lora_rank`.
        """
        pretrained = resolve_pretrained(path, seq_length=seq_length, lower_case=lower_case,
                                        vocab_file=vocab_file)
        if pretrained.preprocessor is None and pretrained.format != "keras":
            raise ValueError(f"{path}: no vocab.txt or tokenizer.json beside the checkpoint, so "
                             f"{cls.__name__} cannot take raw text; add the checkpoint's vocab.txt (or build "
                             f"{cls.__name__}(load_encoder(path), ...) for token ids)")
        model = assemble(pretrained, cls, dtype, head, kwargs)
        if lora_rank:
            model.enable_lora(lora_rank)
        return model


def dense_head(units, initializer_range, name, dtype=None):
    return keras.layers.Dense(
        units, kernel_initializer=truncated_normal(initializer_range),
        dtype=dtype, name=name)
