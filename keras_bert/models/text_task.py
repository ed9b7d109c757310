"""Raw text into `fit` / `evaluate` / `predict`: a model that owns its preprocessing.

A model built with `preprocessor=` (a `keras_bert.text.BertPreprocessor`: the vocab, casing and sequence
length it was trained with) takes raw strings wherever Keras takes data:

    clf.fit(x=texts, y=labels)                  # list / numpy of str; labels str (names) or int (ids)
    clf.fit(x=(texts_a, texts_b), y=labels)     # sentence pairs: a tuple of two sequences
    clf.predict(["some text"])                  # logits, as Keras returns them
    clf.fit(tf.data.Dataset of (text, label))   # batched or not

The strings are tokenized and packed in a parallel `tf.data` map (never inside the compiled step: XLA
cannot compile tf-text's ragged ops), so the step is the one token-id batches run. Token-id dicts, and
datasets of them, pass through untouched.

Each batch of text pays for its tokens, not for the preprocessor's seq_length: it is cut to its longest
text rounded up to 16 (`keras_bert.data.padding.default_multiple`: at most 8 lengths, so at most 8
compiled steps), and `fit` sorts shuffled texts by length within windows of 16 batches, so a batch holds
texts of similar length. `pad_to_multiple_of=` (a keyword of fit / evaluate / predict) sets the multiple;
0 pads to seq_length as the preprocessor does. Models with per-token outputs (tagging, spans) keep
seq_length, the length their targets and outputs have.

The preprocessor and the label names are part of the model's config, so a `.keras` file carries them.
"""

import sys

import keras
import numpy as np
import tensorflow as tf

from keras_bert import compat, native_logs
from keras_bert.data import features, padding
from keras_bert.data.options import steady
from keras_bert.models import serving, user_data
from keras_bert.models.user_data import DEFAULT_BATCH_SIZE


def resolve_num_classes(owner, num_classes, labels):
    """`num_classes`, or len(labels) when it is None; ValueError naming `owner` when neither is given or
    they disagree."""
    if labels is not None and len(labels) < 2:
        raise ValueError(f"{owner}: labels={list(labels)}: a classifier needs at least two labels (one class "
                         "would have a loss of 0 whatever it predicts)")
    if num_classes is None:
        if labels is None:
            raise ValueError(f"{owner} needs num_classes or labels")
        return len(labels)
    if labels is not None and len(labels) != num_classes:
        raise ValueError(f"{owner}: num_classes={num_classes} but {len(labels)} labels: {list(labels)}")
    return num_classes


