"""What a model serves: its endpoints, raw inputs to finished answers, and `serve`, the Python call of them.

Every keras_bert model (`BertEncoder` and the task models) mixes in `Serving`:

    clf.serve({"text": ["a great movie"]})                # {"label": [b"pos"], "label_id": [1], ...}
    encoder.serve({"text": ["a great movie"]}, pooling="mean")   # + sentence_embedding

`serve(inputs, **options)` runs exactly the function that `keras_bert.export` writes as `serving_default`
for the same options, so a recipe's predictions and a served answer come from one function. A model
class states its serving contract with a few hooks (defaults below): `serving_forms` (the raw-input forms
it takes, its default first), `named_outputs` (token-id inputs -> named outputs), `answer_outputs`
(answers read off those outputs), `whole_text_outputs` (answers that need the whole text: entities,
windowed labels), `options_class` (its serving `Options`, `keras_bert.models.options`), `check_serving`
(which options fit the form) and `token_id_spec` / `text_spec`.
"""

import dataclasses
import weakref

import numpy as np
import tensorflow as tf

from keras_bert import compat, native_logs
from keras_bert.layers.transformer import gathers_real_rows, real_rows, served_layout
from keras_bert.models.buckets import LENGTH_MULTIPLE, in_one_graph, model_outputs
from keras_bert.models.options import Options, model_options
from keras_bert.models.served_inputs import checked_inputs, served_arrays

TOKEN_IDS = "token_ids"
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
# Texts sent by warmup requests; the empty string also exercises the no-token path at load time.
WARMUP_TEXTS = ("TF Serving warms the model up with this request.", "")


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """One served function: `function` (dict of tensors -> dict of dense tensors) over `input_spec`
    ({name: tf.TensorSpec}), the tf.Example features of its inputs (`example_features`, a tf.io parsing
    spec, or None) and the numpy inputs of a warmup request (`warmup`)."""

    function: object
    input_spec: dict
    example_features: dict | None
    warmup: dict
    # (model, key): what this function is of (`Serving.serving_endpoints`); one trace per model and key.
    owner: object = None
    key: tuple | None = None

    def traced(self):
        """`function` as the tf.function an export writes and `serve` runs, traced once per owner and key
        (`serve` then an export, or two exports, of a model trace it once), in the context
        `tf.saved_model.save` looks it up in (`compat.save_tracing`)."""
        traced = {} if self.owner is None else _TRACED.setdefault(self.owner, {})
        if self.key not in traced:
            with compat.save_tracing():
                traced[self.key] = traced_function(self.function, self.input_spec)
        return traced[self.key]


def traced_function(function, spec):
    """`function` as a tf.function over one dict argument of `spec` ({name: tf.TensorSpec}), traced once."""
    traced = tf.function(function, input_signature=[spec], autograph=False)
    traced.get_concrete_function()
    return traced


def _one_row_spec(spec):
    """`spec` ({name: tf.TensorSpec}) with a batch of one."""
    return {name: tf.TensorSpec([1, *value.shape[1:]], value.dtype, name=value.name)
            for name, value in spec.items()}


def class_outputs(logits):
    """logits [..., C] -> probabilities (softmax; rank stated for grappler) and label_id (int32 argmax)."""
    return {"logits": logits, "probabilities": tf.nn.softmax(tf.ensure_shape(logits, logits.shape), -1),
            "label_id": tf.argmax(logits, axis=-1, output_type=tf.int32)}


def with_label_names(labels, outputs):
    """`outputs` (with int32 `label_id`) plus `label`: tf.string, same shape, the name in `labels`;
    unchanged when `labels` is empty or None."""
    if not labels:
        return outputs
    return dict(outputs, label=tf.gather(tf.constant(labels, tf.string), outputs["label_id"]))


def text_spec(form, choices=None):
    """{name: tf.TensorSpec} of a raw-text form: "text" takes `text` [batch]; "text_pair" also `text_b`
    [batch] (or [batch, choices] when `choices` is given: one ending per choice)."""
    spec = {"text": tf.TensorSpec([None], tf.string, name="text")}
    if form == "text_pair":
        spec["text_b"] = tf.TensorSpec([None] if choices is None else [None, choices], tf.string,
                                       name="text_b")
    return spec


