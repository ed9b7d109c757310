"""What the classification task declares to shared code (`keras_bert.tasks.registry`): its serving Options,
its distinctive names, and its heads in transformers' and KerasHub's formats (interop.py)."""

import dataclasses

from keras_bert.models import options
from keras_bert.tasks.classification import interop
from keras_bert.tasks.task_spec import TaskSpec
from keras_bert.text.windows import window_stride

LONG_TEXT = ("truncate", "windows")


@dataclasses.dataclass(frozen=True)
class Options(options.Options):
    """A classifier's serving options.

    Attributes:
        long_text: texts over the sequence length: "truncate" (cut, as in training) or "windows" (the
            logits of strided windows averaged; single texts).
        stride: pieces between window starts; default half a window.
    """

    long_text: str = options.option(
        "truncate", "Classifier texts over --max_seq_length: truncate, or average the logits of strided "
        "windows.", "a classifier served on single texts (signature 'text')", LONG_TEXT)
    stride: int | None = options.option(
        None, "Pieces between windows (--long_text=windows, token classifiers); default: half of "
        "--max_seq_length - 2.", "a classifier with long_text='windows'")

    def __post_init__(self):
        options.check_choice("long_text", self.long_text, LONG_TEXT)

    def window_stride(self, seq_length):
        """The stride in pieces for windows of `seq_length - 2` pieces; ValueError if it does not fit."""
        return window_stride(self.stride, seq_length)


SPEC = TaskSpec(kind="classifier", names=("BertClassifier", "classifier", "long_text"), options=Options,
                huggingface=interop.HUGGINGFACE, keras_hub=interop.KERAS_HUB)