class TextTask:
    """Mixin of the keras_bert models that can own a preprocessor and label names.

    A subclass sets `self.preprocessor` (BertPreprocessor or None) and `self.labels` (list of str or None)
    in its constructor (`_init_text`), and may override `text_inputs(texts)` (multiple choice packs one pair
    per choice) and `task_loss()` / `_default_metrics()`.
    """

    def set_preprocessor(self, preprocessor):
        """Gives the model `preprocessor` (a `BertPreprocessor`, or None: token ids only) after it was
        built: a quantized model, whose layer tracker Keras locks, takes one too (a plain assignment to
        `model.preprocessor` works on the others)."""
        with compat.tracking_unlocked(self):
            self.preprocessor = preprocessor

    # ----------------------------------------------------------------------------------- config
    def _init_text(self, preprocessor=None, labels=None):
        """Sets `preprocessor` and `labels` (called by the constructors after the functional build;
        `from_config` has deserialized the preprocessor already, `_text_from_config`)."""
        self.preprocessor = preprocessor
        self.labels = None if labels is None else [str(label) for label in labels]
        if self.labels is not None and len(set(self.labels)) != len(self.labels):
            raise ValueError(f"labels must be distinct, got {self.labels}")

    def _text_config(self):
        config = {}
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        if self.labels is not None:
            config["labels"] = list(self.labels)
        return config

    @staticmethod
    def _text_from_config(config):
        if config.get("preprocessor") is not None:
            config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
        return config

    # ----------------------------------------------------------------------------------- preprocessing
    def text_inputs(self, texts, preprocessor=None):
        """{"text": tf.string [b], "text_b": [b] (or [b, choices] for multiple choice)} -> the encoder input
        dict (int32 [b, seq], or [b, choices, seq]), with `preprocessor` (default: the model's own). The
        same function serves exports (`keras_bert.data.features.text_inputs`)."""
        return features.text_inputs(preprocessor or self._require_preprocessor(), texts)

    def _require_preprocessor(self):
        if self.preprocessor is None:
            raise ValueError(f"{type(self).__name__} {self.name!r} has no preprocessor: pass token-id dicts "
                             "(input_word_ids, input_mask, input_type_ids), or build the model with "
                             "preprocessor=BertPreprocessor(...) (or from_pretrained) to give it raw text")
        return self.preprocessor

    def label_ids(self, y):
        """Labels as the model's targets: names of `self.labels` -> int ids (numpy); ids are range-checked.
        Raises ValueError naming the first unknown label and its index."""
        y = np.asarray(y)
        if y.dtype.kind in "USO":
            if not self.labels:
                raise ValueError(f"labels are strings (first: {y.flat[0]!r}) but {type(self).__name__} has "
                                 "no label names: build it with labels=[...]")
            return features.label_ids(y.ravel(), self.labels, owner="the model's").reshape(y.shape)
        num_classes = self.target_classes()
        if num_classes and num_classes > 1 and y.dtype.kind in "iuf" and y.size:
            return user_data.class_ids(y, num_classes)
        return y

    def target_classes(self):
        """How many classes an integer target ranges over (None: not class ids); a task whose targets
        index something else (choices) says so."""
        return getattr(self, "num_classes", None)

    def _label_table(self):
        """tf.lookup table name -> id for string labels inside a tf.data map (unknown names -> -1)."""
        names = tf.constant(list(self.labels or []), tf.string)
        return tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(names, tf.range(tf.size(names), dtype=tf.int32)), -1)

    def _targets_in_graph(self, y, table):
        if y.dtype != tf.string:
            return y
        ids = table.lookup(y)
        unknown = tf.boolean_mask(y, ids < 0)
        check = tf.debugging.Assert(tf.size(unknown) == 0, [
            f"unknown label (labels: {', '.join(self.labels)}); first unknown value:", unknown[:1]])
        with tf.control_dependencies([check]):
            return tf.identity(ids)

    def text_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False, seed=None,
                     pad_to_multiple_of="auto", group=False):
        """A batched, preprocessed `tf.data.Dataset` of (inputs[, targets[, sample_weight]]) from raw text
        `x`, or None when `x` is not text. `x` is a tf.data.Dataset of text elements, or what
        `user_data.text_features` accepts. Text for a model without a preprocessor is a ValueError saying
        so. The
        batches are `keras_bert.data.features.text_dataset`'s, the recipes' path, with `text_inputs`, cut to
        their longest text rounded up to `pad_to_multiple_of` ("auto": `padding.default_multiple`; 0: to
        seq_length), shuffled ones (and, with `group`, unshuffled ones) grouped by length
        (`padding.group_by_length`)."""
        if isinstance(x, tf.data.Dataset):
            return self._text_dataset_of_dataset(x, batch_size, pad_to_multiple_of)
        texts = user_data.text_features(x)
        if texts is None:
            return None
        self._require_preprocessor()
        texts = {key: user_data.as_string_array(value) for key, value in texts.items()}
        num_examples = len(texts["text"])
        targets = []
        if y is not None:
            y = self.label_ids(y)
            if len(y) != num_examples:
                raise ValueError(f"{num_examples} texts but {len(y)} labels")
            targets.append(y)
        if sample_weight is not None:
            targets.append(np.asarray(sample_weight))
        return features.text_dataset(texts, self.text_inputs, targets, batch_size or DEFAULT_BATCH_SIZE,
                                     shuffle, seed, self._text_multiple(pad_to_multiple_of), group)

    def _text_multiple(self, pad_to_multiple_of):
        """The multiple text batches are cut to: `pad_to_multiple_of` resolved for the preprocessor's
        seq_length, or 0 for a model with per-token outputs (their targets and outputs keep seq_length)."""
        multiple = padding.resolve_multiple(pad_to_multiple_of, self._require_preprocessor().seq_length)
        per_token = any(None in tuple(output.shape[1:]) for output in keras.tree.flatten(self.outputs))
        return 0 if per_token else multiple

    def _text_dataset_of_dataset(self, dataset, batch_size, pad_to_multiple_of):
        spec = dataset.element_spec
        first = spec[0] if isinstance(spec, tuple) else spec
        if not user_data.spec_is_text(first):
            return None
        self._require_preprocessor()
        text_spec = user_data.element_text(first)["text"]
        if text_spec.shape.rank == 0:  # unbatched examples: batch them as Keras would
            dataset = dataset.batch(batch_size or DEFAULT_BATCH_SIZE)
        return self._preprocessed(dataset, self._text_multiple(pad_to_multiple_of))

    def _preprocessed(self, dataset, pad_to_multiple_of):
        table = self._label_table() if self.labels else None

        def preprocess(*element):
            if len(element) == 1:
                return self.text_inputs(user_data.element_text(element[0]))
            inputs = self.text_inputs(user_data.element_text(element[0]))
            targets = self._targets_in_graph(element[1], table) if table is not None else element[1]
            return (inputs, targets, *element[2:])

        return features.featurized(dataset, preprocess, pad_to_multiple_of)

    # ----------------------------------------------------------------------------------- Keras entry points
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None, sample_weight=None,
            initial_epoch=0, steps_per_epoch=None, pad_to_multiple_of="auto", **kwargs):
        """Trains the model: `keras.Model.fit`, also on raw text when the model has a preprocessor.

        Args:
            x: raw text (a list / numpy array of str, a tuple (texts_a, texts_b) of sentence pairs, a dict
                {"text": ..., "text_b": ...}, or a `tf.data.Dataset` of such elements, with labels, batched
                or not), or what Keras takes (token-id dicts of int32 [batch, seq], datasets of them).
            y: the targets: label names (str, of the model's `labels`) or int class ids for raw text and
                arrays; None when `x` is a dataset that holds them.
            batch_size: rows per step (default 32 for raw text and arrays).
            epochs: passes over the data (default 1).
            verbose: "auto" (default): 1 (Keras' progress bar) where stdout is a terminal, else 2 (one
                line per epoch); 0 silent.
            callbacks: Keras callbacks.
            validation_split: Keras' split of array inputs; not for raw text (pass `validation_data`).
            validation_data: (texts, labels), a dataset, or what Keras takes; raw text is preprocessed
                as `x` is.
            shuffle: shuffle raw text and arrays every epoch (default True); texts are then grouped by
                length within windows of 16 batches. A dataset is used in its own order.
            class_weight: {class id: weight} for array inputs (Keras').
            sample_weight: per-example weights, numpy [n] (or [n, seq] for per-token tasks).
            initial_epoch: epoch to start from (resuming).
            steps_per_epoch: steps per epoch (default: the whole data; needed for the default optimizer's
                warmup + decay schedule when `x` has no known length).
            pad_to_multiple_of: "auto" (default): each text batch is cut to its longest text rounded up to
                16; an int sets the multiple; 0 pads to the preprocessor's seq_length.
            **kwargs: the other arguments of `keras.Model.fit` (`validation_batch_size`, ...).

        Returns:
            The `keras.callbacks.History` of the run (`history.history`: {metric name: [one value per
            epoch]}).

        Raises:
            ValueError: `x` holds no examples; raw text for a model without a preprocessor; string labels
                for a model without `labels`, a label name not among them (naming it and its index), an
                int label outside [0, num_classes); a different number of texts and labels;
                `validation_split` with raw text.
        """
        user_data.refuse_no_examples(x, "fit")
        validation_batch_size = kwargs.get("validation_batch_size") or batch_size  # as Keras batches it
        data = self.text_dataset(x, y, sample_weight, batch_size, shuffle=shuffle,
                                 pad_to_multiple_of=pad_to_multiple_of)
        if data is not None:
            if validation_split:
                raise ValueError("validation_split is not supported with raw text: pass validation_data")
            x, y, sample_weight, batch_size, shuffle = data, None, None, None, False  # shuffled in `data`
        elif not validation_split:
            arrays = user_data.array_dataset(x, y, sample_weight, batch_size, shuffle, class_weight,
                                             steps_per_epoch)
            if arrays is not None:  # class weights are sample weights in it
                x, y, sample_weight, batch_size, shuffle, class_weight = arrays, None, None, None, False, None
        if validation_data is not None:
            # An evaluation: grouped by length as `evaluate`'s, unless `validation_steps` asks for the first
            # batches.
            validation_data = steady(self._validation_dataset(
                validation_data, validation_batch_size, pad_to_multiple_of,
                group=kwargs.get("validation_steps") is None) or validation_data)
        # datasets only (keras_bert.data.options: no autotune stall when Keras drops the iterator)
        x = steady(x)
        if isinstance(x, (tf.data.Dataset, tf.distribute.DistributedDataset)):
            shuffle = False  # Keras ignores it for datasets (and warns): a dataset comes shuffled or not
        self._schedule_default_optimizer(x, batch_size, epochs, steps_per_epoch, initial_epoch)
        if data is not None and hasattr(self, "choose_for_run"):  # text: at most `shapes` batch lengths
            steps = steps_per_epoch or user_data.steps_per_epoch(x, batch_size)
            shapes = len(padding.batch_lengths(self.preprocessor.seq_length,
                                               self._text_multiple(pad_to_multiple_of)))
            if steps:
                self.choose_for_run(int(steps) * max(1, epochs - initial_epoch), shapes)
        return super().fit(x=x, y=y, batch_size=batch_size, epochs=epochs, verbose=fit_verbosity(verbose),
                           callbacks=callbacks, validation_split=validation_split,
                           validation_data=validation_data, shuffle=shuffle, class_weight=class_weight,
                           sample_weight=sample_weight, initial_epoch=initial_epoch,
                           steps_per_epoch=steps_per_epoch, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 pad_to_multiple_of="auto", **kwargs):
        """Scores the model on labelled data: `keras.Model.evaluate`, also on raw text.

        Args:
            x: raw text (as `fit` takes it: a list of str, a tuple (texts_a, texts_b), a dict of texts, a
                `tf.data.Dataset` of (text, label)), or token-id dicts / datasets as Keras takes them.
            y: the targets: label names or int class ids; None when `x` is a dataset that holds them.
            batch_size: rows per step (default 32 for raw text and arrays).
            verbose: Keras' verbosity ("auto", 0, 1 or 2).
            sample_weight: per-example weights, numpy [n].
            steps: batches to run (default: all of `x`).
            pad_to_multiple_of: "auto" (default): each text batch cut to its longest text rounded up to 16;
                an int sets the multiple; 0 pads to the preprocessor's seq_length. Without `steps`, raw
                texts of similar length are batched together (windows of 16 batches sorted by length):
                every text once, the same scores, fewer padded positions to compute.
            **kwargs: the other arguments of `keras.Model.evaluate` (`return_dict`, `callbacks`, ...).

        Returns:
            The loss (a float) when the model has no metrics, else [loss, *metrics] floats, or
            {name: float} with `return_dict=True`.

        Raises:
            ValueError: `x` holds no examples; raw text for a model without a preprocessor; an unknown
                label name or a class id outside [0, num_classes); a different number of texts and labels.
        """
        user_data.refuse_no_examples(x, "evaluate")
        # Every example once, in any order (the metrics are sums): texts of similar length batched together,
        # unless `steps` asks for the first batches.
        data = self.text_dataset(x, y, sample_weight, batch_size, pad_to_multiple_of=pad_to_multiple_of,
                                 group=steps is None)
        if data is None:
            data = user_data.array_dataset(x, y, sample_weight, batch_size, steps=steps)
        if data is not None:
            x, y, sample_weight, batch_size = data, None, None, None
        return super().evaluate(x=steady(x), y=y, batch_size=batch_size, verbose=verbose,
                                sample_weight=sample_weight, steps=steps, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None,
                pad_to_multiple_of="auto", **kwargs):
        """The model's outputs on `x`: `keras.Model.predict`, also on raw text.

        Args:
            x: raw text (a list / numpy array of str, a tuple (texts_a, texts_b), a dict of texts, or a
                `tf.data.Dataset` of them), or token-id dicts of int32 [batch, seq] (datasets of them). An
                empty list gives the outputs of no rows.
            batch_size: rows per step (default 32 for raw text and arrays).
            verbose: Keras' verbosity ("auto", 0, 1 or 2).
            steps: batches to run (default: all of `x`).
            callbacks: Keras callbacks.
            pad_to_multiple_of: "auto" (default): each text batch cut to its longest text rounded up to 16;
                an int sets the multiple; 0 pads to the preprocessor's seq_length. Per-token outputs
                (tagging, spans) keep seq_length.
            **kwargs: the other arguments of `keras.Model.predict`.

        Returns:
            The raw outputs as numpy, one row per example: float32 logits for a task model (e.g.
            [n, num_classes] for `BertClassifier`, a dict `start_logits` / `end_logits` [n, seq] for
            `BertSpanLabeler`), the encoder's output dict for `BertEncoder`. Finished answers (label
            names, answer text, entities) come from `serve`.

        Raises:
            ValueError: raw text for a model without a preprocessor (pass token-id dicts, or build it with
                `preprocessor=`).
        """
        if user_data.no_examples(x):  # the outputs of one empty text, with no rows (as a served batch of 0)
            one = ({key: [""] for key in x} if isinstance(x, dict)
                   else ([""], [""]) if isinstance(x, tuple) else [""])
            return keras.tree.map_structure(lambda a: a[:0], self.predict(one, verbose=0))
        data = self.text_dataset(x, batch_size=batch_size, pad_to_multiple_of=pad_to_multiple_of)
        if data is None:
            data = user_data.array_dataset(x, batch_size=batch_size, steps=steps)
        if data is not None:
            x, batch_size = data, None
        # The first run of the predict function: oneDNN's C++ notice (keras_bert/native_logs.py).
        with native_logs.quiet(self.predict_function is None):
            return super().predict(steady(x), batch_size=batch_size, verbose=verbose, steps=steps,
                                   callbacks=callbacks, **kwargs)

    def _validation_dataset(self, validation_data, batch_size, pad_to_multiple_of, group=False):
        """`validation_data` as a preprocessed dataset when it is raw text (texts and labels grouped by
        length with `group`, as `text_dataset`), else None."""
        if isinstance(validation_data, tf.data.Dataset):
            return self.text_dataset(validation_data, batch_size=batch_size,
                                     pad_to_multiple_of=pad_to_multiple_of)
        if not isinstance(validation_data, (tuple, list)):
            return None  # e.g. a distributed dataset: passed to Keras as it is
        return (self.text_dataset(*validation_data, batch_size=batch_size,
                                  pad_to_multiple_of=pad_to_multiple_of, group=group)
                or user_data.array_dataset(*validation_data, batch_size=batch_size))

    def save(self, filepath, *args, **kwargs):
        """`keras.Model.save`; a compiled model's optimizer is built first, so the file holds the variables
        that `keras.saving.load_model`'s compile creates (else Keras skips loading them, with a warning).

        The `.keras` file holds the preprocessor (vocab, casing, seq_length) and the label names;
        `keras.saving.load_model(filepath)` or `from_pretrained(filepath)` loads the model back.

        Args:
            filepath: the `.keras` file to write (str or pathlib.Path).
            *args: `keras.Model.save`'s other arguments (`overwrite=True`, `zipped`).
            **kwargs: `keras.Model.save`'s keyword arguments.

        Returns:
            None.
        """
        optimizer = getattr(self, "optimizer", None)
        if optimizer is not None and not optimizer.built:
            optimizer.build(self.trainable_variables)
        return super().save(filepath, *args, **kwargs)

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """`keras.Model.quantize`; a compiled model is compiled again as it was (a fresh optimizer: the old
        one's slots belonged to the float kernels), as `keras.saving.load_model` compiles its save. Without
        `filters`, the layers that quantize (Keras warns of each other one: LayerNorm, dropout, inputs).

        Args:
            mode: Keras' quantization mode, e.g. "int8" (int8 weights with per-channel scales), "int4" or
                "float8"; optional when `config` is given.
            config: a `keras.quantizers.QuantizationConfig` instead of `mode`'s defaults.
            filters: which layers quantize (a regex, a list of them, or a callable on the layer);
                default: every layer that implements quantization (Dense, EinsumDense, Embedding).
            **kwargs: `keras.Model.quantize`'s other arguments.

        Raises:
            ValueError: from Keras, for an unknown `mode`, or a model quantized already or not built.
        """
        if filters is None:
            filters = _quantizes
        super().quantize(mode, config=config, filters=filters, **kwargs)
        serving.forget_traces(self)
        if getattr(self, "optimizer", None) is not None and self.optimizer.built:
            self.compile_from_config(self.get_compile_config())

def _quantizes(layer):
    return type(layer).quantize is not keras.layers.Layer.quantize


def fit_verbosity(verbose):
    """`fit`'s `verbose`: "auto" is 1 (the live progress bar) where stdout is a terminal, else 2 (one line per
    epoch): Keras' bar rewrites its line with ANSI codes on any POSIX system, which a log file keeps raw."""
    if verbose != "auto":
        return verbose
    isatty = getattr(sys.stdout, "isatty", None)
    return 1 if isatty is not None and isatty() else 2
