"""BertEncoder: the BERT network as a functional Keras model with TF Hub input/output names."""

import dataclasses

import keras
import tensorflow as tf

from keras_bert.config import BertConfig
from keras_bert.layers.embeddings import BertEmbeddings
from keras_bert.layers.initializers import truncated_normal
from keras_bert.layers.transformer import TransformerBlock, attention_bias
from keras_bert.models import options
from keras_bert.models.assembly import assemble, register
from keras_bert.models.float_form import from_quantized_config, quantization_config
from keras_bert.models.pretrained import resolve_pretrained
from keras_bert.models.serving import INPUT_NAMES, Serving
from keras_bert.models.task_compile import TaskCompile
from keras_bert.models.text_task import TextTask

# torch.nn.functional.normalize's floor on the norm, as sentence-transformers' Normalize module uses it.
NORMALIZE_EPSILON = 1e-12
NO_POOLING = "none"  # what turns off a model's own pooling (a flag cannot say None)
POOLING = ("cls", "mean", NO_POOLING)


@dataclasses.dataclass(frozen=True)
class EncoderOptions(options.Options):
    """An encoder's serving options.

    Attributes:
        pooling: also serve `sentence_embedding`: None (not served), "cls" or "mean".
        normalize: L2-normalize the sentence embedding.
        sequence_output: the raw-text endpoint also returns `sequence_output` [b, seq, hidden] (default:
            only its answers: pooled_output, sentence_embedding).
    """

    pooling: str | None = options.option(
        None, "Encoder: also serve `sentence_embedding`, the [CLS] vector or the mean over real tokens; "
        "default: the model's own (a sentence-transformers checkpoint's modules.json), else none; 'none' "
        "serves none whatever the model's own.", "an encoder", POOLING)
    normalize: bool = options.option(False, "L2-normalize `sentence_embedding` (default: the model's own, "
                                     "a sentence-transformers checkpoint's Normalize module).", "an encoder")
    sequence_output: bool = options.option(
        False, "Encoder: serving_default also returns sequence_output [batch, seq, hidden] (default: only "
        "pooled_output / sentence_embedding; serve_token_ids always has it).", "an encoder")

    def __post_init__(self):
        options.check_choice("pooling", self.pooling, POOLING, none_ok=True)
        if self.pooling == NO_POOLING:
            object.__setattr__(self, "pooling", None)  # one "off" from here on (frozen dataclass)
        if self.normalize and self.pooling is None:
            raise ValueError("normalize=True needs a pooling ('cls' or 'mean') to normalize")


def flat_outputs(outputs):
    """The encoder's outputs with `encoder_outputs` (a list) as `encoder_outputs_<i>`, one per layer: what a
    SavedModel signature can return (TF Hub's flat signature names them so)."""
    outputs = dict(outputs)
    layers = outputs.pop("encoder_outputs")
    return {**outputs, **{f"encoder_outputs_{i}": x for i, x in enumerate(layers)}}


def encoder_inputs(seq_length=None, prefix_shape=()):
    """Symbolic int32 inputs named as TF Hub BERT's: input_word_ids, input_mask, input_type_ids."""
    return {name: keras.Input(shape=tuple(prefix_shape) + (seq_length,), dtype="int32", name=name)
            for name in INPUT_NAMES}


