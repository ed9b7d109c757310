"""SQuAD windows as model inputs: the words of every example through the tokenizer in a few large batches
(`keras_bert.data.features.WordPieceLookup`), the windows of `reader.make_squad_features`, and their int32
arrays with the span labeler's start / end targets."""

import numpy as np

from keras_bert.data.features import empty_inputs
from keras_bert.tasks.squad import reader as squad


def squad_features(examples, lookup, max_seq_length, doc_stride, max_query_length, is_training):
    """All windows of `examples` (`SquadFeature`s, see `keras_bert.tasks.squad.reader.make_squad_features`).

    The words of every context and question go through the tokenizer in a few large batches first.
    """
    strings = []
    for example in examples:
        strings.extend(example.doc_tokens)
        strings.append(example.question_text)
        if example.answer_text:
            strings.append(example.answer_text)
    lookup.ids(strings)
    features = []
    for index, example in enumerate(examples):
        features.extend(squad.make_squad_features(
            example, index, lookup, max_seq_length=max_seq_length, doc_stride=doc_stride,
            max_query_length=max_query_length, is_training=is_training,
            cls_token=lookup.tokenizer.id_to_token(lookup.tokenizer.cls_id),
            sep_token=lookup.tokenizer.id_to_token(lookup.tokenizer.sep_id)))
    return features


def squad_arrays(features, lookup, max_seq_length):
    """`SquadFeature`s -> (inputs, targets): inputs a dict of int32 [n, max_seq_length]; targets a dict
    `start_logits`, `end_logits` of int32 [n] positions (0 = [CLS] for windows without the answer), keyed
    like the outputs of `BertSpanLabeler`."""
    inputs = empty_inputs(len(features), max_seq_length)
    for row, feature in enumerate(features):
        length = len(feature.tokens)
        if length > max_seq_length:
            raise ValueError(f"feature {row} has {length} tokens > max_seq_length={max_seq_length}")
        inputs["input_word_ids"][row, :length] = lookup.token_ids(feature.tokens)
        inputs["input_mask"][row, :length] = 1
        inputs["input_type_ids"][row, :length] = feature.segment_ids
    targets = {"start_logits": np.asarray([f.start_position for f in features], np.int32),
               "end_logits": np.asarray([f.end_position for f in features], np.int32)}
    return inputs, targets