def _example_features(spec):
    """tf.io parsing spec of one example of `spec`'s string inputs (the batch axis dropped)."""
    return {name: tf.io.FixedLenFeature(s.shape[1:], tf.string) for name, s in spec.items()}


def _text_warmup(spec):
    texts = np.array([t.encode() for t in WARMUP_TEXTS], dtype=object)
    inputs = {"text": texts}
    if "text_b" in spec:
        choices = spec["text_b"].shape[1:].as_list()  # [] for a pair, [num_choices] for multiple choice
        inputs["text_b"] = np.stack([texts[::-1]] * choices[0], axis=1) if choices else texts[::-1]
    return inputs


def _owners(form):
    """Names of the model classes that serve the raw-input `form` (for error messages)."""
    found, pending = [], list(Serving.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if form in cls.serving_forms and not cls.__name__.startswith("_"):
            found.append(cls.__name__)
    return " or ".join(sorted(set(found))) or "no model"


# Traced serving functions of each model, by endpoint key (`Endpoint.traced`) and by `serve`'s arguments.
_TRACED = weakref.WeakKeyDictionary()
# Each model's inference graph functions, by input structure (`Serving.served_call`).
_INFERENCE = weakref.WeakKeyDictionary()


def forget_traces(model):
    """Drops `model`'s traced serving and inference functions: a change of what its layers compute (Keras
    quantization, LoRA adapters) is traced afresh by the next `serve` or export."""
    _TRACED.pop(model, None)
    _INFERENCE.pop(model, None)


def inference_function(model, inputs, lone=False):
    """`model(inputs, training=False)` as one tf.function per model and structure of `inputs` (names,
    dtypes, ranks and inner sizes; batch and sequence sizes left open), traced once and kept out of the
    graphs that call it (`_noinline`): every endpoint and every length bucket of an export calls this one
    function, so the SavedModel holds the model's graph (and a bf16 form's weight constants) once and the
    runtime builds its kernels (and oneDNN's reordered weights) once, not once per bucket and signature.
    `lone`: the function for a batch of one row, a second one only where the blocks gather real rows
    (float32: there a lone row runs on its padded rows, `real_rows(gather=False)`); the variables are
    shared."""
    lone = lone and gathers_real_rows(model)
    spec = {name: tf.TensorSpec([None, *value.shape[1:-1], None] if value.shape.rank > 1 else [None],
                                value.dtype, name=name)
            for name, value in sorted(inputs.items())}
    key = (lone, *((name, s.dtype.name, tuple(s.shape.as_list())) for name, s in spec.items()))
    functions = _INFERENCE.setdefault(model, {})
    if key not in functions:
        # One concrete function: a tf.function called from the graphs of different endpoints retraces.
        # Traced with `real_rows`: the blocks' matmuls run on the real tokens only (a lone row: padded).
        with real_rows(gather=not lone):
            functions[key] = tf.function(lambda x: model(x, training=False), input_signature=[spec],
                                         autograph=False, experimental_attributes={"_noinline": True}
                                         ).get_concrete_function()
    return functions[key]


class Serving:
    """Mixin of the models' serving contract; see the module docstring. Hooks a model class overrides:

    serving_forms: raw-input forms, the default first ("text", "text_pair", "question_context").
    serving_calibration: whether int8 calibration can run the model on single texts.
    named_outputs(inputs): token-id inputs -> the model's named outputs (any float dtype).
    answer_outputs(inputs, outputs, options): outputs plus answers read off them.
    whole_text_outputs(preprocessor, texts, options): answers needing the whole text, or None.
    options_class: the serving Options dataclass (`keras_bert.models.options`).
    check_serving(form, preprocessor, options): raises ValueError where an option does not fit the form.
    form_endpoint(form, preprocessor, options): the Endpoint of a raw-input form.
    """

    serving_forms = ("text", "text_pair")
    serving_calibration = True
    options_class = Options

    # ----------------------------------------------------------------------------------- hooks
    def token_id_spec(self):
        """{name: tf.TensorSpec} of the token-id endpoint: int32 [batch, seq] each."""
        return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}

    def token_id_warmup(self, length):
        """Numpy inputs of a token-id warmup request (a batch of 2 of `length` tokens)."""
        shape = [2, length]
        return {"input_word_ids": np.zeros(shape, np.int32), "input_mask": np.ones(shape, np.int32),
                "input_type_ids": np.zeros(shape, np.int32)}

    def token_id_features(self, seq_length):
        """tf.io parsing spec of the int64 token-id features of one example."""
        return {name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in INPUT_NAMES}

    def named_outputs(self, inputs):
        raise NotImplementedError

    def answer_outputs(self, inputs, outputs, options):
        del inputs, options
        return outputs

    def whole_text_outputs(self, preprocessor, texts, options):
        del preprocessor, texts, options
        return None

    def check_serving(self, form, preprocessor, options):
        del form, preprocessor, options

    def text_spec(self, form):
        return text_spec(form)

    def form_endpoint(self, form, preprocessor, options):
        """The raw-text Endpoint of `form` ("text" or "text_pair"): packed with the model's own
        `text_inputs`, or answered over the whole text when `whole_text_outputs` says so."""
        spec = self.text_spec(form)

        def function(texts):
            texts = checked_inputs(texts, spec)
            whole = self.whole_text_outputs(preprocessor, texts, options)
            if whole is not None:
                return whole
            # The packer's own output needs no input check; rows run in length buckets (models/buckets.py).
            inputs = self.text_inputs(texts, preprocessor)
            batch = next(iter(texts.values())).shape[0]
            if batch is not None:  # a trace of a fixed batch (`serve` of one row): a row per example
                inputs = {name: tf.ensure_shape(value, [batch, *value.shape[1:]])
                          for name, value in inputs.items()}
            return model_outputs(self, inputs, preprocessor,
                                 lambda inputs: self.token_id_outputs(inputs, options))

        return Endpoint(function, spec, _example_features(spec), _text_warmup(spec))

    # ----------------------------------------------------------------------------------- generic
    def served_call(self, inputs):
        """The model in inference mode on encoder-input tensors (a dict), as the served graph runs it: one
        graph function shared by every endpoint and length bucket (`inference_function`)."""
        inputs = {name: tf.convert_to_tensor(value) for name, value in inputs.items()}
        if in_one_graph():
            return self(inputs, training=False)
        # A lone row's run is traced in `real_rows(gather=False)` (models/buckets.py).
        return inference_function(self, inputs, lone=served_layout() == "padded")(inputs)

    def serving_outputs(self, inputs):
        """The model (inference mode) on token-id tensors, outputs named for serving, every floating one
        float32 (a model computing in bfloat16 is served with float32 outputs)."""
        return {name: tf.cast(value, tf.float32) if value.dtype.is_floating else value
                for name, value in self.named_outputs(inputs).items()}

    def token_id_outputs(self, inputs, options=None):
        """`serving_outputs` plus the answers read off them: what the token-id endpoint returns."""
        return self.answer_outputs(inputs, self.serving_outputs(inputs), options or self.options_class())

    def serving_options(self, form, options=None):
        """`options` (an `options_class` instance, or {name: value}) as this model's Options; ValueError
        naming an option that is not this model's (`keras_bert.models.options.model_options`)."""
        return model_options(type(self).__name__, self.options_class, form, options or {})

    def default_form(self, preprocessor):
        """The serving_default input form: the first of `serving_forms`, token ids without preprocessor."""
        return self.serving_forms[0] if preprocessor is not None else TOKEN_IDS

    def serving_endpoints(self, preprocessor=None, form=None, options=None, example_seq_length=None):
        """{name: Endpoint}, serving_default first: `serve_<form>` (the raw-input form, default
        `default_form`) unless the form is "token_ids", then `serve_token_ids`. `example_seq_length`: the
        token-id length of tf.Example features without a preprocessor (None: no features).

        Raises ValueError naming what does not fit: the form, a missing preprocessor, an option.
        """
        form = form or self.default_form(preprocessor)
        options = self.serving_options(form, options)
        name = type(self).__name__
        if form != TOKEN_IDS:
            if form not in self.serving_forms:
                takes = " or ".join(f"signature={f!r}" for f in (*self.serving_forms, TOKEN_IDS))
                raise ValueError(f"signature={form!r} needs a {_owners(form)}, got a {name}: a {name} takes "
                                 f"{takes}")
            if preprocessor is None:
                raise ValueError(f"signature={form!r} takes raw text and needs a preprocessor "
                                 "(BertPreprocessor); pass one, or use signature='token_ids'")
        self.check_serving(form, preprocessor, options)
        given = preprocessor
        if preprocessor is not None and not options.fixed_length:
            preprocessor = preprocessor.padding_to_longest(LENGTH_MULTIPLE)
        endpoints = {}
        if form != TOKEN_IDS:
            endpoints[f"serve_{form}"] = self.form_endpoint(form, preprocessor, options)
        spec = self.token_id_spec()
        seq_length = preprocessor.seq_length if preprocessor is not None else example_seq_length
        endpoints["serve_token_ids"] = Endpoint(
            lambda inputs: self.token_id_outputs(checked_inputs(inputs, spec), options), spec,
            self.token_id_features(seq_length) if seq_length else None,
            self.token_id_warmup(preprocessor.seq_length if preprocessor is not None else 8))
        # One trace per model, endpoint, form, options and preprocessor (kept alive in the key with its id).
        key = (form, repr(options), id(given), given)
        return {name: dataclasses.replace(endpoint, owner=self, key=(name, *key))
                for name, endpoint in endpoints.items()}

    def serve(self, inputs, preprocessor=None, signature=None, **options):
        """Raw inputs -> finished answers, the function `serving_default` of an export with the same
        arguments runs (`keras_bert.export.export_saved_model`).

        Args:
            inputs: dict of arrays (lists of str, numpy, tensors) named as the serving signature's inputs:
                {"text": [...]} (+ "text_b"), {"question": [...], "context": [...]}, or token ids.
            preprocessor: a `keras_bert.text.BertPreprocessor` (default: the model's own).
            signature: the input form, one of the model's `serving_forms` or "token_ids" (default: the
                model's first form, e.g. "question_context"; "token_ids" without a preprocessor).
            **options: fields of the model's `options_class` (e.g. a classifier's long_text, stride; an
                encoder's pooling, normalize; fixed_length for every model).

        Returns:
            A dict {output name: numpy array, one row per input}: the served outputs (e.g. a
            classifier's `label` (bytes) and `probabilities` (float32), a span labeler's `answer`, a
            tagger's `entity_text`, an encoder's `sentence_embedding` with `pooling=`).

        Raises:
            ValueError: naming the input at fault and its declared dtype and shape (`served_arrays`): an
                unknown or missing key, one string instead of a batch, values of another type, a wrong
                shape or batch size (the same line as the exported signature's InvalidArgument,
                `checked_inputs`); a `signature` this model does not take, a raw-text signature without a
                preprocessor, an option that is not the model's or does not apply to the signature.
        """
        preprocessor = preprocessor or getattr(self, "preprocessor", None)
        key = (signature, tuple(sorted(options.items())), id(preprocessor))
        traced = _TRACED.setdefault(self, {})
        if key not in traced:  # the preprocessor kept alive with its id
            endpoint = next(iter(self.serving_endpoints(preprocessor, signature, options).values()))
            traced[key] = (endpoint, {}, self._one_row_serving(endpoint), preprocessor)
        endpoint, functions, runs_one_row_apart, _ = traced[key]
        arrays = served_arrays(inputs, endpoint.input_spec)
        # One row, where the served graph runs it apart from a batch (`_one_row_serving`): a trace of one
        # row, so a first single request traces the model once, not its batch branch as well.
        one_row = runs_one_row_apart and all(value.shape[0] == 1 for value in arrays.values())
        # A function's first run optimizes its graph: grappler's and oneDNN's C++ lines (native_logs.py).
        first = one_row not in functions
        with native_logs.quiet(first):
            if first:
                with compat.save_tracing():
                    # The export's trace (called outside the save context it was traced in), or the same
                    # function traced for one row.
                    function = (traced_function(endpoint.function, _one_row_spec(endpoint.input_spec))
                                if one_row else endpoint.traced())
                    functions[one_row] = function.get_concrete_function()
            outputs = functions[one_row](arrays)
            return {name: value.numpy() for name, value in outputs.items()}

    def _one_row_serving(self, endpoint):
        """Whether `endpoint` (of `serving_endpoints`) runs a lone row on a graph of its own: raw-text
        endpoints of a model whose blocks gather real rows (`models/buckets.py`, `model_outputs`)."""
        return "input_word_ids" not in endpoint.input_spec and gathers_real_rows(self)