@register
@keras.saving.register_keras_serializable(package="keras_bert")
class BertEncoder(Serving, TaskCompile, TextTask, keras.Model):
    """The bidirectional transformer encoder of Devlin et al. (2018).

    Args:
        config: a `BertConfig` (or its dict).
        dtype: the Keras dtype policy of the layers (e.g. "mixed_bfloat16"; default: Keras' global
            policy, float32); the attention bias and the outputs of `serve` stay float32.
        preprocessor: optional `keras_bert.text.BertPreprocessor`; `predict` then also takes raw text
            (a sequence of str, or a tuple (texts_a, texts_b)).
        sentence_pooling: (pooling "cls" | "mean", normalize bool), the `sentence_embedding` that `serve`,
            `serving_endpoints` and the exports give by default (`from_pretrained` of a sentence-transformers
            directory sets its own); None: none unless asked. Saved in the config.
        **kwargs: `keras.Model`'s (e.g. `name`).

    Raises:
        ValueError: `sentence_pooling` with a pooling other than "cls" / "mean".

    Call with a dict of int32 [batch, seq] tensors `input_word_ids`, `input_mask` (1 for real tokens,
    0 for padding) and `input_type_ids` (segment ids). Returns a dict:
        sequence_output: [batch, seq, hidden], the last layer's hidden states;
        pooled_output: [batch, hidden], tanh(dense(sequence_output[:, 0])), the [CLS] summary;
        encoder_outputs: list of num_hidden_layers tensors [batch, seq, hidden], one per layer.

    Examples:

        encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=30522))
        outputs = encoder(preprocessor(tf.constant(["the cat sat"])))
        outputs["sequence_output"]   # [1, seq_length, 128]
        outputs["pooled_output"]     # [1, 128]
        encoder = BertEncoder.from_pretrained("path/to/hf_bert_dir")   # or a Google TF1 checkpoint
    """

    # What `checkpoints.split_model` and the export tell models apart by (each task model sets its own).
    task_kind = "encoder"
    options_class = EncoderOptions

    def __init__(self, config, dtype=None, preprocessor=None, sentence_pooling=None, **kwargs):
        if isinstance(config, dict):
            config = BertConfig(**config)
        # === Layers ===
        embeddings = BertEmbeddings(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            dropout=config.hidden_dropout_prob,
            dtype=dtype,
            name="embeddings",
        )
        blocks = [
            TransformerBlock(
                hidden_size=config.hidden_size,
                num_attention_heads=config.num_attention_heads,
                intermediate_size=config.intermediate_size,
                hidden_act=config.hidden_act,
                hidden_dropout=config.hidden_dropout_prob,
                attention_dropout=config.attention_probs_dropout_prob,
                initializer_range=config.initializer_range,
                layer_norm_eps=config.layer_norm_eps,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(config.num_hidden_layers)
        ]
        pooler = keras.layers.Dense(config.hidden_size, activation="tanh",
                                    kernel_initializer=truncated_normal(config.initializer_range),
                                    dtype=dtype, name="pooler")

        # === Functional model ===
        inputs = encoder_inputs()
        x = embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
        bias = _AttentionBias(dtype="float32", name="attention_bias")(inputs["input_mask"])
        layer_outputs = []
        for block in blocks:
            x = block(x, bias)
            layer_outputs.append(x)
        pooled = pooler(_FirstToken(name="first_token")(x))
        outputs = {"sequence_output": x, "pooled_output": pooled, "encoder_outputs": layer_outputs}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.config = config
        self.embeddings = embeddings
        self.transformer_layers = blocks
        self.pooler = pooler
        self._init_text(preprocessor)
        self.sentence_pooling = sentence_pooling

    @property
    def sentence_pooling(self):
        return self._sentence_pooling

    @sentence_pooling.setter
    def sentence_pooling(self, value):
        if value is not None:  # a list after a JSON round trip
            pooling, normalize = value
            EncoderOptions(pooling=pooling, normalize=bool(normalize))  # checks both
            value = (pooling, bool(normalize))
        self._sentence_pooling = value

    def call(self, inputs, training=None):
        # Feature dicts often carry labels too (e.g. masked_lm_ids); the encoder takes its three inputs.
        return super().call({name: inputs[name] for name in INPUT_NAMES}, training=training)

    # ----------------------------------------------------------------------------------- serving
    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None, **kwargs):
        """`keras.Model.export`; a "tf_saved_model" endpoint `serve` answers with `flat_outputs` (a signature
        cannot return the `encoder_outputs` list)."""
        if format != "tf_saved_model" or kwargs:
            return super().export(filepath, format=format, verbose=verbose, input_signature=input_signature,
                                  **kwargs)
        archive = keras.export.ExportArchive()
        archive.track(self)
        specs = input_signature or [{name: tf.TensorSpec([None, None], tf.int32, name=name)
                                     for name in INPUT_NAMES}]
        archive.add_endpoint("serve", lambda inputs: flat_outputs(self(inputs, training=False)), specs)
        archive.write_out(filepath, verbose=True if verbose is None else verbose)

    def serving_options(self, form, options=None):
        """The serving Options; `pooling` / `normalize` not given default to `sentence_pooling` (pooling
        "none" or None given: no sentence embedding, and normalize off)."""
        if self.sentence_pooling is not None and not isinstance(options, EncoderOptions):
            given = dict(options or {})
            given.setdefault("pooling", self.sentence_pooling[0])
            own = given["pooling"] not in (None, NO_POOLING) and self.sentence_pooling[1]
            options = {**given, "normalize": given.get("normalize", own)}
        return super().serving_options(form, options)

    def named_outputs(self, inputs):
        out = self.served_call(inputs)
        return {"pooled_output": out["pooled_output"], "sequence_output": out["sequence_output"]}

    def answer_outputs(self, inputs, outputs, options):
        """+ `sentence_embedding` float32 [b, hidden] with a `pooling` option."""
        if options.pooling is None:
            return outputs
        return dict(outputs, sentence_embedding=sentence_embedding(
            outputs["sequence_output"], inputs["input_mask"], options.pooling, options.normalize))

    def form_endpoint(self, form, preprocessor, options):
        """The raw-text endpoint answers with pooled_output (and sentence_embedding); sequence_output
        [b, seq, hidden] only with that option (the token-id endpoint always has it)."""
        endpoint = super().form_endpoint(form, preprocessor, options)
        if options.sequence_output:
            return endpoint

        def function(texts):
            outputs = dict(endpoint.function(texts))
            outputs.pop("sequence_output")
            return outputs

        return dataclasses.replace(endpoint, function=function)

    def get_config(self):
        own = {} if self.sentence_pooling is None else {"sentence_pooling": list(self.sentence_pooling)}
        return {"config": self.config.to_dict(), "name": self.name, "trainable": self.trainable,
                **self._text_config(), **own, **quantization_config(self)}

    @classmethod
    def from_config(cls, config):
        return from_quantized_config(lambda config: cls(**cls._text_from_config(config)), config)

    @classmethod
    def from_pretrained(cls, path, *, seq_length=None, lower_case=None, vocab_file=None, dtype=None):
        """Loads an encoder from a Google TF1 checkpoint, a Hugging Face directory, a KerasHub preset or our
        own save (`assemble`), with the preprocessor `resolve_pretrained` gives (a saved model's own, else
        `vocab_file` or the `vocab.txt` beside `path`, cased as the checkpoint states, else `lower_case`,
        default True; packed to `seq_length`, default the length the checkpoint states, e.g. a
        sentence-transformers directory's max_seq_length, else min(128, max_position_embeddings)), so
        `predict` also takes raw text; None without a vocab.

        Args:
            path: a Google TF1 checkpoint (prefix or directory), a Hugging Face directory (BertModel or
                any BertFor*: its heads are not used), a KerasHub preset directory, our own save (`.keras`
                or directory) or a hub name.
            seq_length: the preprocessor's packed length (default: the length the checkpoint states,
                else min(128, max_position_embeddings)).
            lower_case: casing when the checkpoint does not state it (default True).
            vocab_file: a vocab.txt instead of the one beside `path`.
            dtype: the Keras dtype policy to build with (e.g. "mixed_bfloat16"; default float32).

        Returns:
            A built `BertEncoder` with the checkpoint's weights, its `preprocessor` set (None without a
            vocab).

        Raises:
            FileNotFoundError: `path` (or `vocab_file`) does not exist.
            CheckpointError: (a ValueError) `path` is no checkpoint format keras_bert reads, cannot be
                read, or misses or misshapes an encoder variable (named).
            ValueError: `lower_case` against the casing the checkpoint states; `seq_length` outside
                [3, max_position_embeddings]; a vocab of another size than the model's.
        """
        pretrained = resolve_pretrained(path, seq_length=seq_length, lower_case=lower_case,
                                        vocab_file=vocab_file)
        return assemble(pretrained, cls, dtype)


