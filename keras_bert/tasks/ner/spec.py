"""What the token classification task declares to shared code (`keras_bert.tasks.registry`): its serving
Options, its distinctive names and its transformers head (no KerasHub task preset)."""

import dataclasses

from keras_bert.checkpoints.heads import HuggingFaceHead
from keras_bert.models import options
from keras_bert.tasks.ner.served import ENTITY_OUTPUTS
from keras_bert.tasks.task_spec import TaskSpec
from keras_bert.text.windows import window_stride

# word_start / word_end are also the word splitter's terms (keras_bert/text): not this task's alone.
WORD_OUTPUTS = ("word_tag", "word_tag_id", "word_logits", "word_count")


@dataclasses.dataclass(frozen=True)
class Options(options.Options):
    """A token classifier's serving options.

    Attributes:
        stride: pieces between window starts over texts longer than a window; default half a window.
        word_tags: the `text` endpoint also returns the tag of every word (at its first piece) with its
            logits and character offsets (what conlleval's prediction file lists).
    """

    stride: int | None = options.option(
        None, "Pieces between windows (--long_text=windows, token classifiers); default: half of "
        "--max_seq_length - 2.", "a token classifier with labels")
    word_tags: bool = options.option(
        False, "Token classifier: also serve every word's tag (word_tag, word_tag_id, word_logits, "
        "word_start, word_end, word_count), as run_ner's prediction file.",
        "a token classifier with labels served on 'text'")

    def window_stride(self, seq_length):
        """The stride in pieces for windows of `seq_length - 2` pieces; ValueError if it does not fit."""
        return window_stride(self.stride, seq_length)


SPEC = TaskSpec(kind="token_classifier", names=("BertTokenClassifier", "token_classifier", "word_tags",
                                                *ENTITY_OUTPUTS, *WORD_OUTPUTS),
                options=Options,
                # Built without the pooler; transformers' state-dict prefix is "classifier" (a foreign key).
                huggingface=HuggingFaceHead(architecture="BertForTokenClassification",
                                            layer="token_classifier", prefix="classifier", pooler=False,
                                            labelled=True))