def sentence_embedding(sequence_output, input_mask, pooling, normalize):
    """float32 [b, hidden] from sequence_output [b, s, hidden] and input_mask [b, s]: the first ([CLS])
    vector ("cls"), or the mean over positions where input_mask is 1 ("mean"); L2-normalized with
    `normalize`."""
    sequence_output = tf.cast(sequence_output, tf.float32)
    if pooling == "cls":
        pooled = sequence_output[:, 0]
    else:
        mask = tf.expand_dims(tf.cast(input_mask, tf.float32), -1)  # LiteRT has no new-axis slice
        pooled = tf.reduce_sum(sequence_output * mask, axis=1) / tf.maximum(tf.reduce_sum(mask, axis=1), 1e-9)
    if normalize:
        pooled /= tf.maximum(tf.norm(pooled, axis=-1, keepdims=True), NORMALIZE_EPSILON)
    return pooled


def load_pretrained_model(path, *, seq_length=None, lower_case=None, vocab_file=None, dtype=None):
    """The model the checkpoint at `path` holds (`assemble` with no class), whatever its format: a `.keras`
    save's whole model (any keras_bert class), the task model of a Hugging Face BertFor* or KerasHub task
    preset with its trained head and label names, else the `BertEncoder`; with the preprocessor
    `resolve_pretrained(path, seq_length=, lower_case=, vocab_file=)` gives (each override applied to any
    format, a `.keras` save's own preprocessor included) and built under the dtype policy `dtype`. What the
    export and KerasHub CLIs' --model_path and distill's --teacher load.

    Args:
        path: a Google TF1 checkpoint, a Hugging Face directory, a KerasHub preset, our own save (`.keras`
            or directory) or a hub name.
        seq_length: the preprocessor's packed length (default: the length the checkpoint states, else
            min(128, max_position_embeddings)).
        lower_case: casing when the checkpoint does not state it (default True).
        vocab_file: a vocab.txt instead of the one beside `path`.
        dtype: the Keras dtype policy to build with (default float32).

    Returns:
        The built model: a `BertEncoder`, a task model (`BertClassifier`, `BertTokenClassifier`,
        `BertSpanLabeler`, `BertMultipleChoice`) or a `BertPretrainer`, its `preprocessor` set (None
        without a vocab).

    Raises:
        FileNotFoundError: `path` (or `vocab_file`) does not exist.
        CheckpointError: (a ValueError) `path` is no checkpoint format keras_bert reads, cannot be read,
            or misses or misshapes a variable (named).
        ValueError: `lower_case` against the casing the checkpoint states; `seq_length` outside
            [3, max_position_embeddings]; a vocab of another size than the model's.
    """
    pretrained = resolve_pretrained(path, seq_length=seq_length, lower_case=lower_case, vocab_file=vocab_file)
    return assemble(pretrained, dtype=dtype)


def load_encoder(path, **overrides):
    """`BertEncoder.from_pretrained(path, **overrides)`: the encoder of the checkpoint at `path` (any
    supported format, or a hub name; heads in the checkpoint are not used), with the preprocessor of the
    vocab beside it (None without one).

    Args:
        path: a Google TF1 checkpoint, a Hugging Face directory, a KerasHub preset, our own save (`.keras`
            or directory) or a hub name.
        **overrides: `BertEncoder.from_pretrained`'s keywords: `seq_length`, `lower_case`, `vocab_file`,
            `dtype`.

    Returns:
        A built `BertEncoder` with the checkpoint's weights and `preprocessor`.

    Raises:
        FileNotFoundError: `path` (or `vocab_file`) does not exist.
        CheckpointError: (a ValueError) naming the variable on a missing or misshapen encoder variable,
            or the file of an unreadable checkpoint.
        ValueError: an override that contradicts the checkpoint (`lower_case`, `seq_length`, the vocab).
    """
    return BertEncoder.from_pretrained(path, **overrides)


@keras.saving.register_keras_serializable(package="keras_bert")
class _AttentionBias(keras.layers.Layer):
    """[batch, seq] input_mask -> float32 additive attention bias [batch, 1, 1, seq]."""

    def call(self, input_mask):
        return attention_bias(input_mask)


@keras.saving.register_keras_serializable(package="keras_bert")
class _FirstToken(keras.layers.Layer):
    """[batch, seq, hidden] -> [batch, hidden]: the [CLS] position."""

    def call(self, x):
        return x[:, 0]
